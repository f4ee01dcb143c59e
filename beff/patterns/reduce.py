"""From pattern bandwidths to b_eff and the other figures of b_eff 3.6 (spec §9).

The input everywhere is ``b[rep, length, pattern, method]`` in bytes/s: the minimum over
processes of each process's bytes/time, already multiplied by the pattern's
``all_msg_cnt / sr_count`` (see :func:`pattern_bandwidth`).  Entries that were not
measured are 0 (as in the original) or NaN (read as 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

# What the original's logavg() returns (after printing an error) when a value is <= 0.
LOGAVG_ERROR = 999999999.0
# The bandwidth a non-participating process contributes, so it is never the minimum.
NOT_PARTICIPATING = 1e30
SENDRECV = 0


def pattern_bandwidth(minbw: npt.ArrayLike, scales: npt.ArrayLike) -> FloatArray:
    """b = minbw * all_msg_cnt / sr_count, with the scales of the pattern axis (axis 2)."""
    mb = np.asarray(minbw, dtype=np.float64)
    return mb * np.asarray(scales, dtype=np.float64)[None, None, :, None]


def logavg(values: npt.ArrayLike) -> float:
    """Geometric mean exp(mean(log x)).

    Raises ValueError for an empty input or any value <= 0 (or NaN), where the original
    prints an error and returns 999999999; :func:`reduce_beff` substitutes that value
    and records a warning, so its tables still match the original's.
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("logavg of no values")
    if not np.all(x > 0):
        raise ValueError(f"logavg needs positive values, got {x[~(x > 0)][0]!r}")
    return float(np.exp(np.log(x).mean()))


