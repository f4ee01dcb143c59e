"""``beff compare A.h5 B.h5``: per-size ratios of two runs, each tested (no MPI).

For IMB-style results, every (benchmark, mode, np, size) both runs measured is one row (per
group of ``-multi 1`` runs: group k with group k where both have it, whatever their numbers of
groups): the ratio t_avg(B) / t_avg(A) with its bootstrap interval, and a Mann-Whitney U test
of the two runs' batch t_avg values (one value per batch: the batches are the independent
draws; the ranks within a batch are not, so pooling them would fake precision). The p-values
are corrected for the number of rows by Holm's method, and a row says "faster" or "slower" only
where the corrected p is at most alpha (``beff compare --alpha``, 0.05): with probability at
least 1 - alpha no row of the whole comparison is called different when the runs are not.
Why these choices: ``share/docs/statistics.md``. b_eff and b_eff_io store no batch samples
here: their headline figures are compared as ratios only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.text import Text

from beff.core import suite as suites
from beff.render.common import _clean
from beff.render.tables import Table
from beff.render.view import view_of
from beff.results import stats
from beff.results.model import OK, Measurement, RunRecord

# Metadata that must match for a fair comparison (pyperf's "checked metadata" idea).
CHECKED = (("nprocs", lambda a: a.get("nprocs")),
           ("MPI library",
            lambda a: str(a.get("mpi", {}).get("library_version", "")).replace("\x00", "")
            .split("\n")[0].strip()),  # files written under Open MPI before: a NUL
           ("hosts", lambda a: a.get("placement", {}).get("hosts")),
           ("ranks per node", lambda a: a.get("placement", {}).get("ranks_per_node")),
           ("oversubscribed", lambda a: a.get("placement", {}).get("oversubscribed")),
           ("check mode", lambda a: bool(a.get("config", {}).get("check"))),
           # an imported text names none (files before the compiled loops: python)
           ("timed-loop backend", lambda a: None if "imported" in a
            else a.get("overhead", {}).get("backend", "python")),
           ("buffers", lambda a: "hugepage" if a.get("config", {}).get("hugepages")
            else "malloc-like"))
def kind_of_run(record: RunRecord) -> str:
    """What ran, as compare names it (two files compare only when it is the same)."""
    found = suites.find(record.suite)
    return found.label if found is not None else record.suite


ALPHA = 0.05
FASTER, SLOWER, SAME, UNTESTED = "faster", "slower", "no significant difference", "not tested"
# Rows whose collectives started differently (IMB's barrier, --sync window): the two times are
# not the same quantity, so no verdict unless asked (compare --across-policies).
POLICIES = "not tested: start policies differ"


def start_policy(m: Measurement) -> str:
    """How ``m``'s calls started: "barrier" (IMB's, and every file before the window policy)
    or "window" (beff.bench.window)."""
    return str(m.attrs.get("start_policy", "barrier"))


@dataclass
class Row:
    """One (benchmark, mode, np, size): t_avg of A and B (µs), B/A with its interval, the
    batches on each side, the test's p-value and Holm-corrected p, and the verdict for B."""

    benchmark: str
    nprocs: int
    nbytes: int
    a_us: float
    b_us: float
    ratio: float
    ratio_low: float = float("nan")
    ratio_high: float = float("nan")
    a_batches: int = 0
    b_batches: int = 0
    a_stable: bool | None = None
    b_stable: bool | None = None
    p: float = float("nan")
    p_holm: float = float("nan")
    verdict: str = UNTESTED
    mode: str = ""
    samples: bool = True  # both have samples (an imported result has none: not tested)
    group: int | None = None  # the group compared (-multi 1 runs: group k with group k)

    @property
    def significant(self) -> bool:
        return self.verdict in (FASTER, SLOWER)

    @property
    def name(self) -> str:
        """The benchmark, with its mode and group: "PingPong (group 1)"."""
        more = [self.mode] if self.mode else []
        more += [f"group {self.group}"] if self.group is not None else []
        return f"{self.benchmark} ({', '.join(more)})" if more else self.benchmark


