"""b_eff's results: the record ``beff run`` stores, and the figures derived from it.

The record holds what was measured and decided (the plan, per-rank bandwidth reductions,
loop lengths, pattern facts); :func:`summarize` derives b_eff and every other figure from it
with beff.patterns' reduction, whenever a report needs them. Nothing derived is stored.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from beff.patterns import final_line, memory_mib, reduce_beff
from beff.results.layout import Layout

MB = 1e6
# The warning a run of all ranks on one node earns (beff.results.warnings), in b_eff's words.
ONE_NODE = "all ranks ran on one node: b_eff measures shared memory here, not a network"


@dataclass
class BeffRecord:
    """One ``beff run``: b_eff 3.6's inputs and raw reductions (arrays are [rep, len, pat,
    method] unless said otherwise; bandwidths in bytes/s)."""

    suite: ClassVar[str] = "beff"
    key: ClassVar[str] = "beff"
    one_node_warning: ClassVar[str] = ONE_NODE  # for a file that predates stored warnings

    nprocs: int
    memory_per_proc: int
    memory_source: str
    lmax: int
    seed: int
    repetitions: int
    repetitions_done: int
    time_per_loop: float
    short: bool
    hugepages: bool
    methods: list[str]  # method names, in measuring order
    method_labels: list[str]
    official: list[bool]  # per method: enters b_eff
    labels: list[str]  # per pattern
    kinds: list[str]  # per pattern: ring, random, info
    pingpong_index: int  # the pattern of the 1-byte ping-pong pair (-1: none)
    uname: list[str]  # sysname, nodename, release, version, machine of rank 0
    lengths: np.ndarray  # [len] bytes
    bw_min: np.ndarray  # min over ranks of the per-rank bandwidth
    bw_avg: np.ndarray
    bw_max: np.ndarray
    scale: np.ndarray  # [pat] all_msg_cnt / sr_count of rank 0
    all_msg_cnt: np.ndarray
    sr_count: np.ndarray
    participate_cnt: np.ndarray
    looplng: np.ndarray  # [rep, len, method]
    loop_time: np.ndarray
    loop_min: np.ndarray
    loop_max: np.ndarray
    shortened: np.ndarray  # [rep] the 60-second rule fired
    best_method: np.ndarray  # [rep, pat]
    cross_node: np.ndarray  # [pat, 2]: messages sent per iteration over all ranks, crossing
    runtime_s: float = 0.0
    dims2: list[int] = field(default_factory=list)
    dims3: list[int] = field(default_factory=list)
    random_perm: np.ndarray | None = None  # [random pattern, rank]

    @property
    def mode(self) -> str:
        return "b_effSHORT" if self.short else "b_eff"

    def pattern_b(self) -> np.ndarray:
        """b[rep, len, pat, meth] in bytes/s: min over ranks times all_msg_cnt / sr_count."""
        b: np.ndarray = np.where(np.isfinite(self.bw_min), self.bw_min, 0.0)
        scaled: np.ndarray = b * self.scale[None, None, :, None]
        return scaled



LAYOUT = Layout(
    group="beff", cls=BeffRecord,
    scalars=("nprocs", "memory_per_proc", "memory_source", "lmax", "seed", "repetitions",
             "repetitions_done", "time_per_loop", "short", "hugepages", "pingpong_index",
             "runtime_s"),
    names={
        "methods": "method names, in measuring order",
        "method_labels": "method labels of b_eff 3.6's tables",
        "labels": "pattern labels",
        "kinds": "pattern kind: ring, random or info",
        "uname": "sysname, nodename, release, version, machine of rank 0",
    },
    arrays={
        "official": ("1", "per method: 1 if it enters b_eff"),
        "lengths": ("B", "message lengths L"),
        "bw_min": ("B/s", "[rep, L, pattern, method] min over ranks of L*looplng*sr_count/time"),
        "bw_avg": ("B/s", "[rep, L, pattern, method] mean over participating ranks"),
        "bw_max": ("B/s", "[rep, L, pattern, method] max over ranks"),
        "scale": ("1", "[pattern] all_msg_cnt / sr_count of rank 0"),
        "all_msg_cnt": ("1", "[pattern] messages per iteration over all ranks"),
        "sr_count": ("1", "[pattern] messages rank 0 sends per iteration"),
        "participate_cnt": ("1", "[pattern] participating ranks"),
        "looplng": ("1", "[rep, L, method] iterations per loop"),
        "loop_time": ("s", "[rep, L, method] rank 0's loop time summed over patterns"),
        "loop_min": ("s", "[rep, L, method] rank 0's shortest pattern loop"),
        "loop_max": ("s", "[rep, L, method] rank 0's longest pattern loop"),
        "shortened": ("1", "[rep] the 60-second rule shortened the two largest lengths"),
        "best_method": ("1", "[rep, pattern] method used at the shortened lengths (-1: all)"),
        "cross_node": ("1", "[pattern, 2] messages per iteration over all ranks, and those "
                       "crossing nodes"),
        "dims2": ("1", "2-d process grid"),
        "dims3": ("1", "3-d process grid"),
        "random_perm": ("1", "[random pattern, rank] the random permutations"),
    },
    bools=("short", "hugepages"), int_lists=("dims2", "dims3"), bool_arrays=("official",),
)

@dataclass(frozen=True)
class LengthFigures:
    """b_eff at one message length (accumulated, MB/s)."""

    bytes: int
    b_eff_MBps: float
    ring_MBps: float
    random_MBps: float


@dataclass(frozen=True)
class PatternFigures:
    """One pattern: its bandwidth B_p (mean over lengths, accumulated MB/s) and the share of
    its messages that cross nodes."""

    index: int
    label: str
    kind: str
    b_MBps: float
    cross_node_share: float


@dataclass(frozen=True)
class BeffSummary:
    """b_eff's figures derived from a record, under documented, stable keys
    (share/schema/README.md); :meth:`to_json` is the JSON view's entry."""

    mode: str
    nprocs: int
    memory_per_proc_bytes: int
    memory_per_proc_source: str
    lmax_bytes: int
    lengths: tuple[int, ...]
    seed: int
    repetitions: int
    time_per_loop_s: float
    buffers: str
    methods: tuple[str, ...]
    methods_in_b_eff: tuple[str, ...]
    b_eff_MBps: float
    b_eff_per_process_MBps: float
    b_eff_lmax_MBps: float
    b_eff_lmax_per_process_MBps: float
    ring_lmax_MBps: float
    ring_lmax_per_process_MBps: float
    b_ring_MBps: float
    b_random_MBps: float
    latency_us: float
    latency_ring_us: float
    latency_ring_text_us: float
    pingpong_latency_us: float
    pingpong_bandwidth_MBps: float
    per_length: tuple[LengthFigures, ...]
    patterns: tuple[PatternFigures, ...]
    shortened_repetitions: tuple[int, ...]
    runtime_s: float
    warnings: tuple[str, ...]
    final_line: str
    b_eff_all_methods_MBps: float | None = None  # only when opt-in methods ran

    def to_json(self) -> dict[str, Any]:
        """The JSON entry: every field (lists for tuples; null for a figure that is not a
        number, e.g. one an imported .sum does not print); the opt-in figure only when set."""
        out: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(self)),
                                         parse_constant=lambda _: None)
        if self.b_eff_all_methods_MBps is None:
            del out["b_eff_all_methods_MBps"]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BeffSummary:
        """A summary a file stored (schema 1); figures it lacks are NaN or empty."""
        nan = float("nan")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for name, f in fields.items():
            value = data.get(name)
            if name == "per_length":
                value = tuple(LengthFigures(**{k: r.get(k, nan) for k in
                                               ("bytes", "b_eff_MBps", "ring_MBps",
                                                "random_MBps")}) for r in value or ())
            elif name == "patterns":
                value = tuple(PatternFigures(**{k: p.get(k, d) for k, d in
                                                (("index", 0), ("label", ""), ("kind", ""),
                                                 ("b_MBps", nan),
                                                 ("cross_node_share", nan))})
                              for p in value or ())
            elif str(f.type).startswith("tuple"):
                value = tuple(value or ())
            elif value is None and name != "b_eff_all_methods_MBps":
                value = "" if f.type == "str" else nan
            kwargs[name] = value
        return cls(**kwargs)


