"""Render b_eff_io's summary (beff.io.record.summarize): rich tables shaped like the
original's ``.sum``, the same as text (``--format imb``), and the final line verbatim."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.console import Console

from beff.bench.view import ImbView, io_header
from beff.io import plan
from beff.io.record import BeffIORecord, BeffIOSummary, PartitionFigures, summarize
from beff.io.reduce import ACCESSES, TYPES
from beff.render.charts import Chart, Series
from beff.render.tables import Table
from beff.results.model import RunRecord, StoredSummary

MIB = 1 << 20
TYPE_HEADS = ("scatter", "shared", "separate", "segmened", "seg-coll")  # the original's
ROWS = tuple(plan.row_key(c) for c in plan.ROW_CHUNKS)


def _cell(v: float | None) -> str:
    return "-" if v is None else f"{v:,.3f}"


def _label(summary: BeffIOSummary) -> str:
    return "b_eff_io QUICK (a first look, not comparable)" if summary.mode == "quick" \
        else "b_eff_io"


def render(summary: BeffIOSummary, console: Console) -> None:
    """Rich tables per partition, then the maximum and the original's final line."""
    console.print(f"[bold]{_label(summary)}[/bold] on {summary.nprocs} processes, "
                  f"partitions {', '.join(map(str, summary.partitions))}")
    console.print(
        f"memory per process {summary.memory_per_proc_bytes / MIB:,.0f} MiB "
        f"({summary.memory_per_proc_source}), Lmax {summary.lmax_bytes / MIB:,.3f} MiB, "
        f"total memory {summary.total_memory_bytes / MIB:,.0f} MiB "
        f"({summary.total_memory_source})")
    console.print(
        f"scheduled time T = {summary.scheduled_time_s:g} s "
        f"({summary.scheduled_time_per_partition_s:g} s per partition; comparable results "
        f"need {summary.validity_time_s / 60:.0f} min per partition)"
        + (", rewrite of all types" if summary.rewrite_all else ""))
    for part in summary.per_partition:
        _partition(part, summary, console)
    if summary.failure:
        console.print(f"[bold red]run ended early:[/bold red] {summary.failure}")
    console.print()
    console.print(summary.final_line, markup=False, highlight=False, soft_wrap=True)


def _partition(part: PartitionFigures, summary: BeffIOSummary, console: Console) -> None:
    n = part.nprocs
    if not part.measured:
        console.print(f"{n} process{'es' if n != 1 else ''}: not measured")
        return
    t = Table(title=f"{_label(summary)}: {n} process{'es' if n != 1 else ''} [MB/s, 10^6 B/s]",
              show_edge=False)
    t.add_column("chunk l [B]", justify="right")
    t.add_column("access")
    for name in TYPE_HEADS:
        t.add_column(name, justify="right", no_wrap=True, min_width=9)
    lmax = f"{summary.lmax_bytes:,}"
    for access in ACCESSES:
        cells = part.patterns_MBps[access]
        for row in ROWS:
            key = row
            t.add_row(lmax if row == "Lmax" else f"{int(row):,}", access,
                      *(_cell(cells.get(tn, {}).get(key)) if tn in cells else "-"
                        for tn in TYPES))
        totals = part.type_MBps[access]
        t.add_row("total", access, *(_cell(totals.get(tn)) for tn in TYPES),
                  end_section=True, style="bold")
    console.print(t)
    pat2 = [part.patterns_MBps[a].get("scatter", {}).get("2MiB_per_call") for a in ACCESSES]
    console.print("scatter with l = 1 MiB, L = 2 MiB (not in the table): "
                  + ", ".join(f"{_cell(v)} {a}" for v, a in zip(pat2, ACCESSES, strict=True)))
    if not part.complete:
        console.print("[yellow]this partition did not complete[/yellow]")
        return
    for access in ACCESSES:
        console.print(f"weighted average bandwidth for {access:<7} : "
                      f"{getattr(part, f'{access}_MBps'):,.3f} MB/s (type 0 weighted double)")
    pct = part.percent_of_total_memory
    console.print(f"data per access method: {part.bytes_per_access / MIB:,.3f} MiB"
                  + (f" = {pct:.1f} % of the total memory" if pct is not None else ""))
    console.print(f"[bold]b_eff_io of these measurements = {part.b_eff_io_MBps:,.3f} MB/s "
                  f"on {n} processes[/bold]")
    crit = part.criteria
    verdict = "VALID" if part.valid else "NOT VALID"
    console.print(f"{verdict} for comparison of different systems"
                  + ("" if part.valid else
                     f" (scheduled time >= 30 min per partition: "
                     f"{'yes' if crit['scheduled_time'] else 'no'}; shared file pointers: "
                     f"{'yes' if crit['shared_file_pointer'] else 'no'}; errors: "
                     f"{part.errors})"))
    if part.defects:
        console.print(f"[bold red]--check: {part.defects:,} doubles read back wrong"
                      "[/bold red]")


