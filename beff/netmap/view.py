"""``beff map``'s view: rich tables (the plan, the figures, the worst pairs and nodes, and the
named outliers as one list), one CSV row per measured pair, and a JSON summary with the
matrices of small maps; for ``beff report`` and ``beff plot``, the matrices as heatmaps with
the named outliers outlined, and the per-rank sums as bars."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from rich import box
from rich.console import Console

from beff.netmap.options import size_text
from beff.netmap.outliers import (
    ACROSS,
    BANDWIDTH,
    LATENCY,
    WITHIN,
    Finding,
    consequence,
    placement_note,
)
from beff.netmap.record import MATRIX_MAX, MapRecord, Pairs, pairs
from beff.render.charts import BAR, HEATMAP, Chart, Matrix, Series
from beff.render.tables import Table
from beff.results.model import RunRecord

MB = 1e6
US = 1e6
WORST = 10  # rows of the worst pairs and nodes
JSON_MATRIX_MAX = 64  # the JSON summary holds the matrices up to this many mapped ranks
SHOWN_MATRIX_MAX = 16  # the table prints them up to this many
CHART_MAX = 64  # bars of the per-rank sums up to this many mapped ranks
HEATMAP_LABELS = 64  # a heatmap names at most this many nodes per axis (every k-th beyond)
CSV_FIELDS = ("shift", "sender", "receiver", "sender_rank", "receiver_rank", "sender_host",
              "receiver_host", "across_nodes", "samples", "send_MBps", "recv_MBps",
              "recv_MBps_min", "recv_MBps_max", "latency_us", "latency_us_min",
              "latency_us_max")


def _num(x: Any, digits: int = 3) -> float | None:
    """A JSON number (None for NaN), rounded to ``digits`` decimals."""
    x = float(x)
    return round(x, digits) if math.isfinite(x) else None


def _fmt(x: float, scale: float) -> str:
    return f"{x * scale:,.1f}" if math.isfinite(x) else "-"


def _quiet(func: Any, *args: Any, **kw: Any) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return func(*args, **kw)


def finding_text(f: Finding, rec: MapRecord) -> str:
    """One line of the outlier list."""
    where = " (within a node)" if f.scope == WITHIN else ""
    if f.kind == "link":
        a, b = rec.label(f.rank), rec.label(f.peer)
        if f.figure == BANDWIDTH:
            return (f"link {a} -> {b}{where}: {f.value / MB:,.1f} MB/s, {f.ratio:.1f}x below "
                    f"the {f.reference / MB:,.1f} MB/s its two ends reach with others (one "
                    "entry is low)")
        return (f"link {a} -> {b}{where}: {f.value * US:,.1f} us half round trip, "
                f"{f.ratio:.1f}x above the {f.reference * US:,.1f} us its two ends reach "
                "with others (one entry is high)")
    name = rec.label(f.rank)
    if f.figure == BANDWIDTH:
        what = {"send": "sends at most", "receive": "receives at most",
                "both": "sends or receives at most"}[f.side]
        pattern = {"send": "its whole row is low", "receive": "its whole column is low",
                   "both": "its row and its column are low"}[f.side]
        return (f"node {name}{where}: {what} {f.value / MB:,.1f} MB/s with any partner, "
                f"{f.ratio:.1f}x below the reference {f.reference / MB:,.1f} MB/s ({pattern})")
    what = {"send": "its round trips take", "receive": "round trips it answers take",
            "both": "round trips to and from it take"}[f.side]
    pattern = {"send": "its whole row is high", "receive": "its whole column is high",
               "both": "its row and its column are high"}[f.side]
    return (f"node {name}{where}: {what} at least {f.value * US:,.1f} us (half), "
            f"{f.ratio:.1f}x above the reference {f.reference * US:,.1f} us ({pattern})")


def named(rec: MapRecord) -> tuple[list[str], list[tuple[str, str]]]:
    """The nodes and the links named (labels), each once, in the order of the list."""
    nodes: list[str] = []
    links: list[tuple[str, str]] = []
    for f in rec.findings():
        if f.kind == "node" and rec.label(f.rank) not in nodes:
            nodes.append(rec.label(f.rank))
        elif f.kind == "link" and (rec.label(f.rank), rec.label(f.peer)) not in links:
            links.append((rec.label(f.rank), rec.label(f.peer)))
    return nodes, links


def note_of(rec: MapRecord, attrs: dict[str, Any] | None) -> str:
    """Why this run's pair figures judge no link ("": they do), from its placement (the
    mapped ranks' nodes where the run's attributes lack it)."""
    where = (attrs or {}).get("placement") or {}
    nodes = int(where.get("nodes", len({int(n) for n in rec.node})))
    return placement_note(nodes, bool(where.get("oversubscribed", False)))


def plan_line(rec: MapRecord) -> str:
    K, P = len(rec.shifts), rec.nmapped
    who = "every rank" if rec.all_ranks else f"{rec.per_node} per node"
    shifts = (f"all {P - 1} shifts" if K == P - 1 else
              f"{K} of {P - 1} shifts (seed {rec.seed})")
    done = "" if rec.complete else \
        f" ({rec.passes_done} of {2 * rec.repetitions} passes measured so far)"
    return (f"{P} of {rec.nprocs} ranks mapped ({who}); {shifts}; {rec.repetitions} "
            f"samples per pair{done}; bandwidth: {rec.window} x {size_text(rec.size)} per sample; "
            f"latency: {rec.rounds} round trips of {size_text(rec.latency_size)}")


def _figures(p: Pairs) -> list[tuple[str, str, str, int, np.ndarray, float]]:
    """(scope, JSON key, figure, pairs, per-pair medians, scale) of every scope with pairs."""
    out = []
    measured = p.measured
    for scope, mask in ((ACROSS, p.across), (WITHIN, ~p.across)):
        m = mask & measured
        if not m.any():
            continue
        for key, name, samples, scale in (
                ("recv_MBps", "receive bandwidth, MB/s", p.recv_bw, 1 / MB),
                ("send_MBps", "send bandwidth, MB/s", p.send_bw, 1 / MB),
                ("latency_us", "latency (half round trip), us", p.latency, US)):
            out.append((scope, key, name, int(m.sum()), samples[m], scale))
    return out


def render(rec: MapRecord, console: Console, attrs: dict[str, Any] | None = None) -> None:
    p = pairs(rec)
    console.print(f"[bold]beff map[/bold]: {plan_line(rec)}", highlight=False)
    note = note_of(rec, attrs)
    if note:
        console.print(f"[bold yellow]note:[/bold yellow] {consequence(note, rec.outlier_figures)}",
                      highlight=False, soft_wrap=True)
    t = Table(title="pairs: the median over pairs of each pair's median", box=box.SIMPLE_HEAD)
    for col in ("pairs", "figure", "count", "median", "min", "max"):
        t.add_column(col, justify="left" if col in ("pairs", "figure") else "right")
    for scope, _, name, count, values, scale in _figures(p):
        t.add_row(scope, name, str(count), _fmt(_quiet(np.nanmedian, values), scale),
                  _fmt(_quiet(np.nanmin, values), scale), _fmt(_quiet(np.nanmax, values), scale))
    console.print(t)
    _worst_pairs(rec, p, console)
    _worst_nodes(rec, p, console)
    if rec.recv_bw is not None and rec.nmapped <= SHOWN_MATRIX_MAX:
        _matrix(rec, rec.recv_bw, "receive bandwidth, MB/s (row: sender, column: receiver)",
                1 / MB, console)
        assert rec.latency is not None
        _matrix(rec, rec.latency, "latency (half round trip), us (row: pinging, "
                "column: answering)", US, console)
    _outliers(rec, console, note)


def _worst_pairs(rec: MapRecord, p: Pairs, console: Console) -> None:
    recv, send, lat = p.recv_bw, p.send_bw, p.latency
    lo, hi = p.recv_min, p.recv_max
    for title, key in (("worst pairs by receive bandwidth", recv),
                       ("worst pairs by latency", -lat)):
        order = [i for i in np.argsort(key, kind="stable") if math.isfinite(key[i])][:WORST]
        if not order:
            continue
        t = Table(title=title, box=box.SIMPLE_HEAD)
        for col in ("sender", "receiver", "shift", "recv MB/s", "min-max", "send MB/s",
                    "latency us"):
            t.add_column(col, justify="left" if col in ("sender", "receiver") else "right")
        for i in order:
            t.add_row(rec.label(int(p.sender[i])), rec.label(int(p.receiver[i])),
                      str(int(p.shift[i])), _fmt(recv[i], 1 / MB),
                      f"{_fmt(lo[i], 1 / MB)}-{_fmt(hi[i], 1 / MB)}", _fmt(send[i], 1 / MB),
                      _fmt(lat[i], US))
        console.print(t)


def node_rows(rec: MapRecord, p: Pairs) -> list[dict[str, Any]]:
    """Per mapped rank: its sums, its best pair as sender and as receiver (bandwidth, B/s),
    its median latency (s) over its pairs."""
    P = rec.nmapped
    best = p.recv_bw  # the matrix's cells, as the outliers are judged
    lat = p.latency
    row_best, col_best = np.full(P, np.nan), np.full(P, np.nan)
    ok = np.isfinite(best)
    np.fmax.at(row_best, p.sender[ok], best[ok])
    np.fmax.at(col_best, p.receiver[ok], best[ok])
    lat_of: list[list[float]] = [[] for _ in range(P)]
    for i in np.flatnonzero(np.isfinite(lat)):
        lat_of[int(p.sender[i])].append(float(lat[i]))
        lat_of[int(p.receiver[i])].append(float(lat[i]))
    send_sum = rec.send_sum if rec.send_sum is not None else np.zeros(P)
    recv_sum = rec.recv_sum if rec.recv_sum is not None else np.zeros(P)
    return [{"rank": int(rec.world_rank[i]), "host": rec.hosts[i], "node": int(rec.node[i]),
             "send_sum": float(send_sum[i]), "recv_sum": float(recv_sum[i]),
             "best_as_sender": float(row_best[i]), "best_as_receiver": float(col_best[i]),
             "latency": float(np.median(lat_of[i])) if lat_of[i] else math.nan}
            for i in range(P)]


def _json_rank(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key == "latency":
            out["latency_us"] = _num(value * US)
        elif isinstance(value, float):
            out[f"{key}_MBps"] = _num(value / MB)
        else:
            out[key] = value
    return out


def _worst_nodes(rec: MapRecord, p: Pairs, console: Console) -> None:
    rows = node_rows(rec, p)
    order = sorted(range(len(rows)), key=lambda i: min(rows[i]["send_sum"],
                                                       rows[i]["recv_sum"]))[:WORST]
    t = Table(title="worst nodes by receive bandwidth summed over their partners (as sender, "
              "as receiver)", box=box.SIMPLE_HEAD)
    for col in ("node", "sent sum MB/s", "received sum MB/s", "best as sender",
                "best as receiver", "median latency us"):
        t.add_column(col, justify="left" if col == "node" else "right")
    for i in order:
        r = rows[i]
        t.add_row(rec.label(i), _fmt(r["send_sum"], 1 / MB), _fmt(r["recv_sum"], 1 / MB),
                  _fmt(r["best_as_sender"], 1 / MB), _fmt(r["best_as_receiver"], 1 / MB),
                  _fmt(r["latency"], US))
    console.print(t)


def _matrix(rec: MapRecord, matrix: np.ndarray, title: str, scale: float,
            console: Console) -> None:
    t = Table(title=title, box=box.SIMPLE_HEAD)
    t.add_column("")
    for j in range(rec.nmapped):
        t.add_column(rec.label(j), justify="right")
    for i in range(rec.nmapped):
        t.add_row(rec.label(i), *(_fmt(float(x), scale) for x in matrix[i]))
    console.print(t)


def _outliers(rec: MapRecord, console: Console, note: str = "") -> None:
    found = rec.findings()
    if rec.outlier_figures == "none":
        why = "pair figures here do not judge links; " if note else ""
        console.print(f"outliers: none looked for ({why}--outliers both names them)",
                      highlight=False, soft_wrap=True)
        return
    what = {"both": "bandwidth and latency"}.get(rec.outlier_figures, rec.outlier_figures)
    if not found:
        console.print(f"outliers by {what}: none named ({rec.rule})", highlight=False,
                      soft_wrap=True)
        return
    console.print(f"[bold]outliers by {what}[/bold] ({rec.rule}):", highlight=False,
                  soft_wrap=True)
    for f in found:
        console.print(f"  {finding_text(f, rec)}", highlight=False, soft_wrap=True)


def summary(rec: MapRecord, attrs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON entry: the plan, the figures, whether they judge links (``placement_note``:
    why not), the named outliers, the nodes, the worst pairs and, up to JSON_MATRIX_MAX
    mapped ranks, the matrices."""
    p = pairs(rec)
    note = note_of(rec, attrs)
    nodes, links = named(rec)
    figures: dict[str, dict[str, Any]] = {}
    for scope, key, _, count, values, scale in _figures(p):
        figures.setdefault(scope, {"pairs": count})[key] = {
            stat: _num(_quiet(fn, values) * scale)
            for stat, fn in (("median", np.nanmedian), ("min", np.nanmin), ("max", np.nanmax))}
    recv = p.recv_bw
    worst = [i for i in np.argsort(recv, kind="stable") if math.isfinite(recv[i])][:WORST]
    out: dict[str, Any] = {
        "nprocs": rec.nprocs, "nmapped": rec.nmapped, "per_node": rec.per_node,
        "all_ranks": rec.all_ranks, "seed": rec.seed,
        "shifts": [int(k) for k in rec.shifts], "passes_done": rec.passes_done,
        "size_bytes": rec.size, "window": rec.window, "latency_size_bytes": rec.latency_size,
        "rounds": rec.rounds, "repetitions": rec.repetitions, "budget_s": rec.budget_s,
        "over_budget": rec.over_budget, "runtime_s": _num(rec.runtime_s),
        "hosts": list(rec.hosts), "figures": figures, "rule": rec.rule,
        "outlier_figures": rec.outlier_figures, "links_judged": not note,
        "placement_note": consequence(note, rec.outlier_figures) if note else None,
        "outliers": [{**{k: _num(v, 9) if isinstance(v, float) else v
                         for k, v in f.to_json().items()},
                      "node": rec.label(f.rank),
                      "peer_node": rec.label(f.peer) if f.peer >= 0 else None,
                      "text": finding_text(f, rec)} for f in rec.findings()],
        "named_nodes": nodes, "named_links": [list(link) for link in links],
        "ranks": [_json_rank(row) for row in node_rows(rec, p)],
        "nodes": _node_sums(rec),
        "worst_pairs": [{"sender": rec.label(int(p.sender[i])),
                         "receiver": rec.label(int(p.receiver[i])), "shift": int(p.shift[i]),
                         "recv_MBps": _num(recv[i] / MB)} for i in worst],
    }
    out["matrices"] = None
    if rec.nmapped <= JSON_MATRIX_MAX:
        out["matrices"] = {name: [[_num(x * scale) for x in row] for row in matrix]
                           for name, (matrix, scale) in _matrices(rec).items()}
    return out


