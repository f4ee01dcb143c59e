"""``beff run``: Rabenseifner's effective bandwidth b_eff, as b_eff 3.6.0.1 measures it.

Loop nesting: repetition -> message length -> pattern -> method. Before every
(pattern, method) all ranks meet in MPI_Barrier(MPI_COMM_WORLD); each participating rank
then times its own loop of ``looplng`` iterations (one unmeasured warm-up iteration first,
except for the 3 largest lengths). Per rank: bw = L * looplng * sr_count / loop time (bytes
sent per second; both directions for the Send/Recv-only patterns). Over ranks: min (and
mean, max). Pattern bandwidth b = min * all_msg_cnt / sr_count. Loop lengths are steered to
``time_per_loop`` seconds per (length, method) summed over all patterns, by rank 0, from its
own loop times, and broadcast. The reduction to b_eff is beff.patterns.reduce.
"""

from __future__ import annotations

import math
import os
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from beff.core.buffers import aligned, malloc_like
from beff.core.config import RunConfig
from beff.core.errors import BeffError, UsageError
from beff.patterns import (
    GroupComm,
    Pattern,
    PatternSet,
    best_method,
    build_patterns,
    first_looplng,
    geometric_factor,
    last_two_shortened,
    length_divisor,
    lmax_from_memory,
    message_lengths,
    next_looplng,
    predict_last_two,
)
from beff.patterns.looplength import MIN_REPETITIONS, PRE_MSG_LOOPS, TIME_PER_LOOP
from beff.patterns.pattern import N_RANDOM, N_RANDOM_SHORT

# Methods: the three of b_eff 3.6, then two opt-in ones that never enter the official b_eff.
METHODS = ("sendrecv", "alltoallv", "nonblocking", "irecv-send", "isend-recv")
METHOD_LABELS = ("Sndrcv", "Alltoal", "non-blk", "Irecv+Send (opt-in)", "Isend+Recv (opt-in)")
OFFICIAL = (0, 1, 2)
WITH_PRELOOPS = 18  # warm-up iteration only for length index < 18
REPETITIONS = 3
REPETITIONS_SHORT = 2
NOT_PARTICIPATING = 1e30


@dataclass
class Plan:
    """Everything rank 0 decided before measuring; broadcast to all ranks."""

    nprocs: int
    memory_per_proc: int
    memory_source: str
    lmax: int
    lengths: list[int]
    factor: float
    seed: int
    n_random: int
    repetitions: int
    time_per_loop: float
    methods: list[int]
    short: bool
    hugepages: bool = False


@dataclass
class State:
    """Per-run measurement arrays on every rank (rank 0's drive the loop lengths)."""

    bw_local: np.ndarray  # [rep, len, pat, meth] this rank's bytes/s (1e30 = not measured)
    looplng: np.ndarray  # [rep, len, meth]
    loop_time: np.ndarray  # [rep, len, meth] this rank's summed loop time
    loop_min: np.ndarray
    loop_max: np.ndarray
    shortened: np.ndarray  # [rep] the 60-second rule fired
    best: np.ndarray  # [rep, pat] method used at the two largest lengths (-1: all)
    extra: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- planning