def sum_text(summary: BeffIOSummary) -> str:
    """The original's ``.sum`` layout: per partition the table and the figures, then the
    maximum and the final line."""
    out: list[str] = []
    mb = summary.memory_per_proc_bytes // MIB
    lmax = summary.lmax_bytes
    for part in summary.per_partition:
        n = part.nprocs
        out += [f"\nSummary of file I/O bandwidth accumulated on {n:3d} processes with "
                f"{mb:4d} MByte/PE",
                "-" * 77 + "\n",
                " number pos chunk-   access   type=0   type=1   type=2   type=3   type=4",
                " of PEs     size (l) methode scatter  shared  separate segmened seg-coll",
                "            [bytes]  methode  [MB/s]   [MB/s]   [MB/s]   [MB/s]   [MB/s]",
                " " + "-" * 71 + "\n"]
        for access in ACCESSES:
            cells = part.patterns_MBps[access]
            for pos, row in enumerate(ROWS, start=1):
                size = lmax if row == "Lmax" else int(row)
                vals = "".join(
                    f" {v:8.3f}" if (v := cells.get(tn, {}).get(row)) is not None
                    else "        -" for tn in TYPES)
                out.append(f"{n:4d} PEs {pos:1d} {size:8d} {access:<7}{vals}")
            totals = part.type_MBps[access]
            vals = "".join(f" {v:8.3f}" if (v := totals.get(tn)) is not None else "        -"
                           for tn in TYPES)
            out.append(f"{n:4d} PEs      total-{access:<7}{vals}\n")
        pat2 = [part.patterns_MBps[a].get("scatter", {}).get("2MiB_per_call")
                for a in ACCESSES]
        out.append("This table shows all results, except pattern 2 (scatter, l=1MBytes, "
                   "L=2MBytes): ")
        out.append("  bw_pat2= " + ", ".join(
            f"{v:8.3f} MB/s {a}" if v is not None else f"       - MB/s {a}"
            for v, a in zip(pat2, ACCESSES, strict=True)) + "\n")
        if part.complete:
            for access in ACCESSES:
                out.append(f"weighted average bandwidth for {access:<7} : "
                           f"{getattr(part, f'{access}_MBps'):8.3f} MB/s on {n} processes")
            out.append("(type=0 is weighted double)")
            out.append("\nTotal amount of data written/read with each access method: "
                       f"{part.bytes_per_access / MIB:8.3f} MBytes")
            if part.percent_of_total_memory is not None:
                out.append(f"  = {part.percent_of_total_memory:4.1f} percent of the total "
                           f"memory ({summary.total_memory_bytes // MIB} MBytes)")
            out.append(f"\nb_eff_io of these measurements = {part.b_eff_io_MBps:8.3f} MB/s "
                       f"on {n} processes with {mb:3d} MByte/PE and scheduled time="
                       f"{summary.scheduled_time_per_partition_s / 60:3.1f} min\n")
            out.append(f"{'VALID' if part.valid else 'NOT VALID'} for comparison of "
                       "different systems")
            crit = part.criteria
            if not part.valid:
                t_min = summary.scheduled_time_per_partition_s / 60
                out += [f"  criterion 1: scheduled time {t_min:3.1f} min >= "
                        f"{summary.validity_time_s / 60:2.0f} min -- "
                        f"{'reached' if crit['scheduled_time'] else 'NOT reached'}",
                        "  criterion 2: shared file pointers must be used for pattern type 1 "
                        f"-- {'reached' if crit['shared_file_pointer'] else 'NOT reached'}",
                        f"  criterion 3: error count ({part.errors}) == 0 -- "
                        f"{'reached' if crit['no_errors'] else 'NOT reached'}"]
    out += ["\nMaximum over all number of PEs", "-" * 30 + "\n", "", summary.final_line]
    return "\n".join(out) + "\n"


Result = BeffIORecord | StoredSummary  # measured, or imported (b_eff_io's .sum)


def summary_of(result: Result) -> BeffIOSummary:
    """b_eff_io's figures: derived from a record, or as stored (an imported .sum)."""
    if isinstance(result, StoredSummary):
        return BeffIOSummary.from_json(result.summary)
    return summarize(result)


CSV_FIELDS = ("nprocs", "access", "type", "chunk", "MBps")
# The headline figures' names in words (the report's headline table).
FIGURE_WORDS = {
    "b_eff_io_MBps": "b_eff_io [MB/s]",
    "write_MBps": "write, weighted average [MB/s]",
    "rewrite_MBps": "rewrite, weighted average [MB/s]",
    "read_MBps": "read, weighted average [MB/s]",
}
CHECKED = (("mode", "mode"), ("largest chunk (Lmax)", "lmax_bytes"),
           ("scheduled time", "scheduled_time_s"), ("partitions", "partitions"),
           ("rewrite of all types", "rewrite_all"))


