"""The views of the IMB-style suites: IMB's text, rich tables, CSV rows and JSON entries of
:class:`~beff.results.model.Measurement` objects, live or from a stored file alike."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.text import Span, Text

from beff import __version__
from beff.bench.charts import measurement_charts
from beff.render import lines as fmt_lines
from beff.render.charts import Chart
from beff.render.common import _clean
from beff.render.tables import Table, shown_columns
from beff.results import columns, printed, stats, warnings
from beff.results.model import (
    FAILED,
    OK,
    OUT_OF_MEM,
    TIME_OUT,
    UNSUPPORTED,
    Measurement,
    RunRecord,
)
from beff.results.placement import placement_groups, placement_label

# Rows a table shows: measured sizes and the ones that ended the benchmark.
SHOWN = (OK, TIME_OUT, OUT_OF_MEM, FAILED)

W = 13
TYPE_NAMES = {"byte": "MPI_BYTE", "char": "MPI_CHAR", "int": "MPI_INT", "float": "MPI_FLOAT",
              "double": "MPI_DOUBLE"}
TIME_OUT_TEXT = (' time-out.; Time limit (secs_per_sample * msg_sizes_list_len) is over; use '
                 '"-time X" or SECS_PER_SAMPLE=X (IMB_settings.h) to increase time limit.')
OUT_OF_MEM_TEXT = ' out-of-mem.; needed X={:8.3f} GB; use flag "-mem X" or MAX_MEM_USAGE>=X ' \
                  '(IMB_mem_info.h)'
IMB_FOOTER = "\n\n# All processes entering MPI_Finalize\n\n"
THREAD_ENV = {"single": "", "funneled": "MPI_THREAD_FUNNELED",
              "serialized": "MPI_THREAD_SERIALIZED", "multiple": "MPI_THREAD_MULTIPLE"}


# ----------------------------------------------------------------------------- IMB text
def measured_config(attrs: dict[str, Any]) -> dict[str, Any]:
    """The options the run measured with: the validated config (beff's shared options, the
    suite's under ``options``; a file of an earlier beff kept them all at the top level) and
    what was derived."""
    config = attrs.get("config", {})
    return {**config, **(config.get("options") or {}), **(attrs.get("derived") or {})}


def imb_header(attrs: dict[str, Any], names: Iterable[str], view: ImbView) -> str:
    """IMB 2021.11's global header, naming beff as the program that measured."""
    cfg = measured_config(attrs)
    host = attrs.get("host", {})
    mpi = attrs.get("mpi", {})
    after_cmd, after_red, blank = view.style
    created = str(attrs.get("created", ""))
    try:
        date = time.asctime(time.localtime(
            time.mktime(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone))
    except (TypeError, ValueError):
        date = "" if "imported" in attrs else time.asctime()
    dashes = "#" + "-" * 64
    lines = [
        "",
        dashes,
        title_line(attrs, view.part),
        dashes,
        *imported_lines(attrs),
        f"# Date                  : {date}",
        f"# Machine               : {host.get('machine', '')}",
        f"# System                : {host.get('system', '')}",
        f"# Release               : {host.get('release', '')}",
        f"# Version               : {host.get('version', '')}",
        f"# MPI Version           : {mpi.get('standard_version', '')}",
        f"# MPI Thread Environment: {THREAD_ENV.get(mpi.get('thread_level', 'single'), '')}",
        "",
        "",
        "# Calling sequence was: ",
        "",
        "# " + " ".join(attrs.get("command_line", [])) + after_cmd,
        "",
    ]
    if view.lengths is not None:
        return "\n".join(lines + view.lengths(attrs, names)) + "\n"
    if cfg.get("msglen") is not None:
        lines.append("# Message lengths were user defined")
    else:
        lo = 0 if cfg.get("zero_size", True) else 1 << int(cfg.get("msglog_min", 0))
        lines.append(f"# Minimum message length in bytes:   {lo}")
        lines.append(f"# Maximum message length in bytes:   {1 << int(cfg.get('msglog_max', 22))}")
    lines += [
        "#",
        f"# MPI_Datatype                   :   {TYPE_NAMES[cfg.get('data_type', 'byte')]} ",
        f"# MPI_Datatype for reductions    :   {TYPE_NAMES[cfg.get('red_data_type', 'float')]}"
        + after_red,
        "# MPI_Op                         :   MPI_SUM  ",
        blank,
        blank,
        "",
        "# List of Benchmarks to run:",
        "",
    ]
    comments = attrs.get("benchmark_comments", {})
    for n in names:  # IMB-RMA indents a benchmark's comments under its name
        lines += [f"# {n}", *(f"#     {c}" for c in comments.get(n, ()))]
    return "\n".join(lines) + "\n"


def title_line(attrs: dict[str, Any], part: str) -> str:
    """IMB's title: beff's, or the IMB version that printed an imported text."""
    if "imported" in attrs:
        return f"#    Intel(R) MPI Benchmarks {attrs.get('versions', {}).get('imb', '')}, " \
            f"{part} part"
    return (f"#    beff {attrs.get('versions', {}).get('beff', __version__)} "
            f"(Intel(R) MPI Benchmarks 2021.11 layout), {part} part")


def imported_lines(attrs: dict[str, Any]) -> list[str]:
    """Where an imported text came from (none for a measured run)."""
    line = printed.note(attrs)
    return [f"# {line}"] if line else []


def io_header(attrs: dict[str, Any], names: Iterable[str]) -> list[str]:
    """IMB-IO's lines after the calling sequence: io portions, the hints, the list, and the
    CPU kernel's speed when a nonblocking benchmark runs."""
    cfg = measured_config(attrs)
    io = attrs.get("io", {})
    if cfg.get("msglen") is not None:
        lines = ["# IO lengths were user defined"]
    else:
        lines = ["# Minimum io portion in bytes:   0",
                 f"# Maximum io portion in bytes:   {1 << int(cfg.get('msglog_max', 22))}"]
    lines.append("#")
    lines += [f"# MPI_Info key: {k} = {v}" for k, v in io.get("hints_requested", {}).items()]
    lines += ["#", "#", "", "# List of Benchmarks to run:", ""]
    names = list(names)
    lines += [f"# {n}" for n in names]
    if any(n.count("_") == 2 and n.split("_")[1].startswith("I") for n in names):
        lines += ["", "", "# For nonblocking benchmarks:", "",
                  "# Function CPU_Exploit obtains an undisturbed",
                  f"# performance of {float(io.get('cpu_mflops', 0.0)):7.2f} MFlops"]
    return lines


def table_columns(m: Measurement) -> list[str]:
    """The IMB text columns of ``m``: its declared columns, where ``t`` (one transfer's time)
    becomes t_min/t_max/t_avg under ``-multi 0`` (pooled groups), as IMB prints them, and
    ``defects`` follows in check mode for benchmarks with a message size."""
    cols: list[str] = []
    for c in m.columns:
        cols += ["t_min", "t_max", "t_avg"] if c == "t" and m.multi == 0 else [c]
    if m.checked and "bytes" in cols:
        cols.append("defects")
    return cols


def _cell(col: columns.Column | None, value: float) -> str:
    if col is None or not math.isfinite(value):
        return f"{'n/a':>{W}s}"
    if col.integer:
        return f"{int(value):{W}d}"
    return f"{value:{W}.{col.digits}f}"


def _procids(ranks: list[int]) -> str:
    """World ranks, 16 per line, as IMB prints them after a '# ' prefix."""
    out = ""
    for i, r in enumerate(ranks):
        if i and i % 16 == 0:
            out += "\n# "
        out += f" {r:4d}"
    return out


def imb_block(m: Measurement) -> str:
    """One benchmark at one process count in IMB 2021.11's layout ("" if not run)."""
    if m.unsupported:
        return ""
    cols = table_columns(m)
    grouped = m.multi is not None and m.multi > 0
    headers = (["Group"] if grouped else []) + [
        c.imb if (c := columns.lookup(cid)) else cid for cid in cols]
    dash = "#" + "-" * (len(headers) * W - 1)
    name = ("Multi-" if m.ngroups > 1 else "") + m.benchmark
    out = ["", dash, f"# Benchmarking {name} "]
    if m.ngroups > 1:
        out.append(f"# ( {m.ngroups} groups of {m.nprocs} processes each running simultaneous ) ")
        for gi in range(m.ngroups):
            out.append(f"# Group  {gi}: " + _procids(list(m.world_ranks[m.group == gi])))
            out.append("# ")
    elif m.attrs.get("map_rows"):
        out.append(f"# #processes = {m.nprocs}; rank order (rowwise): ")
        for row in m.attrs["map_rows"]:
            out.append("# " + _procids(row))
            out.append("# ")
    elif "threads" in m.attrs:  # IMB-MT (imported)
        out.append(f"# #processes = {m.nprocs} (threads: {m.attrs['threads']})")
    else:
        out.append(f"# #processes = {m.nprocs} ")
    if m.idle:
        s = "" if m.idle == 1 else "es"
        out.append(f"# ( {m.idle} additional process{s} waiting in MPI_Barrier)")
    out.append(dash)
    if m.mode:  # as IMB-EXT/RMA/IO: "#    MODE: NON-AGGREGATE "
        out += ["#", f"#    MODE: {m.mode.upper()} ", "#"]
    out.append("".join(f"{c:>{W}s}" for c in headers))
    groups: list[int | None] = [*range(m.ngroups)] if grouped else [None]
    table = {g: columns.values(m, cols, g) for g in groups}
    for i, size in enumerate(m.sizes):
        status = m.status[i]
        if status not in SHOWN:
            continue
        if grouped:
            out.append("")
        for g in groups:
            prefix = "" if g is None else f"{g:{W}d}"
            if status == TIME_OUT:
                out.append(prefix + f"{size:{W}d}" + TIME_OUT_TEXT)
                continue
            if status == FAILED:
                out.append(prefix + f"{size:{W}d} failed; {m.attrs.get('failure', '')}")
                continue
            if status == OUT_OF_MEM:
                need = m.needed_gb[i] if m.needed_gb is not None else math.nan
                out.append(prefix + f"{size:{W}d}" + OUT_OF_MEM_TEXT.format(need))
                continue
            out.append(prefix + "".join(_cell(columns.lookup(c), table[g][c][i])
                                        if c in table[g] else _cell(None, math.nan)
                                        for c in cols))
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- rich
def _fmt(x: float, digits: int = 2) -> str:
    return "-" if not math.isfinite(x) else f"{x:,.{digits}f}"


def _styled(text: str, style: str) -> Text:
    """``text`` in ``style``, as the markup ``[style]text[/style]`` gives it (no markup to
    parse when the table prints)."""
    return Text(text, spans=[Span(0, len(text), style)])


def rich_table(m: Measurement, ranks: list[dict[str, Any]] | None = None) -> Table:
    """A terminal table for one benchmark at one process count; under ``-multi 1`` a row
    per size and group (the first column says which group), as IMB prints it. Columns
    without a value in any row are left out (the interval and cv of a run of one batch per
    size: --batches 1, older IMB-MT and IMB-P2P files), and so are the caption's lines about
    them."""
    mode = f" ({m.mode})" if m.mode else ""
    title = f"{m.suite.upper()} {m.benchmark}{mode} — {m.nprocs} process" + (
        "es" if m.nprocs != 1 else "")
    if m.ngroups > 1:
        title += f" × {m.ngroups} groups"
    if m.idle:
        title += f" ({m.idle} idle)"
    if "launch" in m.attrs:  # a resumed file: which launch measured it
        title += f" (launch {m.attrs['launch']})"
    if m.attrs.get("start_policy") == "window":  # --sync window (beff.bench.window)
        clock = m.attrs.get("clock", {})
        worst = max(clock.get("residual_s") or [0.0]) * 1e6
        invalid = sum(m.attrs.get("invalid") or [])
        title += (f" (window starts: clocks within {worst:.2f} µs, {invalid} invalid "
                  f"call{'s' if invalid != 1 else ''} left out)")
    if m.attrs.get("page_cache") == "cached":
        title += escape(" [cached: read from the page cache of the node that wrote the file]")
    groups = m.table_groups
    cols = rich_columns(m)
    headers = (["group"] if groups != [None] else []) + [
        col.label if (col := columns.lookup(cid)) else cid for cid in cols]
    ids = (["group"] if groups != [None] else []) + cols
    headers += [f"{stats.CI_LEVEL:.0%} CI", "cv"] + (["defects"] if m.checked else [])
    ids += ["ci", "cv"] + (["defects"] if m.checked else [])
    rows = {g: _rich_rows(m, cols, g) for g in groups}
    table_rows: list[list[str | Text]] = []
    for i in range(len(m.sizes)):
        for g in groups:
            row = rows[g][i]
            if row is None:
                continue
            if g is not None:
                row = [str(g) if m.status[i] == OK else "all", *row]
            table_rows.append(row)
            if m.status[i] != OK:  # a time-out ends the size for every group: one row
                break
    keep = shown_columns(table_rows, len(headers))
    shown = {cid for cid, k in zip(ids, keep, strict=True) if k}
    caption = [placement_label(m, ranks or [])]
    scale = " × 0.5 (half round trip)" if m.time_scale == 0.5 else ""
    if "overlap" in m.columns:
        if shown & {"t_ovrl", "t_pure", "t_cpu", "overlap"}:
            caption.append("t_ovrl, t_pure, t_CPU: per iteration, of the rank with the largest "
                           "t_ovrl; overlap = share of the shorter of t_pure and t_CPU hidden")
    else:
        megabytes = any(c.endswith("mbytes_per_sec") for c in shown)
        caption.append(f"t = timed loop / repetitions{scale}, over ranks"
                       + ("; MB/s with MB = 10^6 B" if megabytes else ""))
    if m.printed:
        caption.append("imported: the figures as the original printed them; no raw samples, "
                       "so no interval and no cv")
    else:
        what = "t_avg" if m.metric == "t" else f"{m.metric} (mean over ranks)"
        if "ci" in shown:
            caption.append(f"{stats.CI_LEVEL:.0%} CI: interval of {what} relative to it, "
                           "bootstrap over the batches")
        if "cv" in shown:
            caption.append(f"cv: spread (std/mean) of the batches' {what}; ! unstable: cv > "
                           f"{stats.CV_LIMIT:.0%}, or the fastest batch > "
                           f"{stats.MIN_LIMIT:.0%} below the median")
    if groups != [None]:
        caption.append(f"-multi 1: a row per size and group ({len(groups)} groups of "
                       f"{m.nprocs} processes running side by side)")
    table = Table(title=title, caption="\n".join(c for c in caption if c), box=box.SIMPLE_HEAD)
    for header, cid, k in zip(headers, ids, keep, strict=True):
        if k:
            table.add_column(header, justify="right",
                             no_wrap=cid in ("ci", "cv"))
    for row in table_rows:
        table.add_row(*(cell for cell, k in zip(row, keep, strict=False) if k))
    return table


def _rich_rows(m: Measurement, cols: list[str], group: int | None,
               ) -> list[list[str | Text] | None]:
    """The table's row of each size (of ``group``, or all ranks); None for a size not
    shown."""
    sure, t_avg = stats.certainty(m, group), stats.summarize(m, group).t_avg
    values = columns.values(m, cols, group)
    nan = [math.nan] * len(m.sizes)
    shown = [(col.integer if col else False, col.digits if col else 2,
              values[cid].tolist() if cid in values else nan)
             for cid in cols for col in [columns.lookup(cid)]]  # floats: quicker than numpy's
    low, high, t, cvs = sure.low.tolist(), sure.high.tolist(), t_avg.tolist(), sure.cv.tolist()
    out: list[list[str | Text] | None] = []
    for i in range(len(m.sizes)):
        status = m.status[i]
        if status not in SHOWN:
            out.append(None)
            continue
        if status != OK:
            row: list[str | Text] = [f"{int(m.sizes[i]):,}"] if "bytes" in cols else []
            reason = f": {m.attrs.get('failure', '')}" if status == FAILED else ""
            row.append(_styled(f"{status}{reason}", "red"))
            out.append(row)
            continue
        row = [f"{int(v[i]):,}" if integer and math.isfinite(v[i]) else _fmt(v[i], digits)
               for integer, digits, v in shown]
        row.append(_relative(low[i], high[i], t[i]))
        cv = _fmt(cvs[i] * 100, 1) + "%" if math.isfinite(cvs[i]) else "-"
        row.append(_styled(f"{cv} !", "yellow") if sure.stable[i] is False else cv)
        if m.checked and m.defects is not None:
            d = int(m.defects[i])
            row.append(_styled(str(d), "red") if d else "0")
        out.append(row)
    return out


def _relative(low: float, high: float, t: float) -> str:
    """An interval relative to its figure: "-2.1/+3.4%" ("-" where there is none)."""
    if not (math.isfinite(low) and math.isfinite(t) and t > 0):
        return "-"
    return f"{(low / t - 1) * 100:+.1f}/{(high / t - 1) * 100:+.1f}%".replace("-", "−")


def rich_columns(m: Measurement) -> list[str]:
    """Terminal columns: the declared ones, with the spread over ranks (t_min, t_max, t_avg)
    of the first metric in place of ``t``, or after the repetitions when none is declared.
    An imported result shows the columns the original printed (IMB's ``t`` as ``t``)."""
    if m.printed:
        return [c for c in table_columns(m) if c != "defects"]
    cols: list[str] = []
    for c in m.columns:
        cols += ["t_min", "t_max", "t_avg"] if c == "t" else [c]
    if not any((col := columns.lookup(c)) is not None and col.timing for c in cols):
        at = cols.index("repetitions") + 1 if "repetitions" in cols else 0
        cols[at:at] = ["t_min", "t_max", "t_avg"]
    if m.iterations is not None:  # --per-iteration: the tails after t_avg
        at = cols.index("t_avg") + 1 if "t_avg" in cols else len(cols)
        cols[at:at] = ["p50", "p90", "p99", "max"]
    return cols


# ----------------------------------------------------------------------------- JSON / CSV
CSV_FIELDS = ["suite", "benchmark", "nprocs", "ngroups", "group", "bytes", "repetitions",
              "t_min_us", "t_max_us", "t_avg_us", "mbytes_per_sec", "msg_per_sec", "status",
              "defects", "mode", "t_ovrl_us", "t_pure_us", "t_cpu_us", "overlap_pct",
              "t_avg_ci_low_us", "t_avg_ci_high_us", "batches", "batch_cv", "stable",
              *stats.TAIL_COLUMNS]
# mode and the overlap figures (NBC, MPI4) came with schema 2, the interval and stability of
# t_avg (beff.results.stats.certainty) after them: last, so old readers keep working; a
# benchmark without them leaves them empty. The tail latencies (--per-iteration) came last.


# How the rows' interval and stability flag are made (JSON; share/docs/statistics.md).
STATISTICS = {
    "t_avg_ci": f"{stats.CI_LEVEL:.0%} expanded-percentile bootstrap of t_avg over the batches "
                f"(batch indices resampled jointly across the ranks; {stats.RESAMPLES} "
                f"resamples, fixed seed); none below {stats.MIN_BATCHES} batches",
    "stable": f"false when the batches' t_avg spread (std/mean, batch_cv) is above "
              f"{stats.CV_LIMIT:g}, or the fastest batch is more than {stats.MIN_LIMIT:g} "
              f"below the median batch; null below {stats.MIN_BATCHES} batches",
}


def measurement_rows(m: Measurement) -> list[dict[str, Any]]:
    """Flat rows (one per size, and per group with -multi 1): the standard figures, then any
    further column the benchmark declared (JSON only; CSV keeps its fixed fields). A figure
    the benchmark does not have, as IMB prints it (Barrier's bytes and bandwidth, PingPong's
    message rate), is null (CSV: empty), not a number."""
    grouped = m.multi is not None and m.multi > 0
    has = set(m.columns)
    rows = []
    standard = {"bytes", "repetitions", "t", "t_min", "t_max", "t_avg", "mbytes_per_sec",
                "msg_per_sec", "defects"}
    more = [c for c in m.columns if c not in standard]
    for g in list(range(m.ngroups)) if grouped else [None]:
        s = stats.summarize(m, g)
        sure = stats.certainty(m, g)
        extra = columns.values(m, more, g)
        tail = stats.tails(m) if m.iterations is not None else {}
        for i, size in enumerate(m.sizes):
            if m.status[i] not in SHOWN:
                continue
            rows.append({
                "suite": m.suite, "benchmark": m.benchmark, "mode": m.mode, "nprocs": m.nprocs,
                "ngroups": m.ngroups, "group": "all" if g is None else g,
                "bytes": int(size) if "bytes" in has else None,
                "repetitions": int(m.repetitions[i]),
                "t_min_us": _clean(float(s.t_min[i])), "t_max_us": _clean(float(s.t_max[i])),
                "t_avg_us": _clean(float(s.t_avg[i])),
                "mbytes_per_sec": _clean(float(s.mbytes_per_sec[i]))
                if "mbytes_per_sec" in has else None,
                "msg_per_sec": _clean(float(s.msg_per_sec[i])) if "msg_per_sec" in has else None,
                "status": m.status[i],
                "defects": int(m.defects[i]) if m.defects is not None else None,
                **{c.key: _clean(float(extra[c.id][i]))
                   for cid in more if (c := columns.lookup(cid)) and cid in extra},
                "t_avg_ci_low_us": _clean(float(sure.low[i])),
                "t_avg_ci_high_us": _clean(float(sure.high[i])),
                "batches": int(sure.batches[i]), "batch_cv": _clean(float(sure.cv[i])),
                "stable": sure.stable[i], "unstable_because": sure.why[i],
                **{key: _clean(float(values[i])) for key, values in tail.items()},
                **(_window_row(m, i) if m.attrs.get("start_policy") == "window" else {}),
            })
    return rows


def _window_row(m: Measurement, i: int) -> dict[str, Any]:
    """--sync window's figures of size ``i`` (JSON): the policy, the window, the invalid
    calls left out, and the mean over the valid calls of each one's latest end over the
    ranks less its common start (the policy's time of a call; t_max is the slowest rank's
    mean)."""
    width = (m.attrs.get("window_s") or [None] * len(m.sizes))[i]
    latest = (m.attrs.get("window_time_s") or [None] * len(m.sizes))[i]
    return {"start_policy": "window", "window_us": None if width is None else width * 1e6,
            "invalid": (m.attrs.get("invalid") or [0] * len(m.sizes))[i],
            "t_window_us": None if latest is None else latest * 1e6}


# ----------------------------------------------------------------------------- lines
# The figures of an IMB row as lines, by their CSV/JSON key (share/docs/lines.md): these
# first, then MB/s and msg/s where the benchmark declares them, its further columns
# (t_ovrl_us, t_pure_us, t_cpu_us, overlap_pct, IMB-P2P's and IMB-RMA's t_us), defects
# under --check, and t_avg's interval.
LINE_FIGURES = ("repetitions", "t_min_us", "t_max_us", "t_avg_us")
RATES = ("mbytes_per_sec", "msg_per_sec")
LINE_LAST = ("t_avg_ci_low_us", "t_avg_ci_high_us")


def line_prefix(m: Measurement) -> str:
    """``SUITE.BENCHMARK[.MODE].npP[.multiM]``: the key of ``m`` (:attr:`Measurement.key`)
    in dots."""
    words = [m.suite, m.benchmark, *([m.mode] if m.mode else []), f"np{m.nprocs}",
             *([f"multi{m.multi}"] if m.multi is not None else [])]
    return ".".join(fmt_lines.part(w) for w in words)


def line_figures(m: Measurement) -> list[str]:
    """The keys of ``m``'s rows that become lines, in order."""
    standard = {"bytes", "repetitions", "t", "t_min", "t_max", "t_avg", "mbytes_per_sec",
                "msg_per_sec", "defects"}
    more = [c.key for cid in m.columns if cid not in standard and (c := columns.lookup(cid))]
    keys = [*LINE_FIGURES, *(k for k in RATES if k in m.columns), *more,
            *(["defects"] if m.defects is not None else []), *LINE_LAST]
    return list(dict.fromkeys(keys))


def measurement_lines(m: Measurement) -> list[fmt_lines.Line]:
    """``--format lines`` of one benchmark at one process count: per row (a size, and a
    group under ``-multi 1``: ``.gN``) ``PREFIX[.gN][.SIZEB].FIGURE``, the size left out
    where the benchmark has no message size (Barrier); a row that is not ok gives its
    ``.status`` alone, a benchmark the MPI library cannot run ``PREFIX.status unsupported``.
    A row named twice (``-msglen`` with a size twice) has ``-2`` added the second time."""
    prefix = line_prefix(m)
    if m.unsupported:
        return [(f"{prefix}.status", UNSUPPORTED, fmt_lines.WORD)]
    sized = "bytes" in m.columns
    keys = line_figures(m)
    seen: Counter[tuple[object, int]] = Counter()
    out: list[fmt_lines.Line] = []
    for row in measurement_rows(m):
        seen[row["group"], row["bytes"] if sized else 0] += 1
        again = seen[row["group"], row["bytes"] if sized else 0]
        at = ".".join([prefix, *([f"g{row['group']}"] if row["group"] != "all" else []),
                       *([f"{row['bytes']}B"] if sized else [])])
        if again > 1:
            at = f"{at}-{again}"
        if row["status"] != OK:
            out.append((f"{at}.status", fmt_lines.part(row["status"]), fmt_lines.WORD))
            continue
        out += [(f"{at}.{key}", row.get(key), fmt_lines.unit_of(key)) for key in keys]
    return out


@dataclass(frozen=True)
class ImbView:
    """The renderers of an IMB-style suite: IMB's text with the component's own header, rich
    tables, CSV rows and JSON entries of each Measurement."""

    part: str  # "MPI-1": the header's "... part" line
    # The header's whitespace (IMB_g_info.c): trailing text of the command line and of the
    # reductions' datatype line, and the two lines after MPI_Op.
    style: tuple[str, str, str] = ("", "", "#")
    # The component's own lines after the calling sequence (IMB-IO's), instead of IMB's.
    lengths: Callable[[dict[str, Any], Iterable[str]], list[str]] | None = None
    csv_fields: tuple[str, ...] = tuple(CSV_FIELDS)
    footer_first: bool = False

    def text_header(self, record: RunRecord) -> str:
        names = list(dict.fromkeys(m.benchmark for m in record.measurements))
        return imb_header(record.attrs, record.attrs.get("benchmarks", names), self)

    def text(self, result: Measurement, record: RunRecord) -> str:
        return imb_block(result)

    def text_footer(self, record: RunRecord) -> str:
        return IMB_FOOTER

    def table(self, result: Measurement, record: RunRecord, console: Console) -> None:
        if not result.unsupported:
            console.print(rich_table(result, record.ranks))

    def csv_rows(self, result: Measurement) -> list[dict[str, Any]]:
        return measurement_rows(result)

    def summary(self, result: Measurement, record: RunRecord) -> dict[str, Any]:
        m = result
        return {"benchmark": m.benchmark, "mode": m.mode, "nprocs": m.nprocs,
                "ngroups": m.ngroups, "idle": m.idle,
                "placement": placement_groups(m, record.ranks), "statistics": STATISTICS,
                "rows": measurement_rows(m)}

    def result_warnings(self, result: Measurement, record: RunRecord) -> list[str]:
        if result.unsupported:
            return [str(result.attrs.get("unsupported", ""))]
        groups = result.attrs.get("placement_groups") or placement_groups(result, record.ranks)
        return warnings.result_warnings(record.attrs, result, list(groups))

    def figures(self, result: Measurement) -> list[tuple[str, float, bool]]:
        return []  # compared size by size (beff.render.compare.compare_records)

    def settings(self, result: Measurement) -> list[tuple[str, Any]]:
        return []

    def charts(self, result: Measurement, record: RunRecord) -> list[Chart]:
        return measurement_charts(result)

    def lines(self, result: Measurement, record: RunRecord) -> list[fmt_lines.Line]:
        return measurement_lines(result)