def _node_sums(rec: MapRecord) -> list[dict[str, Any]]:
    """Per node with mapped ranks: its hosts and its ranks' bandwidth sums (MB/s)."""
    if rec.node_send_sum is None or rec.node_recv_sum is None:
        return []
    out = []
    for n in sorted({int(x) for x in rec.node}):
        hosts = sorted({rec.hosts[i] for i in np.flatnonzero(rec.node == n)})
        out.append({"node": n, "hosts": hosts,
                    "send_sum_MBps": _num(rec.node_send_sum[n] / MB),
                    "recv_sum_MBps": _num(rec.node_recv_sum[n] / MB)})
    return out


def _matrices(rec: MapRecord) -> dict[str, tuple[np.ndarray, float]]:
    found = {"send_MBps": (rec.send_bw, 1 / MB), "recv_MBps": (rec.recv_bw, 1 / MB),
             "latency_us": (rec.latency, US)}
    return {k: (m, s) for k, (m, s) in found.items() if m is not None}


def _marks(rec: MapRecord, figure: str) -> tuple[np.ndarray, list[int], list[int], list[str]]:
    """Where the outliers named by ``figure`` (bandwidth or latency) lie in the matrices:
    cells, whole rows, whole columns; and what they are, in words. A node is its row (as the
    sender or pinging rank), its column (as the receiver or answering one) or both, over the
    pairs of its finding's scope: the whole row where every other rank is in that scope,
    its cells otherwise; a link is one cell."""
    P = rec.nmapped
    node = np.asarray(rec.node)
    off = ~np.eye(P, dtype=bool)
    scopes = {ACROSS: node[:, None] != node[None, :],
              WITHIN: (node[:, None] == node[None, :]) & off}
    cells = np.zeros((P, P), dtype=bool)
    rows: list[int] = []
    cols: list[int] = []
    words: list[str] = []
    for f in rec.findings():
        if f.figure != figure:
            continue
        if f.kind == "link":
            cells[f.rank, f.peer] = True
            words.append(f"link {rec.label(f.rank)} -> {rec.label(f.peer)}")
            continue
        scope = scopes[f.scope]
        whole = bool((scope | ~off)[f.rank].all())
        sides = {"send": ("row",), "receive": ("column",), "both": ("row", "column")}[f.side]
        for side in sides:
            if side == "row" and whole:
                rows.append(f.rank)
            elif side == "row":
                cells[f.rank] |= scope[f.rank]
            elif whole:
                cols.append(f.rank)
            else:
                cells[:, f.rank] |= scope[:, f.rank]
        words.append(f"node {rec.label(f.rank)} (its {' and '.join(sides)})")
    return cells, list(dict.fromkeys(rows)), list(dict.fromkeys(cols)), words