def _unrecorded(attrs: dict[str, Any], value: Any) -> bool:
    """A setting an imported text does not record (IMB prints no MPI library, placement nor
    timed-loop backend): unknown, so not a difference."""
    return "imported" in attrs and value in (None, "")


def mismatches(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Checked metadata that differ between the two runs (not those an imported file does
    not record)."""
    out = []
    for name, get in CHECKED:
        va, vb = get(a), get(b)
        if va != vb and not (_unrecorded(a, va) or _unrecorded(b, vb)):
            out.append(f"{name} differs: {say(name, va)} vs {say(name, vb)}")
    return out


def say(name: str, value: Any) -> str:
    """A setting's value in words, for a line a person reads: no Python reprs."""
    if value is None or value == "":
        return "not recorded"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) if value else "none"
    if isinstance(value, int) and any(w in name for w in ("memory", "Lmax", "chunk", "bytes")):
        for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value >= scale:
                return f"{value / scale:,.4g} {unit}"
        return f"{value} B"
    if isinstance(value, float) and "time" in name:
        return f"{value:g} s"
    return str(value)


def unchecked(a: dict[str, Any], b: dict[str, Any], a_name: str = "A",
              b_name: str = "B") -> list[str]:
    """What :func:`mismatches` could not check because an imported file does not record it
    (one line per such file; none for two measured runs)."""
    out = []
    for attrs, other, name in ((a, b, a_name), (b, a, b_name)):
        missing = [what for what, get in CHECKED
                   if _unrecorded(attrs, get(attrs)) and not _unrecorded(other, get(other))]
        if missing:
            out.append(f"{name} is an imported text: it records no {', '.join(missing)}; "
                       "those are not compared")
    return out


@dataclass
class GroupMatch:
    """Two ``-multi 1`` results of one benchmark, mode and group size: their groups, and
    those compared (group k with group k, where both have it)."""

    benchmark: str
    mode: str
    nprocs: int
    a_groups: int
    b_groups: int
    compared: list[int]

    @property
    def line(self) -> str:
        name = f"{self.benchmark} ({self.mode})" if self.mode else self.benchmark
        k = self.compared
        which = f"group {k[0]}" if len(k) == 1 else f"groups {k[0]}-{k[-1]}"
        return (f"{name}, {self.nprocs} processes per group: {which} compared (A has "
                f"{self.a_groups} groups, B {self.b_groups})")


def _matches(a: RunRecord, b: RunRecord) -> Iterator[tuple[Measurement, Measurement,
                                                            list[int | None]]]:
    """The results of A and B that compare, with the groups compared: ``-multi 1`` runs
    group k with group k where both have it (whatever their numbers of groups), the others
    all ranks together where benchmark, mode, process count and groups match."""
    pooled = {(m.benchmark, m.mode, m.nprocs, m.ngroups): m for m in b.measurements}
    grouped = {(m.benchmark, m.mode, m.nprocs): m for m in b.measurements
               if m.table_groups != [None]}
    for ma in a.measurements:
        mb = grouped.get((ma.benchmark, ma.mode, ma.nprocs)) \
            if ma.table_groups != [None] else None
        if mb is not None:
            n = min(len(ma.table_groups), len(mb.table_groups))
            yield ma, mb, list(range(n))
            continue
        mb = pooled.get((ma.benchmark, ma.mode, ma.nprocs, ma.ngroups))
        # an imported -multi 1 table has a row per group and none for all ranks together
        if mb is not None and not any(m.printed and m.table_groups != [None]
                                      for m in (ma, mb)):
            yield ma, mb, [None]


def group_matches(a: RunRecord, b: RunRecord) -> list[GroupMatch]:
    """The ``-multi 1`` results compared group by group, and which groups."""
    return [GroupMatch(ma.benchmark, ma.mode, ma.nprocs, len(ma.table_groups),
                       len(mb.table_groups), [g for g in groups if g is not None])
            for ma, mb, groups in _matches(a, b) if groups != [None]]


