"""b_eff's view: its results as rich tables, b_eff 3.6's .sum text, CSV and JSON (rank 0 after
``beff run``, or ``beff show``)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
from rich import box
from rich.console import Console

from beff.effbw.record import MB, BeffRecord, BeffSummary, PatternFigures, summarize
from beff.patterns import memory_mib, reduce_beff
from beff.render.charts import BAR, Chart, Series
from beff.render.tables import Table
from beff.results.model import RunRecord, StoredSummary


def _mb(x: float) -> str:
    return f"{x:,.1f}" if _number(x) else "-"


def _number(x: object) -> bool:
    """A figure that is known (an imported .sum leaves some out)."""
    return isinstance(x, (int, float)) and math.isfinite(x)


def _details(summary: BeffSummary, console: Console) -> None:
    """b_eff per message length, and every pattern's bandwidth."""
    P = summary.nprocs
    lt = Table(title="per message length (max over methods and repetitions)",
               box=box.SIMPLE_HEAD)
    for col in ("bytes", "b_eff(L)", "rings", "random", "b_eff(L)/P"):
        lt.add_column(col, justify="right")
    for row in summary.per_length:
        lt.add_row(f"{row.bytes:,}", _mb(row.b_eff_MBps), _mb(row.ring_MBps),
                   _mb(row.random_MBps), _mb(row.b_eff_MBps / P))
    console.print(lt)
    pt = Table(title="patterns (B_p = mean over lengths)", box=box.SIMPLE_HEAD)
    for col in ("#", "pattern", "kind", "B_p MB/s", "per process", "cross-node"):
        pt.add_column(col, justify="right" if col not in ("pattern", "kind") else "left")
    for p in summary.patterns:
        share = p.cross_node_share
        pt.add_row(str(p.index), p.label, p.kind, _mb(p.b_MBps),
                   _mb(p.b_MBps / P), f"{100 * share:.0f}%" if _number(share) else "-")
    console.print(pt)


def render(summary: BeffSummary, console: Console) -> None:
    """The summary table, the per-length table, the patterns, and the original's final line."""
    P = summary.nprocs
    mode = summary.mode
    lmax = summary.lmax_bytes
    t = Table(title=f"{mode} on {P} processes — MB/s with MB = 10^6 B", box=box.SIMPLE_HEAD,
              show_header=True)
    t.add_column("figure")
    t.add_column("accumulated", justify="right")
    t.add_column("per process", justify="right")
    rows = [
        ("b_eff", summary.b_eff_MBps, summary.b_eff_per_process_MBps),
        (f"b_eff at Lmax = {lmax:,} B", summary.b_eff_lmax_MBps,
         summary.b_eff_lmax_per_process_MBps),
        ("b_eff at Lmax, rings only", summary.ring_lmax_MBps,
         summary.ring_lmax_per_process_MBps),
        ("log-avg of ring patterns", summary.b_ring_MBps, summary.b_ring_MBps / P),
        ("log-avg of random patterns", summary.b_random_MBps, summary.b_random_MBps / P),
    ]
    for name, total, per in rows:
        t.add_row(name, _mb(total), _mb(per))
    t.add_row("latency, rings & random [µs]", f"{summary.latency_us:.3f}", "")
    t.add_row("latency, rings only [µs]", f"{summary.latency_ring_us:.3f}", "")
    t.add_row("ping-pong latency [µs] (half round trip)",
              f"{summary.pingpong_latency_us:.3f}", "")
    t.add_row("ping-pong bandwidth at Lmax", _mb(summary.pingpong_bandwidth_MBps), "")
    if summary.b_eff_all_methods_MBps is not None:
        t.add_row("b_eff incl. opt-in methods (not official)",
                  _mb(summary.b_eff_all_methods_MBps), "")
    mem = summary.memory_per_proc_bytes
    known = [(f"seed {summary.seed}", summary.seed),
             (f"{summary.repetitions} repetitions", summary.repetitions),
             (f"{summary.time_per_loop_s} s per loop", summary.time_per_loop_s)]
    t.caption = (f"memory per process {memory_mib(mem):,} MiB ({summary.memory_per_proc_source})"
                 ", Lmax = memory/128; "
                 + "".join(f"{text}; " for text, value in known if _number(value))
                 + f"methods {', '.join(summary.methods_in_b_eff)}; run time "
                 f"{summary.runtime_s:.1f} s")
    console.print(t)
    if summary.per_length:  # an imported .sum without its .prot has none
        _details(summary, console)
    for w in summary.warnings:
        console.print(f"[bold yellow]warning:[/bold yellow] {w}")
    if summary.shortened_repetitions:
        reps = ", ".join(str(r + 1) for r in summary.shortened_repetitions)
        console.print("[yellow]CAUTION: the 60-second rule shortened the two largest lengths "
                      f"in repetition {reps}[/yellow]")
    console.print(summary.final_line, soft_wrap=True)  # scripts grep it: never wrapped