def node_memory_per_rank(ranks: list[dict[str, Any]]) -> int:
    """Physical memory of a node divided by the ranks on it; the smallest over nodes."""
    best = math.inf
    for r in ranks:
        mem = int(r.get("memory_bytes", 0))
        if mem > 0:
            best = min(best, mem // max(1, int(r["local_size"])))
    return int(best) if math.isfinite(best) else 1 << 30


def make_plan(cfg: RunConfig, ranks: list[dict[str, Any]]) -> Plan:
    P = len(ranks)
    if P < 2:
        raise UsageError("b_eff needs at least 2 processes (run it with mpiexec -n P, P >= 2)")
    if cfg.memory_per_proc is not None:
        mem, source = cfg.memory_per_proc, "--memory-per-proc"
    else:
        mem, source = node_memory_per_rank(ranks), "node memory / ranks on the node"
    if mem < (1 << 20):
        raise UsageError(f"--memory-per-proc must be at least 1 MiB, got {mem} bytes")
    lmax = lmax_from_memory(mem)
    methods = [METHODS.index(m) for m in cfg.methods]
    seed = cfg.seed if cfg.seed is not None else int(time.time())
    return Plan(
        nprocs=P, memory_per_proc=mem, memory_source=source, lmax=lmax,
        lengths=message_lengths(lmax), factor=geometric_factor(lmax), seed=seed,
        n_random=N_RANDOM_SHORT if cfg.quick else N_RANDOM,
        repetitions=REPETITIONS_SHORT if cfg.quick else REPETITIONS,
        time_per_loop=cfg.time_per_loop or (0.05 if cfg.quick else TIME_PER_LOOP),
        methods=methods, short=cfg.quick, hugepages=cfg.hugepages,
    )


# ----------------------------------------------------------------------------- communicators
@dataclass
class Bound:
    """A pattern bound to this rank: its communicator and its steps in that communicator."""

    pattern: Pattern
    comm: Any
    rank: int | None
    participation: int
    steps: list[tuple[int, int, int]]  # (dest, source, tag) with MPI.PROC_NULL for none
    sr_count: int


def bind_patterns(MPI: types.ModuleType, patterns: PatternSet) -> list[Bound]:
    """Create every pattern's communicator (shared where the topology is the same)."""
    world = MPI.COMM_WORLD
    cache: dict[Any, Any] = {}
    bound = []
    null = MPI.PROC_NULL
    for p in patterns:
        if p.perm is not None:
            group = world.Get_group()
            sub = group.Incl([int(x) for x in p.perm])
            comm = world.Create(sub)
            sub.Free()
            group.Free()
        else:
            dims = p.dims
            assert dims is not None
            periods = p.periods
            assert periods is not None
            key = (dims, periods)
            if key not in cache:
                cache[key] = world.Create_cart(list(dims), list(periods), reorder=True)
            comm = cache[key]
        rank = comm.Get_rank() if comm != MPI.COMM_NULL else None
        steps = [(null if s.dest is None else s.dest, null if s.source is None else s.source,
                  s.tag) for s in p.steps(rank)]
        bound.append(Bound(p, comm, rank, p.participation(rank), steps, len(steps)))
    return bound


# ----------------------------------------------------------------------------- timed loops
class Mismatch(BeffError):
    """A received message's first or last byte was not what the sender stamped."""


class Loops:
    """The five methods. Buffers are used cyclically with one global offset (spec §6).

    Every message's first and last byte are stamped before sending and checked after
    receiving, inside the timed loop as in the original. The loops are written out per method
    with everything bound to locals, to keep Python's share of the loop time small.
    """

    def __init__(self, MPI: types.ModuleType, lmax: int, hugepages: bool = False) -> None:
        self.MPI = MPI
        self.buflng = 6 * (lmax + 16)
        alloc = aligned if hugepages else malloc_like
        self.sbuf = alloc(self.buflng)
        self.rbuf = alloc(self.buflng)
        # memoryview slices and item access cost less Python time than numpy's.
        self.smv = self.sbuf.data
        self.rmv = self.rbuf.data
        self.base = 0
        # Test-only hook: rank 0 stamps wrong bytes, so the receivers' check must fire.
        self.corrupt = int(os.environ.get("BEFF_TEST_CORRUPT") == "1"
                           and MPI.COMM_WORLD.Get_rank() == 0)

    def fail(self, off: int, length: int, v1: int, v2: int, where: str) -> None:
        first, last = self.rmv[off], self.rmv[off + length - 1]
        rank = self.MPI.COMM_WORLD.Get_rank()
        raise Mismatch(f"b_eff data check failed on rank {rank}: {where}, offset {off}: "
                       f"expected first/last byte {v1}/{v2}, got {first}/{last}")

    def run(self, method: int, b: Bound, length: int, lindex: int, iterations: int,
            pre: int, where: str) -> float:
        """Loop ``pre`` warm-up and ``iterations`` timed iterations; return the timed seconds."""
        # Per step: dest, source, tag, and the stamps v1 = tag * length index + 1, v2 = 2 v1 - 1.
        steps = [(d, s, t, (t * lindex + 1) & 0xFF, (2 * ((t * lindex + 1) & 0xFF) - 1) & 0xFF)
                 for d, s, t in b.steps]
        if self.corrupt:
            steps = [(d, s, t, v1 ^ 0x80, v2) for d, s, t, v1, v2 in steps]
        if method == 0:
            return self._sendrecv(b.comm, steps, length, iterations, pre, where)
        return self._posted(method, b.comm, steps, length, iterations, pre, where)

    def _sendrecv(self, comm: Any, steps: list[tuple[int, int, int, int, int]], length: int,
                  iterations: int, pre: int, where: str) -> float:
        wtime, BYTE = self.MPI.Wtime, self.MPI.BYTE
        smv, rmv, buflng = self.smv, self.rmv, self.buflng
        step = (length + 7) // 8 * 8
        last = length - 1
        send, recv, sendrecv = comm.Send, comm.Recv, comm.Sendrecv
        base = self.base
        t0 = wtime()
        for it in range(-pre, iterations):
            if it == 0:
                t0 = wtime()
            for dest, source, tag, v1, v2 in steps:
                if base + step > buflng:
                    base = 0
                o = base
                base += step
                if dest >= 0:
                    smv[o] = v1
                    smv[o + last] = v2
                    if source >= 0:
                        sendrecv([smv[o:o + length], BYTE], dest, tag,
                                 [rmv[o:o + length], BYTE], source, tag)
                    else:
                        send([smv[o:o + length], BYTE], dest, tag)
                elif source >= 0:
                    recv([rmv[o:o + length], BYTE], source, tag)
                if source >= 0 and (rmv[o] != v1 or rmv[o + last] != v2):
                    self.fail(o, length, v1, v2, where)
        elapsed = wtime() - t0
        self.base = base
        return float(elapsed)

    def _posted(self, method: int, comm: Any, steps: list[tuple[int, int, int, int, int]],
                length: int, iterations: int, pre: int, where: str) -> float:
        """Alltoallv (1), Irecv+Isend (2), Irecv+Send (3) or Isend+Recv (4), then Waitall."""
        MPI = self.MPI
        wtime, BYTE, waitall = MPI.Wtime, MPI.BYTE, MPI.Request.Waitall
        smv, rmv, buflng = self.smv, self.rmv, self.buflng
        step = (length + 7) // 8 * 8
        last = length - 1
        isend, irecv, send, recv = comm.Isend, comm.Irecv, comm.Send, comm.Recv
        if method == 1:
            size = comm.Get_size()
            scount, rcount, sdisp, rdisp = (np.zeros(size, dtype=np.int32) for _ in range(4))
            for dest, source, _, _, _ in steps:
                if dest >= 0:
                    scount[dest] = length
                if source >= 0:
                    rcount[source] = length
            smsg = [self.sbuf, (scount, sdisp), BYTE]
            rmsg = [self.rbuf, (rcount, rdisp), BYTE]
            alltoallv = comm.Alltoallv
        base = self.base
        offs = [0] * len(steps)
        t0 = wtime()
        for it in range(-pre, iterations):
            if it == 0:
                t0 = wtime()
            for k, (dest, _, _, v1, v2) in enumerate(steps):
                if base + step > buflng:
                    base = 0
                offs[k] = o = base
                base += step
                if dest >= 0:
                    smv[o] = v1
                    smv[o + last] = v2
            if method == 1:
                for k, (dest, source, _, _, _) in enumerate(steps):
                    if dest >= 0:
                        sdisp[dest] = offs[k]
                    if source >= 0:
                        rdisp[source] = offs[k]
                alltoallv(smsg, rmsg)
            else:
                reqs = []
                if method != 4:
                    for k, (_, source, tag, _, _) in enumerate(steps):
                        if source >= 0:
                            o = offs[k]
                            reqs.append(irecv([rmv[o:o + length], BYTE], source, tag))
                for k, (dest, _, tag, _, _) in enumerate(steps):
                    if dest >= 0:
                        o = offs[k]
                        if method == 3:
                            send([smv[o:o + length], BYTE], dest, tag)
                        else:
                            reqs.append(isend([smv[o:o + length], BYTE], dest, tag))
                if method == 4:
                    for k, (_, source, tag, _, _) in enumerate(steps):
                        if source >= 0:
                            o = offs[k]
                            recv([rmv[o:o + length], BYTE], source, tag)
                waitall(reqs)
            for k, (_, source, _, v1, v2) in enumerate(steps):
                if source >= 0:
                    o = offs[k]
                    if rmv[o] != v1 or rmv[o + last] != v2:
                        self.fail(o, length, v1, v2, where)
        elapsed = wtime() - t0
        self.base = base
        return float(elapsed)


# ----------------------------------------------------------------------------- driver
class Beff:
    """Measures b_eff on MPI.COMM_WORLD; rank 0 keeps the loop-length control."""

    def __init__(self, MPI: types.ModuleType, plan: Plan, progress: Callable[[str], None],
                 flush: Callable[[int, State], None]) -> None:
        self.MPI = MPI
        self.plan = plan
        self.world = MPI.COMM_WORLD
        self.rank = self.world.Get_rank()
        self.patterns = build_patterns(plan.nprocs, plan.n_random, seed=plan.seed,
                                       dims_create=MPI.Compute_dims)
        self._share_permutations()
        self.bound = bind_patterns(MPI, self.patterns)
        self.loops = Loops(MPI, plan.lmax, plan.hugepages)
        self.progress = progress
        self.flush = flush
        R, L, NP, M = plan.repetitions, len(plan.lengths), len(self.patterns), len(plan.methods)
        self.state = State(
            bw_local=np.full((R, L, NP, M), NOT_PARTICIPATING),
            looplng=np.zeros((R, L, M), dtype=np.int64),
            loop_time=np.zeros((R, L, M)),
            loop_min=np.full((R, L, M), np.inf),
            loop_max=np.zeros((R, L, M)),
            shortened=np.zeros(R, dtype=bool),
            best=np.full((R, NP), -1, dtype=np.int64),
        )

    def _share_permutations(self) -> None:
        """Rank 0 draws the random permutations and broadcasts them (as the original)."""
        for p in self.patterns:
            comm = p.comm
            if not isinstance(comm, GroupComm) or p.kind != "random":
                continue
            perm = np.empty(self.plan.nprocs, dtype=np.int32)
            if self.rank == 0:
                assert p.perm is not None
                perm[:] = p.perm
            self.world.Bcast(perm, root=0)
            comm.adopt(perm)

    def measure(self, r: int, li: int, looplng: list[int], methods_of: Callable[[int], list[int]],
                record: bool = True) -> None:
        """All patterns and methods at one length, with a world barrier before each."""
        plan, st = self.plan, self.state
        length = plan.lengths[li]
        pre = 1 if li < WITH_PRELOOPS else 0
        for pi, b in enumerate(self.bound):
            for mi in methods_of(pi):
                m = plan.methods[mi]
                if m not in b.pattern.methods:
                    continue
                self.world.Barrier()
                n = looplng[mi]
                skip = b.participation == 0 or (b.participation < 0 and m != 1)
                if skip:
                    continue
                where = (f"pattern {pi} {b.pattern.label}, method {METHODS[m]}, "
                         f"length {length}, repetition {r + 1}")
                t = self.loops.run(m, b, length, li, n, pre, where)
                if b.participation < 0:
                    continue  # idle members only join the Alltoallv
                st.loop_time[r, li, mi] += t
                st.loop_min[r, li, mi] = min(st.loop_min[r, li, mi], t)
                st.loop_max[r, li, mi] = max(st.loop_max[r, li, mi], t)
                if record:
                    st.bw_local[r, li, pi, mi] = (length * n * b.sr_count / t if t > 0
                                                  else NOT_PARTICIPATING)

    def run(self) -> None:
        plan, st = self.plan, self.state
        M = len(plan.methods)
        all_methods = list(range(M))
        for r in range(plan.repetitions):
            # Calibration pass: 1 byte, PRE_MSG_LOOPS iterations; its times stay in index 0.
            self.progress(f"rep {r + 1}/{plan.repetitions}: calibration")
            self.measure(r, 0, [PRE_MSG_LOOPS] * M, lambda _: all_methods, record=False)
            first = None
            if self.rank == 0:
                first = [first_looplng(max(st.loop_time[r, 0, mi], 1e-9), plan.time_per_loop)
                         for mi in all_methods]
            first = self.world.bcast(first, root=0)
            max_loops = [f.max_loops for f in first]
            short = False
            for li, length in enumerate(plan.lengths):
                looplng = self._looplengths(r, li, first, max_loops, short)
                if li == len(plan.lengths) - 2:
                    short = self._sixty_second_rule(r, li)
                    if short:
                        looplng = [1] * M
                st.looplng[r, li] = looplng
                self.progress(f"rep {r + 1}/{plan.repetitions} L={length}")
                if short and li >= len(plan.lengths) - 2:
                    if li == len(plan.lengths) - 1 and r >= MIN_REPETITIONS:
                        st.bw_local[r, li] = st.bw_local[0, li]
                        continue
                    best = [int(x) for x in st.best[r]]

                    def only_best(pi: int, best: list[int] = best) -> list[int]:
                        return [best[pi]]

                    self.measure(r, li, looplng, only_best)
                    for pi in range(len(self.bound)):
                        st.bw_local[r, li, pi, :] = st.bw_local[r, li, pi, int(best[pi])]
                else:
                    self.measure(r, li, looplng, lambda _: all_methods)
            self.flush(r, st)

    def _looplengths(self, r: int, li: int, first: list[Any], max_loops: list[int],
                     short: bool) -> list[int]:
        plan, st = self.plan, self.state
        out = None
        if self.rank == 0:
            if li == 0:
                out = [f.looplng for f in first]
            else:
                d = length_divisor(li, plan.factor)
                out = [next_looplng(int(st.looplng[r, li - 1, mi]), st.loop_time[r, li - 1, mi],
                                    d, max_loops[mi], plan.time_per_loop)
                       for mi in range(len(plan.methods))]
        return list(self.world.bcast(out, root=0))

    def _sixty_second_rule(self, r: int, li: int) -> bool:
        """At the second-largest length: predict the last two; if > 60 s, shorten them."""
        plan, st = self.plan, self.state
        verdict = None
        if self.rank == 0:
            prev = li - 1
            predictions = [
                predict_last_two(st.loop_min[r, prev, mi] if np.isfinite(st.loop_min[r, prev, mi])
                                 else 0.0, max(1, int(st.looplng[r, prev, mi])),
                                 len(self.bound), plan.factor, plan.repetitions,
                                 len(plan.methods))
                for mi in range(len(plan.methods))]
            fired = last_two_shortened(predictions)
            best = [-1] * len(self.bound)
            if fired:
                for pi, b in enumerate(self.bound):
                    bws = st.bw_local[r, prev, pi]
                    measured = [plan.methods[mi] in b.pattern.methods and bws[mi] < 1e29
                                for mi in range(len(plan.methods))]
                    best[pi] = best_method([float(x) for x in bws], measured)
            verdict = (fired, best, predictions)
        fired, best, predictions = self.world.bcast(verdict, root=0)
        st.extra.setdefault("last_two_predictions", []).append(predictions)
        st.shortened[r] = fired
        st.best[r] = best
        return bool(fired)


def reduce_over_ranks(MPI: types.ModuleType, local: np.ndarray,
                      participating: np.ndarray) -> tuple[np.ndarray, ...]:
    """min, mean over participants and max of the per-rank bandwidths (rank 0 gets them)."""
    world = MPI.COMM_WORLD
    lo = np.empty_like(local)
    world.Reduce(local, lo, op=MPI.MIN, root=0)
    vals = np.where(local < 1e29, local, 0.0)
    total = np.empty_like(vals)
    world.Reduce(vals, total, op=MPI.SUM, root=0)
    hi = np.empty_like(vals)
    world.Reduce(vals, hi, op=MPI.MAX, root=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        avg = total / participating
    lo = np.where(lo >= 1e29, np.nan, lo)
    return lo, avg, hi


def uname_fields() -> list[str]:
    u = os.uname()
    return [u.sysname, u.nodename, u.release, u.version, u.machine]