def _logavg_last(x: FloatArray, what: str, warnings: list[str]) -> FloatArray:
    """logavg along the last axis; LOGAVG_ERROR (and a warning) where a value is <= 0."""
    ok = np.all(x > 0, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.exp(np.log(np.where(x > 0, x, 1.0)).mean(axis=-1))
    if not np.all(ok):
        warnings.append(f"logavg over {what}: {int(np.size(ok) - np.count_nonzero(ok))} "
                        f"group(s) with a value <= 0 set to {LOGAVG_ERROR:.0f}")
    return np.where(ok, mean, LOGAVG_ERROR)


@dataclass(frozen=True)
class GroupMeans:
    """Geometric means over the ring patterns, over the random patterns, and of the two."""

    ring: FloatArray
    random: FloatArray
    final: FloatArray


def _group_means(x: FloatArray, rings: Sequence[int], randoms: Sequence[int], what: str,
                 warnings: list[str]) -> GroupMeans:
    """Means over the pattern axis (the last one) of ``x``."""
    ring = _logavg_last(x[..., list(rings)], f"rings of {what}", warnings)
    rand = _logavg_last(x[..., list(randoms)], f"random patterns of {what}", warnings)
    final = _logavg_last(np.stack((ring, rand), axis=-1), f"ring,random of {what}", warnings)
    return GroupMeans(ring, rand, final)


def _clean(b: npt.ArrayLike) -> FloatArray:
    arr = np.asarray(b, dtype=np.float64)
    if arr.ndim != 4:
        raise ValueError(f"b must be b[rep, length, pattern, method], got shape {arr.shape}")
    return np.where(np.isnan(arr), 0.0, arr)


def _indices(kinds: Sequence[str], npat: int) -> tuple[list[int], list[int]]:
    if len(kinds) != npat:
        raise ValueError(f"{len(kinds)} kinds for {npat} patterns")
    rings = [i for i, k in enumerate(kinds) if k == "ring"]
    randoms = [i for i, k in enumerate(kinds) if k == "random"]
    if not rings or not randoms:
        raise ValueError("need at least one ring and one random pattern")
    return rings, randoms


@dataclass(frozen=True)
class BeffResult:
    """The official (1st) analysis path; bandwidths in bytes/s, latencies in microseconds."""

    nprocs: int
    lengths: tuple[int, ...]
    b_pattern_length: FloatArray
    """B_p(L) = max over methods and repetitions, shape (length, pattern)."""
    b_pattern: FloatArray
    """B_p = arithmetic mean of B_p(L) over the lengths, shape (pattern,)."""
    b_ring: float
    b_random: float
    b_eff: float
    ring_length: FloatArray
    """gm_ring(L), shape (length,)."""
    random_length: FloatArray
    """gm_random(L), shape (length,)."""
    b_eff_length: FloatArray
    """b_eff(L) = sqrt(gm_ring(L) gm_random(L)), shape (length,)."""
    pingpong_latency_us: float
    """Half the 1-byte round trip of ranks 0 and 1 (method 0, best repetition); 0 if none."""
    pingpong_bandwidth: float
    """b of the ping-pong pair at Lmax (method 0, best repetition); 0 if none."""
    warnings: tuple[str, ...]

    @property
    def b_eff_per_process(self) -> float:
        """b_eff / P."""
        return self.b_eff / self.nprocs

    @property
    def b_eff_lmax(self) -> float:
        """b_eff at the largest length."""
        return float(self.b_eff_length[-1])

    @property
    def ring_lmax(self) -> float:
        """Ring-pattern average at the largest length."""
        return float(self.ring_length[-1])

    @property
    def latency_us(self) -> float:
        """Latency of rings and random: P / b_eff(1 byte), one step per process."""
        return 1e6 * self.nprocs / float(self.b_eff_length[0])

    @property
    def latency_ring_us(self) -> float:
        """Ring latency as in the summary table: P / gm_ring(1 byte)."""
        return 1e6 * self.nprocs / float(self.ring_length[0])

    @property
    def latency_ring_text_us(self) -> float:
        """Ring latency as in the text line "Latency ring pattern:": 1 / gm_ring(1 byte),
        without the factor P (so it differs from the table value)."""
        return 1e6 / float(self.ring_length[0])


def reduce_beff(b: npt.ArrayLike, *, nprocs: int, kinds: Sequence[str],
                lengths: Sequence[int], pingpong_index: int | None = None) -> BeffResult:
    """The official analysis path: logavg_pat(avg_L(max_mthd(max_rep(b(L))))).

    ``kinds`` names every pattern "ring", "random" or "info"; b_eff uses the geometric
    means over the rings and over the random patterns.  Length index 0 gives the
    latencies, the last index the Lmax figures.  Where the original's logavg would fail
    (a value <= 0) the result holds 999999999 and ``warnings`` says so.
    """
    arr = _clean(b)
    nrep, nlen, npat, nmeth = arr.shape
    if len(lengths) != nlen:
        raise ValueError(f"{len(lengths)} lengths for {nlen} length entries")
    rings, randoms = _indices(kinds, npat)
    warnings: list[str] = []
    per_length = arr.max(axis=(0, 3))
    per_pattern = per_length.mean(axis=0)
    overall = _group_means(per_pattern, rings, randoms, "B_p", warnings)
    by_length = _group_means(per_length, rings, randoms, "B_p(L)", warnings)
    pp_latency = 0.0
    pp_bandwidth = 0.0
    if pingpong_index is not None:
        best = arr[:, :, pingpong_index, SENDRECV].max(axis=0)
        # The pair's all_msg_cnt / sr_count is 2/2, so one step takes 1/b.
        if best[0] > 0:
            pp_latency = 1e6 / float(best[0])
        pp_bandwidth = float(best[-1])
    return BeffResult(
        nprocs=nprocs, lengths=tuple(int(x) for x in lengths),
        b_pattern_length=per_length, b_pattern=per_pattern,
        b_ring=float(overall.ring), b_random=float(overall.random),
        b_eff=float(overall.final),
        ring_length=by_length.ring, random_length=by_length.random,
        b_eff_length=by_length.final,
        pingpong_latency_us=pp_latency, pingpong_bandwidth=pp_bandwidth,
        warnings=tuple(warnings))


@dataclass(frozen=True)
class InfoPaths:
    """The information-only analysis paths 2 to 4 of the .short file (spec §9)."""

    by_method: FloatArray
    """2nd path: avg_L(max_rep b) per (pattern, method); a last column holds the max."""
    by_method_means: GroupMeans
    """Means of ``by_method`` columns, shape (method + 1,)."""
    by_repetition: FloatArray
    """3rd path: avg_L(max_mthd b) per (pattern, repetition); a last column holds the max."""
    by_repetition_means: GroupMeans
    """Means of ``by_repetition`` columns, shape (repetition + 1,)."""
    by_method_length: FloatArray
    """4th path: max_rep b per (length, pattern, method); a last length row is avg_L."""
    by_method_length_means: GroupMeans
    """Means over patterns, shape (length + 1, method); with the official per-length means
    these give the 5th path."""
    warnings: tuple[str, ...]


def info_paths(b: npt.ArrayLike, *, kinds: Sequence[str]) -> InfoPaths:
    """The 2nd, 3rd and 4th analysis paths (information only, not b_eff)."""
    arr = _clean(b)
    _, _, npat, _ = arr.shape
    rings, randoms = _indices(kinds, npat)
    warnings: list[str] = []
    max_rep = arr.max(axis=0)
    by_method = max_rep.mean(axis=0)
    by_method = np.concatenate((by_method, by_method.max(axis=1, keepdims=True)), axis=1)
    by_rep = arr.max(axis=3).mean(axis=1).T
    by_rep = np.concatenate((by_rep, by_rep.max(axis=1, keepdims=True)), axis=1)
    bml = np.concatenate((max_rep, max_rep.mean(axis=0, keepdims=True)), axis=0)
    return InfoPaths(
        by_method=by_method,
        by_method_means=_group_means(by_method.T, rings, randoms, "methods", warnings),
        by_repetition=by_rep,
        by_repetition_means=_group_means(by_rep.T, rings, randoms, "repetitions", warnings),
        by_method_length=bml,
        by_method_length_means=_group_means(np.swapaxes(bml, 1, 2), rings, randoms,
                                            "lengths and methods", warnings),
        warnings=tuple(warnings))


def step_latency_us(b1: float, scale: float) -> float:
    """Latency of one send/recv step from a pattern's 1-byte b: 1e6 * scale / b (µs).

    This is the "(latency ...)" column of the .short tables; NaN where b <= 0 (printed
    as "(-------)" there).
    """
    return 1e6 * scale / b1 if b1 > 0 else math.nan


def mode_tag(short: bool = False, test: bool = False) -> str:
    """The tag after "b_eff" in the final line: "", "SHORT", "TEST" or "SHORT&TEST"."""
    return "&".join(name for name, on in (("SHORT", short), ("TEST", test)) if on)


def final_line(b_eff: float, nprocs: int, memory_mib: int, uname: Sequence[str],
               tag: str = "") -> str:
    """The original's last line, e.g.
    ``b_eff =   1716.621 MB/s = 858.311 *   2 PEs with  64 MB/PE on Linux vm ...``.

    ``uname`` is (sysname, nodename, release, version, machine), e.g. ``os.uname()``;
    ``memory_mib`` the memory per process in MiB (``lengths.memory_mib``).
    """
    system = " ".join(uname)
    return (f"b_eff{tag} = {b_eff / 1e6:10.3f} MB/s = {b_eff / 1e6 / nprocs:7.3f} * "
            f"{nprocs:3d} PEs with {memory_mib:3d} MB/PE on {system}")
