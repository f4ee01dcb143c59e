"""``beff map``'s result: the record it stores (``/map``), and the figures derived from it.

What is measured is stored in shift form: per measured shift ``k`` and mapped rank ``r``,
the samples of rank ``r`` (``[K, P, R]``, K shifts, P mapped ranks, R samples):

* ``send_time[s, r]``: the seconds until rank r's window of sends to ``(r + k) % P``
  completed;
* ``recv_time[s, r]``: the seconds until rank r's window from ``(r - k) % P`` arrived;
* ``latency_time[s, r]``: the median of ``rounds`` round trips (each timed) of rank r with
  ``(r + k) % P``, in seconds.

That is K x P x R numbers per figure, whatever P: at 10^6 ranks only the measured shifts are
stored (no P x P matrix). The issue this suite answers asks for the P x P matrices, the
per-node sums and the named outliers in the file too, for readers other than beff: they are
derived when the record is made (:func:`make_record`) and stored beside the samples,
the matrices only up to MATRIX_MAX mapped ranks.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from beff.netmap import outliers
from beff.netmap.outliers import ACROSS, BANDWIDTH, LATENCY, WITHIN, Finding, Rule
from beff.results.layout import Layout

MATRIX_MAX = 1024  # P x P matrices are stored up to this many mapped ranks (8 MiB each)


@dataclass
class MapRecord:
    """One ``beff map``: the plan, the samples in shift form, and what is derived from them
    (see the module docstring; times in s, bandwidths in B/s)."""

    suite: ClassVar[str] = "map"
    key: ClassVar[str] = "map"

    nprocs: int  # ranks in the job
    nmapped: int  # P: ranks mapped
    per_node: int  # ranks mapped per node (0: --all-ranks)
    seed: int
    size: int  # bytes per bandwidth message
    window: int  # bandwidth messages outstanding per sample
    latency_size: int  # bytes per ping and pong
    rounds: int  # round trips per latency sample
    budget_s: float
    max_repetitions: int
    repetitions: int  # R: samples per pair, from the budget
    over_budget: bool  # even 3 samples per pair exceed the budget
    calibration_s: float  # one bandwidth and one latency sample of the first shift
    passes_done: int  # passes over the shifts so far: R of latency, then R of bandwidth
    runtime_s: float
    threshold: float
    min_ratio: float
    # both, bandwidth, latency or none: whose outliers are named (--outliers auto is stored
    # as both, or as none where the placement judges no link: outliers.placement_note)
    outlier_figures: str
    hosts: list[str]  # [P] host of each mapped rank
    world_rank: np.ndarray  # [P] world rank of each mapped rank
    node: np.ndarray  # [P] node id of each mapped rank (the ranks table's)
    shifts: np.ndarray  # [K] the shifts, in measuring order
    send_time: np.ndarray  # [K, P, R]
    recv_time: np.ndarray  # [K, P, R]
    latency_time: np.ndarray  # [K, P, R]
    # Derived when the record is made (stored for other readers):
    # [P] per rank, over its partners, the sum of the pairs' median receive bandwidth: as
    # the sender (its row of recv_bw: what it delivered) and as the receiver (its column)
    send_sum: np.ndarray | None = None
    recv_sum: np.ndarray | None = None
    node_send_sum: np.ndarray | None = None  # [nodes] send_sum summed over a node's ranks
    node_recv_sum: np.ndarray | None = None
    send_bw: np.ndarray | None = None  # [P, P] median send bandwidth [sender, receiver]
    recv_bw: np.ndarray | None = None  # [P, P] median receive bandwidth [sender, receiver]
    latency: np.ndarray | None = None  # [P, P] median half round trip [pinging, answering]
    outliers: list[dict[str, Any]] = field(default_factory=list)
    rule: str = ""

    @property
    def all_ranks(self) -> bool:
        return self.per_node == 0

    @property
    def complete(self) -> bool:
        return self.passes_done == 2 * self.repetitions

    def findings(self) -> list[Finding]:
        return [Finding(**f) for f in self.outliers]

    def label(self, rank: int) -> str:
        """How output names a mapped rank: its host, or ``host:rank`` (its world rank) where
        a host may have more than one."""
        host = self.hosts[rank]
        if self.per_node == 1:
            return host
        return f"{host}:{int(self.world_rank[rank])}"


# Samples per block of shifts that :func:`pairs` turns into medians at once: its temporaries
# (bandwidths, a gathered copy) stay a few times 32 MiB, whatever the record's size.
BLOCK_SAMPLES = 1 << 22


@dataclass(frozen=True)
class Pairs:
    """Every measured pair, flattened in shift order: ``sender[i] -> receiver[i]`` in shift
    ``shift[i]``, with the median of its samples (NaN: none), all in the sender's
    convention."""

    shift: np.ndarray
    sender: np.ndarray
    receiver: np.ndarray
    send_bw: np.ndarray  # B/s, the pair's median
    recv_bw: np.ndarray
    latency: np.ndarray  # s, the median of its samples' half round trips
    across: np.ndarray  # bool: the two ranks are on different nodes
    recv_min: np.ndarray  # B/s, the pair's slowest and fastest receive bandwidth sample
    recv_max: np.ndarray
    latency_min: np.ndarray  # s
    latency_max: np.ndarray
    samples: np.ndarray  # the pair's receive bandwidth samples

    @property
    def measured(self) -> np.ndarray:
        """bool per pair: it has a sample."""
        out: np.ndarray = np.isfinite(self.recv_bw)
        return out


def _median(samples: np.ndarray) -> np.ndarray:
    """Per pair (a row): the median of its samples (NaN: none)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: not measured
        out: np.ndarray = np.nanmedian(samples, axis=-1)
    return out