def _pairs(a: RunRecord, b: RunRecord) -> Iterator[tuple[Any, Any]]:
    """The results of two files stored under the same key."""
    by_key = {r.key: r for r in b.results}
    for ra in a.results:
        if ra.key in by_key:
            yield ra, by_key[ra.key]


def setting_mismatches(a: RunRecord, b: RunRecord) -> list[str]:
    """The suite's settings that differ between the results of two files (e.g. b_eff's mode
    and memory per process), as the suite's view declares them."""
    va, vb = view_of(a), view_of(b)
    out = []
    for ra, rb in _pairs(a, b):
        sb = dict(vb.settings(rb))
        out += [f"{name} differs: {say(name, value)} vs {say(name, sb.get(name))}"
                for name, value in va.settings(ra) if sb.get(name) != value]
    return out


def compare_records(a: RunRecord, b: RunRecord, alpha: float = ALPHA,
                    across_policies: bool = False) -> list[Row]:
    """t_avg of B over t_avg of A for every (benchmark, mode, nprocs, size) both runs
    measured, each tested; Holm's correction runs over all the rows. Rows of results whose
    start policies differ get no test (:data:`POLICIES`) unless ``across_policies``."""
    rows: list[Row] = []
    up: list[bool] = []
    for ma, mb, groups in _matches(a, b):
        for g in groups:
            first = len(rows)
            _rows(ma, mb, g, rows, up)
            if start_policy(ma) != start_policy(mb) and not across_policies:
                for row in rows[first:]:
                    row.p, row.verdict = float("nan"), POLICIES
    for row, slower, p in zip(rows, up, stats.holm(np.array([r.p for r in rows])), strict=True):
        row.p_holm = float(p)
        if np.isfinite(p):
            row.verdict = SAME if p > alpha else SLOWER if slower else FASTER
    return rows


def policy_mismatches(a: RunRecord, b: RunRecord) -> list[str]:
    """The start policies of the results both files have, where they differ."""
    out = []
    for ma, mb, _ in _matches(a, b):
        pa, pb = start_policy(ma), start_policy(mb)
        if pa != pb:
            out.append(f"start policy differs: {ma.benchmark} ({ma.nprocs} processes) "
                       f"{pa} vs {pb}")
    return out


def _rows(ma: Measurement, mb: Measurement, g: int | None, rows: list[Row],
          up: list[bool]) -> None:
    """The rows of two results (of group ``g``, or all ranks), and the direction each test
    saw, appended to ``rows`` and ``up``."""
    sa, sb = stats.summarize(ma, g), stats.summarize(mb, g)
    ca, cb = stats.certainty(ma, g), stats.certainty(mb, g)
    sizes_b = {int(x): i for i, x in enumerate(mb.sizes)}
    for i, size in enumerate(ma.sizes):
        j = sizes_b.get(int(size))
        if j is None or ma.status[i] != OK or mb.status[j] != OK:
            continue
        ta, tb = float(sa.t_avg[i]), float(sb.t_avg[j])
        if not (np.isfinite(ta) and np.isfinite(tb)):  # imported IMB text: t only
            ta, tb = float(sa.t_max[i]), float(sb.t_max[j])
        if not (np.isfinite(ta) and np.isfinite(tb)):
            continue
        xa, xb = stats.batch_times(ma, i, g), stats.batch_times(mb, j, g)
        low, high = stats.ratio_interval(ma, i, mb, j, group=g)
        rows.append(Row(ma.benchmark, ma.nprocs, int(size), ta, tb,
                        tb / ta if ta > 0 else float("nan"), low, high, xa.size, xb.size,
                        ca.stable[i], cb.stable[j], stats.mann_whitney(xa, xb),
                        mode=ma.mode, samples=not (ma.printed or mb.printed), group=g))
        # The direction the test saw: the median of B's batch times less A's, over all
        # pairs (Hodges-Lehmann), not the ratio of means that one slow batch can turn.
        up.append(bool(xa.size and xb.size and np.median(np.subtract.outer(xb, xa)) > 0))