def heatmaps(rec: MapRecord, note: str = "") -> list[Chart]:
    """The receive and send bandwidth matrices and the latency matrix as heatmaps, the
    outliers named by each figure outlined (the send bandwidth's: none, outliers are named
    from the receive bandwidth); every k-th node labelled above HEATMAP_LABELS mapped ranks.
    Above MATRIX_MAX the record holds no matrix: one chart without cells says so."""
    P = rec.nmapped
    if P == 0:
        return []
    if rec.recv_bw is None or rec.latency is None:
        return [Chart(
            id="map/matrices", title="the pairs' matrices: not stored", xlabel="", ylabel="",
            series=(), kind=HEATMAP, subject="map", section="beff map",
            note=f"No heatmap: {P} ranks were mapped, and the P x P matrices are stored up to "
            f"{MATRIX_MAX} (beyond, only the measured shifts are: {P} x {P} cells would not "
            "be readable either). beff show lists the worst pairs and nodes and the named "
            "outliers.")]
    names = tuple(rec.label(i) for i in range(P))
    every = max(1, math.ceil(P / HEATMAP_LABELS))
    labelled = f"; one node in {every} labelled" if every > 1 else ""
    grey = "grey: no value (the diagonal: no pair" + \
        ("" if rec.complete and len(rec.shifts) == P - 1 else "; or not measured") + ")"
    shifts = f"{len(rec.shifts)} of {P - 1} shifts"

    def named_text(figure: str, words: list[str]) -> str:
        if rec.outlier_figures == "none":
            return f"no outliers looked for ({note})" if note else "no outliers looked for"
        if rec.outlier_figures not in ("both", figure):
            return f"outliers by {figure} not looked for (--outliers {rec.outlier_figures})"
        if not words:
            return f"no outlier named by {figure}"
        return f"outlined: named by {figure}: " + ", ".join(words)

    def heatmap(cid: str, title: str, matrix: np.ndarray, unit: str, xlabel: str,
                ylabel: str, higher: bool, figure: str | None, note: str) -> Chart:
        cells = np.zeros((P, P), dtype=bool)
        rows: list[int] = []
        cols: list[int] = []
        if figure is not None:
            cells, rows, cols, words = _marks(rec, figure)
            note = f"{note}; {named_text(figure, words)}"
        return Chart(
            id=cid, title=f"{title} ({shifts})", xlabel=xlabel, ylabel=ylabel, series=(),
            kind=HEATMAP, higher_is_better=higher, subject="map", section="beff map",
            marked_label="named outlier", note=f"{note}; {grey}{labelled}",
            matrix=Matrix(matrix, names, names, unit, marked=cells, marked_rows=tuple(rows),
                          marked_cols=tuple(cols), label_every=every))

    out = [heatmap("map/recv_bw", "receive bandwidth per pair", rec.recv_bw / MB,
                   "receive bandwidth [MB/s, 10^6 B/s]", "receiver", "sender", True,
                   BANDWIDTH, "row: the sender, column: the receiver; each pair's median "
                   "over its samples, timed by the receiver")]
    if rec.send_bw is not None:
        out.append(heatmap(
            "map/send_bw", "send bandwidth per pair", rec.send_bw / MB,
            "send bandwidth [MB/s, 10^6 B/s]", "receiver", "sender", True, None,
            "row: the sender, column: the receiver; each pair's median over its samples, "
            "timed by the sender until its sends completed (outliers are named from the "
            "receive bandwidth)"))
    out.append(heatmap(
        "map/latency", "latency per pair", rec.latency * US,
        "latency, half a round trip [µs]", "answering", "pinging", False, LATENCY,
        f"row: the pinging rank, column: the answering one; half a round trip of "
        f"{size_text(rec.latency_size)}, each pair's median over its samples (each the median "
        f"of {rec.rounds} round trips)"))
    return out