# The header of b_eff 3.6's summary table, trailing blanks included.
SUM_HEADER = [
    "            | number  |   b_eff   |  Lmax  |   b_eff   |   b"
    "_eff   | Latency | Latency | Latency | ping-pong  ",
    "            | of pro  |           |        |  at Lmax  |  at"
    " Lmax  | rings & |  rings  |  ping-  | bandwith   ",
    "            | cessors |           |        |  rings &  |   r"
    "ings   | random  |  only   |  pong   |            ",
    "            |         |           |        |  random   |   o"
    "nly    | micro-  | micro-  | micro-  |            ",
    "            |         |  MByte/s  |        |  MByte/s  |  MB"
    "yte/s  |  sec    |  sec    |  sec    |  MByte/s   ",
    "-" * 110,
]


def sum_text(summary: BeffSummary) -> str:
    """The summary table of b_eff 3.6's .sum file, then its final line (``show -f imb``)."""
    P = summary.nprocs
    lmax_mb = summary.lmax_bytes / (1 << 20)
    acc = (f"accumulated |{P:7d} {summary.b_eff_MBps:12.0f} {lmax_mb:5.0f} MB "
           f"{summary.b_eff_lmax_MBps:10.0f} {summary.ring_lmax_MBps:12.0f} "
           f"{summary.latency_us:9.3f} {summary.latency_ring_us:9.3f} "
           f"{summary.pingpong_latency_us:9.3f} {summary.pingpong_bandwidth_MBps:12.0f}")
    per = (f"per process |{summary.b_eff_per_process_MBps:20.0f}"
           f"{summary.b_eff_lmax_per_process_MBps:20.0f}"
           f"{summary.ring_lmax_per_process_MBps:13.0f}")
    blank = "            |"
    return "\n".join([*SUM_HEADER, blank, acc, blank, per, "",
                      summary.final_line]) + "\n"


CSV_FIELDS = ("bytes", "b_eff_MBps", "ring_MBps", "random_MBps", "b_eff_per_process_MBps")
# What makes two b_eff figures comparable, and the figures `beff compare` shows (larger is
# better?).
CHECKED = (("mode", "mode"), ("memory per process", "memory_per_proc_bytes"),
           ("methods in b_eff", "methods_in_b_eff"))
FIGURES = (("b_eff_MBps", True), ("b_eff_lmax_MBps", True), ("b_ring_MBps", True),
           ("b_random_MBps", True), ("latency_us", False), ("pingpong_latency_us", False),
           ("pingpong_bandwidth_MBps", True))
# The figures' names in words (the report's headline table), as the summary table says them.
FIGURE_WORDS = {
    "b_eff_MBps": "b_eff [MB/s]",
    "b_eff_lmax_MBps": "b_eff at Lmax [MB/s]",
    "b_ring_MBps": "log-avg of ring patterns [MB/s]",
    "b_random_MBps": "log-avg of random patterns [MB/s]",
    "latency_us": "latency, rings & random [µs]",
    "pingpong_latency_us": "ping-pong latency, half round trip [µs]",
    "pingpong_bandwidth_MBps": "ping-pong bandwidth at Lmax [MB/s]",
}


def summary_of(result: BeffRecord | StoredSummary) -> BeffSummary:
    """b_eff's derived figures (a schema-1 file stored them: read as they were)."""
    if isinstance(result, StoredSummary):
        return BeffSummary.from_json(result.summary)
    return summarize(result)


def method_lengths(rec: BeffRecord) -> list[tuple[str, np.ndarray]]:
    """b_eff(L) (MB/s) of each method alone: the same reduction over that method only."""
    b = rec.pattern_b()
    lengths = [int(x) for x in rec.lengths]
    out = []
    for i, label in enumerate(rec.methods):
        res = reduce_beff(b[..., [i]], nprocs=rec.nprocs, kinds=rec.kinds, lengths=lengths)
        out.append((label + ("" if rec.official[i] else " (opt-in)"),
                    np.asarray(res.b_eff_length) / MB))
    return out


def pattern_names(patterns: list[PatternFigures]) -> tuple[str, ...]:
    """A name per pattern bar: b_eff's label, numbered where patterns share it (at 2
    processes all 6 rings are ``ring-1*2fix``, and the 30 random ones ``random-cyc-1dim``)."""
    total = Counter(p.label for p in patterns)
    seen: Counter[str] = Counter()
    names = []
    for p in patterns:
        seen[p.label] += 1
        names.append(p.label if total[p.label] == 1 else f"{p.label} #{seen[p.label]}")
    return tuple(names)