def compare_figures(a: RunRecord, b: RunRecord) -> list[tuple[str, float, float, bool]]:
    """The headline figures of two files' results of the same key (b_eff, b_eff_io): (name,
    A, B, larger is better). Empty for suites compared size by size. No samples come with
    them: the ratio only, untested."""
    va, vb = view_of(a), view_of(b)
    out = []
    for ra, rb in _pairs(a, b):
        fb = {name: value for name, value, _ in vb.figures(rb)}
        out += [(name, value, fb[name], up) for name, value, up in va.figures(ra) if name in fb]
    return out


# ----------------------------------------------------------------------------- documents
@dataclass
class Comparison:
    """All that ``beff compare`` says: what ran, the settings that differ (first), and the
    tested rows (IMB-style) or the headline figures (b_eff, b_eff_io)."""

    kind: str
    a_name: str
    b_name: str
    alpha: float
    differences: list[str]
    figures: list[tuple[str, float, float, bool]]
    rows: list[Row]
    groups: list[GroupMatch] = field(default_factory=list)  # -multi 1: groups compared
    notes: list[str] = field(default_factory=list)  # what could not be checked

    @classmethod
    def of(cls, a: RunRecord, b: RunRecord, a_name: str, b_name: str,
           alpha: float = ALPHA, across_policies: bool = False) -> Comparison:
        figures = compare_figures(a, b)
        rows = [] if figures else compare_records(a, b, alpha, across_policies)
        met = {(r.benchmark, r.mode, r.nprocs) for r in rows if r.group is not None}
        return cls(kind_of_run(a), a_name, b_name, alpha,
                   mismatches(a.attrs, b.attrs) + setting_mismatches(a, b)
                   + policy_mismatches(a, b), figures, rows,
                   [g for g in group_matches(a, b) if (g.benchmark, g.mode, g.nprocs) in met],
                   unchecked(a.attrs, b.attrs, a_name, b_name))

    @property
    def tested(self) -> int:
        return sum(bool(np.isfinite(r.p)) for r in self.rows)

    def counts(self) -> dict[str, int]:
        counts = {v: sum(r.verdict == v for r in self.rows)
                  for v in (SLOWER, FASTER, SAME, UNTESTED, POLICIES)}
        if not counts[POLICIES]:  # only runs of two start policies have such rows
            del counts[POLICIES]
        return counts

    def geometric_mean(self) -> tuple[float, int]:
        ratios = np.array([r.ratio for r in self.rows if np.isfinite(r.ratio) and r.ratio > 0])
        return (float(np.exp(np.log(ratios).mean())) if ratios.size else float("nan"),
                int(ratios.size))


METHOD = {
    "test": "Mann-Whitney U, two-sided, on the per-batch t_avg of each run (scipy; exact "
            "without ties)",
    "correction": "Holm (family-wise error rate over all tested rows)",
    "interval": f"{stats.CI_LEVEL:.0%} expanded-percentile bootstrap over batches "
                f"({stats.RESAMPLES} resamples, fixed seed), not corrected",
    "direction": "Hodges-Lehmann: the median of B's batch times less A's over all pairs",
    "min_batches": stats.MIN_BATCHES,
}


def json_doc(c: Comparison) -> dict[str, Any]:
    """The comparison as JSON: settings that differ first, the method, then the rows."""
    doc: dict[str, Any] = {"kind": c.kind, "a": c.a_name, "b": c.b_name,
                           "differences": c.differences}
    if c.notes:
        doc["notes"] = c.notes
    if c.figures:
        doc["note"] = "no samples: ratio only"
        doc["figures"] = [{"name": n, "a": va, "b": vb,
                           "ratio": vb / va if va else None, "higher_is_better": up}
                          for n, va, vb, up in c.figures]
        return doc
    gm, n = c.geometric_mean()
    doc.update({"alpha": c.alpha, "method": METHOD, "tested": c.tested,
                "verdicts": c.counts(), "geometric_mean_ratio": _clean(gm),
                "groups": [asdict(g) for g in c.groups],
                "rows": [{k: _clean(v) for k, v in asdict(r).items()} for r in c.rows]})
    return doc