def pairs(rec: MapRecord) -> Pairs:
    """The record's pairs and their medians (bandwidth = window x size / time; latency =
    half the sample's median round trip), computed a block of shifts at a time
    (:data:`BLOCK_SAMPLES`): rank 0 holds the record, and its derived figures add what is
    per pair (1 / R of it), not copies of every sample."""
    P, K = rec.nmapped, len(rec.shifts)
    shifts = np.asarray(rec.shifts, dtype=np.int64)
    ranks = np.arange(P, dtype=np.int64)
    R = rec.send_time.shape[2] if rec.send_time.ndim == 3 else 0
    volume = float(rec.window * rec.size)
    send_bw, recv_bw, latency, recv_min, recv_max, lat_min, lat_max = (
        np.full((K, P), np.nan) for _ in range(7))
    count = np.zeros((K, P), dtype=np.int64)
    step = max(1, BLOCK_SAMPLES // max(1, P * R))
    for lo in range(0, K, step):
        hi = min(K, lo + step)
        receiver = (ranks[None, :] + shifts[lo:hi, None]) % P
        # recv_time[s, r] is measured by the receiver r of the pair (r - k) -> r
        recv = np.take_along_axis(rec.recv_time[lo:hi], receiver[:, :, None], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: not measured
            send = rec.send_time[lo:hi]
            send_bw[lo:hi] = _median(np.where(send > 0, volume / send, np.nan))
            bw = np.where(recv > 0, volume / recv, np.nan)
            recv_bw[lo:hi] = _median(bw)
            recv_min[lo:hi], recv_max[lo:hi] = np.nanmin(bw, axis=-1), np.nanmax(bw, axis=-1)
            count[lo:hi] = np.isfinite(bw).sum(axis=-1)
            lat = rec.latency_time[lo:hi]
            half = np.where(lat > 0, lat / 2, np.nan)
            latency[lo:hi] = _median(half)
            lat_min[lo:hi], lat_max[lo:hi] = np.nanmin(half, axis=-1), np.nanmax(half, axis=-1)
    node = np.asarray(rec.node, dtype=np.int64)
    flat_s = np.tile(ranks, K)
    flat_r = ((ranks[None, :] + shifts[:, None]) % P).reshape(-1)
    return Pairs(np.repeat(shifts, P), flat_s, flat_r, send_bw.reshape(-1),
                 recv_bw.reshape(-1), latency.reshape(-1), node[flat_s] != node[flat_r],
                 recv_min.reshape(-1), recv_max.reshape(-1), lat_min.reshape(-1),
                 lat_max.reshape(-1), count.reshape(-1))


def analyze(rec: MapRecord, p: Pairs | None = None) -> list[Finding]:
    """The outliers of the record: receive bandwidth and latency, across nodes and within
    nodes apart (:mod:`beff.netmap.outliers`), each pair judged by the median of its
    samples, the figure the matrices show."""
    p = pairs(rec) if p is None else p
    rule = Rule(rec.threshold, rec.min_ratio)
    bw, lat = p.recv_bw, p.latency
    found: list[Finding] = []
    for scope, mask in ((ACROSS, p.across), (WITHIN, ~p.across)):
        if not mask.any():
            continue
        for figure, values in ((BANDWIDTH, bw), (LATENCY, lat)):
            if rec.outlier_figures not in ("both", figure):
                continue
            found += outliers.analyze(p.sender[mask], p.receiver[mask], values[mask],
                                      rec.nmapped, figure, rule, scope)
    order = {"node": 0, "link": 1}
    return sorted(found, key=lambda f: (order[f.kind], f.figure != BANDWIDTH))


def derive(rec: MapRecord) -> None:
    """Fill the record's derived fields from its samples."""
    p = pairs(rec)
    P = rec.nmapped
    send_med, recv_med, lat_med = p.send_bw, p.recv_bw, p.latency
    rec.send_sum = np.zeros(P)
    rec.recv_sum = np.zeros(P)
    np.add.at(rec.send_sum, p.sender, np.nan_to_num(recv_med))
    np.add.at(rec.recv_sum, p.receiver, np.nan_to_num(recv_med))
    nodes = int(np.max(rec.node)) + 1 if P else 0
    rec.node_send_sum = np.zeros(nodes)
    rec.node_recv_sum = np.zeros(nodes)
    np.add.at(rec.node_send_sum, rec.node, rec.send_sum)
    np.add.at(rec.node_recv_sum, rec.node, rec.recv_sum)
    if P <= MATRIX_MAX:
        rec.send_bw, rec.recv_bw, rec.latency = (np.full((P, P), np.nan) for _ in range(3))
        for matrix, values in ((rec.send_bw, send_med), (rec.recv_bw, recv_med),
                               (rec.latency, lat_med)):
            matrix[p.sender, p.receiver] = values
    else:
        rec.send_bw = rec.recv_bw = rec.latency = None
    rec.outliers = [f.to_json() for f in analyze(rec, p)]
    rec.rule = Rule(rec.threshold, rec.min_ratio).describe()


LAYOUT = Layout(
    group="map", cls=MapRecord,
    scalars=("nprocs", "nmapped", "per_node", "seed", "size", "window", "latency_size",
             "rounds", "budget_s", "max_repetitions", "repetitions", "over_budget",
             "calibration_s", "passes_done", "runtime_s", "threshold", "min_ratio",
             "outlier_figures", "rule"),
    names={"hosts": "host of each mapped rank"},
    arrays={
        "world_rank": ("1", "[P] world rank of each mapped rank"),
        "node": ("1", "[P] node id of each mapped rank (as in /ranks)"),
        "shifts": ("1", "[K] the shifts measured, in order: rank r sends to (r + k) % P"),
        "send_time": ("s", "[K, P, R] rank r: until its window of sends to (r + k) % P "
                      "completed (NaN: not measured)"),
        "recv_time": ("s", "[K, P, R] rank r: until its window from (r - k) % P arrived"),
        "latency_time": ("s", "[K, P, R] rank r: the median of its `rounds` round trips with "
                         "(r + k) % P"),
        "send_sum": ("B/s", "[P] derived: the rank's row sum of recv_bw (what it delivered)"),
        "recv_sum": ("B/s", "[P] derived: the rank's column sum of recv_bw (what it got)"),
        "node_send_sum": ("B/s", "[nodes] derived: send_sum summed over the node's ranks"),
        "node_recv_sum": ("B/s", "[nodes] derived: recv_sum summed over the node's ranks"),
        "send_bw": ("B/s", "[P, P] derived: median send bandwidth [sender, receiver] "
                    "(NaN: not measured; only up to 1024 mapped ranks)"),
        "recv_bw": ("B/s", "[P, P] derived: median receive bandwidth [sender, receiver]"),
        "latency": ("s", "[P, P] derived: median half round trip [pinging, answering]"),
    },
    bools=("over_budget",), json=("outliers",),
)