class MapView:
    """``beff map``'s renderers (no original text: mpiGraph's is not reproduced)."""

    csv_fields = CSV_FIELDS
    footer_first = False

    def text_header(self, record: RunRecord) -> str:
        return ""

    def text(self, result: MapRecord, record: RunRecord) -> str:
        return ""

    def text_footer(self, record: RunRecord) -> str:
        return ""

    def table(self, result: MapRecord, record: RunRecord, console: Console) -> None:
        render(result, console, record.attrs)

    def csv_rows(self, result: MapRecord) -> list[dict[str, Any]]:
        p = pairs(result)
        send, recv, lat = p.send_bw, p.recv_bw, p.latency
        lo_bw, hi_bw, lo_lat, hi_lat = p.recv_min, p.recv_max, p.latency_min, p.latency_max
        samples = p.samples
        rows = []
        for i in np.flatnonzero(p.measured):
            s, r = int(p.sender[i]), int(p.receiver[i])
            rows.append({
                "shift": int(p.shift[i]), "sender": s, "receiver": r,
                "sender_rank": int(result.world_rank[s]),
                "receiver_rank": int(result.world_rank[r]), "sender_host": result.hosts[s],
                "receiver_host": result.hosts[r], "across_nodes": int(p.across[i]),
                "samples": int(samples[i]), "send_MBps": _num(send[i] / MB),
                "recv_MBps": _num(recv[i] / MB), "recv_MBps_min": _num(lo_bw[i] / MB),
                "recv_MBps_max": _num(hi_bw[i] / MB), "latency_us": _num(lat[i] * US),
                "latency_us_min": _num(lo_lat[i] * US), "latency_us_max": _num(hi_lat[i] * US)})
        return rows

    def summary(self, result: MapRecord, record: RunRecord) -> dict[str, Any]:
        return summary(result, record.attrs)

    def result_warnings(self, result: MapRecord, record: RunRecord) -> list[str]:
        if not result.over_budget:
            return []
        return [f"the time budget of {result.budget_s:g} s was too short for 3 samples per "
                f"pair over {len(result.shifts)} shifts: 3 were measured"]

    def figures(self, result: MapRecord) -> list[tuple[str, float, bool]]:
        p = pairs(result)
        scope = p.across if p.across.any() else ~p.across
        recv = p.recv_bw[scope]
        lat = p.latency[scope]
        return [("recv_MBps_median", float(_quiet(np.nanmedian, recv)) / MB, True),
                ("recv_MBps_min", float(_quiet(np.nanmin, recv)) / MB, True),
                ("latency_us_median", float(_quiet(np.nanmedian, lat)) * US, False),
                ("latency_us_max", float(_quiet(np.nanmax, lat)) * US, False)]

    def settings(self, result: MapRecord) -> list[tuple[str, Any]]:
        return [("mapped ranks", result.nmapped), ("bandwidth message", result.size),
                ("window", result.window), ("latency message", result.latency_size),
                ("shifts", [int(k) for k in result.shifts])]

    def charts(self, result: MapRecord, record: RunRecord) -> list[Chart]:
        """The matrices as heatmaps (:func:`heatmaps`), and the per-rank sums as bars (up
        to CHART_MAX mapped ranks)."""
        out = heatmaps(result, note_of(result, record.attrs))
        if result.send_sum is None or result.recv_sum is None or \
                not 0 < result.nmapped <= CHART_MAX:
            return out
        x = np.arange(result.nmapped)
        return [*out, Chart(
            id="map/nodes", title=f"receive bandwidth summed over each rank's partners "
            f"({len(result.shifts)} of {result.nmapped - 1} shifts)", xlabel="mapped rank",
            ylabel="sum of the pairs' medians [MB/s, 10^6 B/s]",
            series=(Series("as the sender (its row)", x, result.send_sum / MB),
                    Series("as the receiver (its column)", x, result.recv_sum / MB)),
            kind=BAR, xlog=False, ylog=False,
            categories=tuple(result.label(i) for i in range(result.nmapped)),
            higher_is_better=True, subject="map", section="beff map")]

    def matrices(self, result: MapRecord) -> dict[str, np.ndarray]:
        """The P x P matrices in MB/s and us, [sender, receiver] (NaN: not measured);
        empty above MATRIX_MAX mapped ranks (only the measured shifts are stored)."""
        return {name: matrix * scale for name, (matrix, scale) in _matrices(result).items()}


VIEW = MapView()