# b_eff_io's gnuplot hints (its .sum): the chunk sizes at these x positions, a gap between
# each size and its +8 variant's neighbour, a log bandwidth axis. The hints label the
# variants "+8"; here each names its size ("1k+8"), so that no two ticks read the same.
GNUPLOT_X = (1.0, 2.0, 4.0, 5.0, 7.0, 8.0, 10.0)
GNUPLOT_TICKS = ("1k", "1k+8", "32k", "32k+8", "1M", "1M+8")


def _size_label(nbytes: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", MIB), ("k", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}"


def charts(result: Result) -> list[Chart]:
    """Per partition and access method (write, rewrite, read): each pattern type's bandwidth
    against the chunk size, laid out as b_eff_io's gnuplot hints (chunk sizes 1k, +8, 32k,
    +8, 1M, +8 and Lmax on the x axis, MB/s on a log axis)."""
    s = summary_of(result)
    ticks = tuple(zip(GNUPLOT_X, (*GNUPLOT_TICKS, _size_label(s.lmax_bytes)), strict=True))
    label = "b_eff_io QUICK" if s.mode == "quick" else "b_eff_io"
    out = []
    for part in s.per_partition:
        if not part.measured:
            continue
        n = part.nprocs
        for access in ACCESSES:
            series = []
            for tname, cells in part.patterns_MBps[access].items():
                points = [(x, v) for x, row in zip(GNUPLOT_X, ROWS, strict=True)
                          if (v := cells.get(row)) is not None and v > 0]
                if points:
                    xs, ys = zip(*points, strict=True)
                    series.append(Series(tname, np.array(xs), np.array(ys)))
            if not series:
                continue
            out.append(Chart(
                id=f"b_eff_io/n{n}/{access}", title=f"{label} {access} on {n} process"
                + ("es" if n != 1 else ""), xlabel="chunk size l [B]",
                ylabel="bandwidth, accumulated [MB/s, 10^6 B/s]", series=tuple(series),
                subject="b_eff_io", section="b_eff_io", xlog=False, ylog=True, xticks=ticks,
                note="x as b_eff_io's gnuplot hints place it: each chunk size, then 8 bytes "
                     "more (+8)",
                higher_is_better=True))
    return out


class BeffIOView:
    """b_eff_io's renderers: rich tables per partition, the original's .sum text (``sum``),
    the bandwidth of every pattern as CSV (partition, access, type, chunk), and JSON."""

    csv_fields = CSV_FIELDS
    footer_first = True

    def text_header(self, record: RunRecord) -> str:
        return ""

    def text(self, result: Result, record: RunRecord) -> str:
        return sum_text(summary_of(result))

    def text_footer(self, record: RunRecord) -> str:
        return ""

    def table(self, result: Result, record: RunRecord, console: Console) -> None:
        render(summary_of(result), console)

    def csv_rows(self, result: Result) -> list[dict[str, Any]]:
        rows = []
        for part in summary_of(result).per_partition:
            for access, types in part.patterns_MBps.items():
                for tname, cells in types.items():
                    rows += [{"nprocs": part.nprocs, "access": access, "type": tname,
                              "chunk": chunk, "MBps": value} for chunk, value in cells.items()]
        return rows

    def summary(self, result: Result, record: RunRecord) -> dict[str, Any]:
        return summary_of(result).to_json()

    def result_warnings(self, result: Result, record: RunRecord) -> list[str]:
        return []

    def figures(self, result: Result) -> list[tuple[str, float, bool]]:
        """b_eff_io and, per partition, its weighted averages and b_eff_io (MB/s)."""
        s = summary_of(result)
        out = {"b_eff_io_MBps": s.b_eff_io_MBps}
        for p in s.per_partition:
            for key in ("write_MBps", "rewrite_MBps", "read_MBps", "b_eff_io_MBps"):
                out[f"n={p.nprocs} {key}"] = getattr(p, key)
        return [(k, float(v), True) for k, v in out.items() if v is not None]

    def figure_label(self, name: str) -> str:
        """A headline figure's name in words: "b_eff_io [MB/s]", "2 processes: write,
        weighted average [MB/s]"."""
        where, _, key = name.rpartition(" ")
        words = FIGURE_WORDS.get(key, key)
        if where.startswith("n="):
            n = int(where[2:])
            return f"{n} process{'es' if n != 1 else ''}: {words}"
        return words

    def line_name(self, name: str) -> str:
        """A headline figure's name in ``--format lines``: "b_eff_io_MBps",
        "np2.write_MBps" (for "n=2 write_MBps")."""
        where, _, key = name.rpartition(" ")
        return f"np{where[2:]}.{key}" if where.startswith("n=") else key

    def settings(self, result: Result) -> list[tuple[str, Any]]:
        s = summary_of(result)
        return [(name, getattr(s, key)) for name, key in CHECKED]

    def charts(self, result: Result, record: RunRecord) -> list[Chart]:
        return charts(result)


VIEW = BeffIOView()
# IMB-IO: IMB's text, with IMB-IO's own lines after the calling sequence.
IMBIO = ImbView("MPI-IO", style=("", "", "#"), lengths=io_header)