def summarize(rec: BeffRecord) -> BeffSummary:
    """b_eff and every other figure, derived from the record with beff.patterns' reduction."""
    b = rec.pattern_b()
    official = [i for i, ok in enumerate(rec.official) if ok]
    res = reduce_beff(b[..., official], nprocs=rec.nprocs, kinds=rec.kinds,
                      lengths=[int(x) for x in rec.lengths],
                      pingpong_index=rec.pingpong_index if rec.pingpong_index >= 0 else None)
    P = rec.nprocs
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(rec.cross_node[:, 0] > 0, rec.cross_node[:, 1] / rec.cross_node[:, 0],
                         0.0)
    tag = "SHORT" if rec.short else ""
    all_methods = None
    if len(official) < len(rec.methods):
        all_methods = reduce_beff(b, nprocs=P, kinds=rec.kinds,
                                  lengths=[int(x) for x in rec.lengths]).b_eff / MB
    return BeffSummary(
        mode=rec.mode, nprocs=P, memory_per_proc_bytes=rec.memory_per_proc,
        memory_per_proc_source=rec.memory_source, lmax_bytes=rec.lmax,
        lengths=tuple(int(x) for x in rec.lengths), seed=rec.seed,
        repetitions=rec.repetitions, time_per_loop_s=rec.time_per_loop,
        buffers="hugepage" if rec.hugepages else "malloc-like", methods=tuple(rec.methods),
        methods_in_b_eff=tuple(rec.methods[i] for i in official),
        b_eff_MBps=res.b_eff / MB, b_eff_per_process_MBps=res.b_eff_per_process / MB,
        b_eff_lmax_MBps=res.b_eff_lmax / MB, b_eff_lmax_per_process_MBps=res.b_eff_lmax / MB / P,
        ring_lmax_MBps=res.ring_lmax / MB, ring_lmax_per_process_MBps=res.ring_lmax / MB / P,
        b_ring_MBps=res.b_ring / MB, b_random_MBps=res.b_random / MB,
        latency_us=res.latency_us, latency_ring_us=res.latency_ring_us,
        latency_ring_text_us=res.latency_ring_text_us,
        pingpong_latency_us=res.pingpong_latency_us,
        pingpong_bandwidth_MBps=res.pingpong_bandwidth / MB,
        per_length=tuple(LengthFigures(int(L), float(res.b_eff_length[i]) / MB,
                                       float(res.ring_length[i]) / MB,
                                       float(res.random_length[i]) / MB)
                         for i, L in enumerate(rec.lengths)),
        patterns=tuple(PatternFigures(i, rec.labels[i], rec.kinds[i],
                                      float(res.b_pattern[i]) / MB, float(share[i]))
                       for i in range(len(rec.labels))),
        shortened_repetitions=tuple(int(r) for r in np.flatnonzero(rec.shortened)),
        runtime_s=rec.runtime_s, warnings=tuple(res.warnings),
        final_line=final_line(res.b_eff, P, memory_mib(rec.memory_per_proc), rec.uname, tag),
        b_eff_all_methods_MBps=all_methods,
    )