def charts(result: BeffRecord | StoredSummary) -> list[Chart]:
    """b_eff(L) for rings and random patterns, b_eff(L) of each method, the patterns' B_p
    and the latencies."""
    s = summary_of(result)
    P = s.nprocs
    x = np.array([r.bytes for r in s.per_length], dtype=np.float64)
    bw = "bandwidth, accumulated [MB/s, 10^6 B/s]"
    own = "b_eff"  # the subject `beff plot --benchmark` names, and the report's section

    def per_length(name: str) -> np.ndarray:
        return np.array([getattr(r, name) for r in s.per_length], dtype=np.float64)

    out = [Chart(
        id="b_eff/length", title=f"{s.mode}(L) on {P} processes",
        xlabel="message length L [B]", ylabel=bw,
        series=(Series("rings", x, per_length("ring_MBps")),
                Series("random", x, per_length("random_MBps")),
                Series("b_eff(L)", x, per_length("b_eff_MBps"))),  # last: drawn on top
        note="geometric means over the ring and over the random patterns of the best method "
             "and repetition; b_eff(L) is their geometric mean",
        higher_is_better=True, subject=own, section=own)]
    if isinstance(result, BeffRecord):
        out.append(Chart(
            id="b_eff/methods", title=f"b_eff(L) of each method on {P} processes",
            xlabel="message length L [B]", ylabel=bw,
            series=tuple(Series(label, x, y) for label, y in method_lengths(result)),
            note="the same reduction over one method at a time", higher_is_better=True,
            subject=own, section=own))
    patterns = [p for p in s.patterns if p.kind in ("ring", "random")]
    if patterns:
        kinds = (("ring", "ring patterns"), ("random", "random patterns"))
        out.append(Chart(
            id="b_eff/patterns", title=f"bandwidth of each pattern on {P} processes",
            xlabel="pattern", ylabel="B_p, mean over lengths [MB/s, 10^6 B/s]",
            series=tuple(Series(name, np.array(at, dtype=np.float64),
                                np.array([patterns[i].b_MBps for i in at]))
                         for kind, name in kinds
                         if (at := [i for i, p in enumerate(patterns) if p.kind == kind])),
            kind=BAR, xlog=False, ylog=False, categories=pattern_names(patterns),
            note="a colour per kind of pattern: b_eff averages each kind (logarithmically) "
                 "over its patterns",
            higher_is_better=True, subject=own, section=own))
    out.append(Chart(
        id="b_eff/latency", title=f"latencies on {P} processes", xlabel="",
        ylabel="latency [µs]",
        series=(Series("latency", np.arange(3), np.array(
            [s.latency_us, s.latency_ring_us, s.pingpong_latency_us])),),
        kind=BAR, xlog=False, ylog=False,
        categories=("rings & random", "rings only", "ping-pong (half round trip)"),
        higher_is_better=False, subject=own, section=own))
    return out


class BeffView:
    """b_eff's renderers: rich tables, b_eff 3.6's .sum table (``sum``), b_eff per message
    length as CSV, and the summary as JSON."""

    csv_fields = CSV_FIELDS
    footer_first = True

    def text_header(self, record: RunRecord) -> str:
        return ""

    def text(self, result: BeffRecord | StoredSummary, record: RunRecord) -> str:
        return sum_text(summary_of(result))

    def text_footer(self, record: RunRecord) -> str:
        return ""

    def table(self, result: BeffRecord | StoredSummary, record: RunRecord,
              console: Console) -> None:
        render(summary_of(result), console)

    def csv_rows(self, result: BeffRecord | StoredSummary) -> list[dict[str, Any]]:
        s = summary_of(result)
        return [{"bytes": r.bytes, "b_eff_MBps": r.b_eff_MBps, "ring_MBps": r.ring_MBps,
                 "random_MBps": r.random_MBps, "b_eff_per_process_MBps": r.b_eff_MBps / s.nprocs}
                for r in s.per_length]

    def summary(self, result: BeffRecord | StoredSummary, record: RunRecord) -> dict[str, Any]:
        return summary_of(result).to_json()

    def result_warnings(self, result: BeffRecord | StoredSummary,
                        record: RunRecord) -> list[str]:
        return []  # b_eff's own warnings are part of its summary and its table

    def figures(self, result: BeffRecord | StoredSummary) -> list[tuple[str, float, bool]]:
        s = summary_of(result)
        return [(name, float(getattr(s, name)), up) for name, up in FIGURES]

    def figure_label(self, name: str) -> str:
        """A headline figure's name in words (:data:`FIGURE_WORDS`)."""
        return FIGURE_WORDS.get(name, name)

    def settings(self, result: BeffRecord | StoredSummary) -> list[tuple[str, Any]]:
        s = summary_of(result)
        return [(name, getattr(s, key)) for name, key in CHECKED]

    def charts(self, result: BeffRecord | StoredSummary, record: RunRecord) -> list[Chart]:
        return charts(result)


VIEW = BeffView()


def beff_summary(record: RunRecord) -> dict[str, Any] | None:
    """The b_eff figures of a ``beff run`` file (None for other files)."""
    result = record.result("beff")
    return None if result is None else summary_of(result).to_json()