def _ci(lo: float, hi: float) -> str:
    return "-" if not np.isfinite(lo) else f"{lo:.3f}–{hi:.3f}"


def _p(p: float) -> str:
    return "-" if not np.isfinite(p) else f"{p:.2g}" if p < 0.01 else f"{p:.3f}"


def print_report(c: Comparison, console: Console) -> None:
    """The comparison as rich text: the differing settings first, then the table and the
    verdicts."""
    if c.differences:
        console.print("[bold yellow]The runs differ in settings that change the figures; "
                      "differences below may come from them:[/bold yellow]")
    for text in c.differences:
        console.print(f"[bold yellow]warning:[/bold yellow] {text}")
    for text in c.notes:
        console.print(Text(f"note: {text}", style="dim"))
    if c.figures:
        t = Table(title=f"{c.kind}: B = {c.b_name} vs A = {c.a_name}",
                  caption="no samples: ratio only (untested). B/A > 1 is better for "
                          "bandwidths (MB/s), worse for latencies (µs)")
        for col in ("figure", "A", "B", "B/A", "B is"):
            t.add_column(col, justify="right")
        for name, va, vb, up in c.figures:
            ratio = vb / va if va else float("nan")
            verdict = "same" if abs(ratio - 1) < 1e-9 else (
                "better" if (ratio > 1) == up else "worse")
            t.add_row(name, f"{va:,.3f}", f"{vb:,.3f}", f"{ratio:.3f}", verdict)
        console.print(t)
        return
    t = Table(title=f"t_avg per iteration: B = {c.b_name} vs A = {c.a_name}",
              caption=f"B/A > 1: B is slower. {stats.CI_LEVEL:.0%} CI of B/A: bootstrap "
                      f"over the batches. p: Mann–Whitney U on the batches' t_avg, "
                      f"Holm-corrected over the {c.tested} rows tested; verdict at "
                      f"α = {c.alpha:g}. ! = that run's size is unstable (see beff show).",
              box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
    t.add_column("benchmark", overflow="fold")
    for col in ("np", "bytes", "A [µs]", "B [µs]", "B/A", f"{stats.CI_LEVEL:.0%} CI",
                "p (Holm)"):
        t.add_column(col, justify="right", no_wrap=True)
    t.add_column("B is", min_width=11)
    for r in c.rows:
        mark = "".join(f" {side}!" for side, ok in (("A", r.a_stable), ("B", r.b_stable))
                       if ok is False)
        style = {SLOWER: "red", FASTER: "green"}.get(r.verdict)
        shown = r.verdict if r.samples else "no samples"  # an imported text: ratio only
        called = Text.assemble((shown, style or "dim"), mark)  # no markup to read
        t.add_row(r.name, str(r.nprocs), f"{r.nbytes:,}", f"{r.a_us:.2f}", f"{r.b_us:.2f}",
                  f"{r.ratio:.3f}", _ci(r.ratio_low, r.ratio_high), _p(r.p_holm), called)
    console.print(t)
    for g in c.groups:  # -multi 1: which groups met
        console.print(Text(f"-multi 1: {g.line}"))
    n = c.counts()
    console.print(f"B is slower at {n[SLOWER]}, faster at {n[FASTER]} and not significantly "
                  f"different at {n[SAME]} of {c.tested} tested rows (α = {c.alpha:g}, "
                  f"Holm-corrected)"
                  + (f"; {n[UNTESTED]} rows not tested (no samples: an imported text, or "
                     f"fewer than {stats.MIN_BATCHES} batches)" if n[UNTESTED] else ""))
    gm, k = c.geometric_mean()
    if k:
        console.print(f"geometric mean of B/A over {k} sizes: {gm:.3f}")
