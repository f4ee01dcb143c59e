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

import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from beff.core import capi, testhooks
from beff.core import mpi as _mpi
from beff.core.buffers import aligned, untouched
from beff.core.capi import I32Array, I64Array2, U8Array, loop
from beff.core.config import RunConfig
from beff.core.errors import BeffError, UsageError
from beff.core.metadata import node_memory_per_rank
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
from beff.patterns.looplength import (
    MIN_REPETITIONS,
    PRE_MSG_LOOPS,
    TIME_PER_LOOP,
    warmup_iterations,
)
from beff.patterns.pattern import N_RANDOM, N_RANDOM_SHORT

if TYPE_CHECKING:  # mpi4py's own stubs; importing mpi4py.MPI at run time would start MPI
    from mpi4py.MPI import Comm

# Methods: the three of b_eff 3.6, then two opt-in ones that never enter the official b_eff.
METHODS = ("sendrecv", "alltoallv", "nonblocking", "irecv-send", "isend-recv")
METHOD_LABELS = ("Sndrcv", "Alltoal", "non-blk", "Irecv+Send (opt-in)", "Isend+Recv (opt-in)")
OFFICIAL = (0, 1, 2)
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
def make_plan(cfg: RunConfig, ranks: list[dict[str, Any]]) -> Plan:
    P = len(ranks)
    if P < 2:
        raise UsageError("b_eff needs at least 2 processes (run it with mpiexec -n P, P >= 2)")
    if cfg.options.memory_per_proc is not None:
        where = cfg.sources.get("memory_per_proc", "cli")
        mem = cfg.options.memory_per_proc
        source = (f"config file {where[len('config:'):]}" if where.startswith("config:")
                  else "--memory-per-proc")
    else:
        mem, source = node_memory_per_rank(ranks), "node memory / ranks on the node"
    if mem < (1 << 20):
        raise UsageError(f"--memory-per-proc must be at least 1 MiB, got {mem} bytes")
    lmax = lmax_from_memory(mem)
    methods = [METHODS.index(m) for m in cfg.options.methods]
    seed = cfg.options.seed if cfg.options.seed is not None else int(time.time())
    return Plan(
        nprocs=P, memory_per_proc=mem, memory_source=source, lmax=lmax,
        lengths=message_lengths(lmax), factor=geometric_factor(lmax), seed=seed,
        n_random=N_RANDOM_SHORT if cfg.options.quick else N_RANDOM,
        repetitions=REPETITIONS_SHORT if cfg.options.quick else REPETITIONS,
        time_per_loop=cfg.options.time_per_loop or (0.05 if cfg.options.quick else TIME_PER_LOOP),
        methods=methods, short=cfg.options.quick, hugepages=cfg.hugepages,
    )


# ----------------------------------------------------------------------------- communicators
@dataclass
class Bound:
    """A pattern bound to this rank: its communicator and its steps in that communicator."""

    pattern: Pattern
    comm: Comm
    rank: int | None
    participation: int
    steps: list[tuple[int, int, int]]  # (dest, source, tag) with MPI.PROC_NULL for none
    sr_count: int


def bind_patterns(MPI: types.ModuleType, patterns: PatternSet) -> list[Bound]:
    """Create every pattern's communicator (shared where the topology is the same), one at
    a time: rank 0 draws each random permutation and broadcasts it (as the original), and a
    rank other than 0 forgets it once its communicator exists (its steps are in the
    communicator's ranks; rank 0 stores the permutations). So no rank but 0 holds more than
    one permutation of P int32 at a time."""
    world = MPI.COMM_WORLD
    rank0 = world.Get_rank() == 0
    cache: dict[Any, Any] = {}
    bound = []
    null = MPI.PROC_NULL
    for p in patterns:
        if isinstance(p.comm, GroupComm) and p.kind == "random":
            perm = np.empty(p.comm.nprocs, dtype=np.int32)
            if rank0:
                perm[:] = p.comm.perm
            world.Bcast(perm, root=0)
            p.comm.adopt(perm)
        if p.perm is not None:
            group = world.Get_group()
            sub = group.Incl(p.perm)  # the int32 array: no list of P Python ints
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
        if not rank0 and isinstance(p.comm, GroupComm):
            p.comm.release()
    return bound


# ----------------------------------------------------------------------------- timed loops
C: Any = None  # the C bindings, substituted by the backend


class Mismatch(BeffError):
    """A received message's first or last byte was not what the sender stamped."""


@loop
def method_loop(method: int, steps: I64Array2, sbuf: U8Array, rbuf: U8Array, buflng: int,
                length: int, iterations: int, pre: int, base: int, dtype: int, comm: int,
                statuses: int, requests: int, hsize: int, scount: I32Array, rcount: I32Array,
                sdisp: I32Array, rdisp: I32Array) -> tuple[float, int, int, int, int]:
    """``pre`` untimed and ``iterations`` timed iterations of one method over the steps.

    Each step (dest, source, tag, v1, v2) moves ``length`` bytes at the next offset of the
    cyclic buffers (8-byte aligned; back to 0 where the next message would not fit); the
    sender stamps the first and last byte with v1 and v2, and the receiver checks them inside
    the timed loop, as the original. Methods: 0 MPI_Sendrecv (MPI_Send or MPI_Recv where the
    step has only one side), 1 MPI_Alltoallv, 2 MPI_Irecv + MPI_Isend step by step (the
    original's order), 3 all MPI_Irecv then MPI_Send, 4 MPI_Isend then MPI_Recv; 2 to 4 end
    with MPI_Waitall.
    Returns (timed seconds, OR of the MPI error codes, next offset, failing step or -1, its
    offset).
    """
    err = 0
    nsteps = steps.shape[0]
    step = (length + 7) // 8 * 8
    last = length - 1
    sa = sbuf.ctypes.data
    ra = rbuf.ctypes.data
    offs = np.zeros(nsteps, dtype=np.int64)
    t0 = C.Wtime()
    for it in range(-pre, iterations):
        if it == 0:
            t0 = C.Wtime()
        for k in range(nsteps):
            if base + step > buflng:
                base = 0
            offs[k] = base
            base += step
            if steps[k, 0] >= 0:
                sbuf[offs[k]] = steps[k, 3]
                sbuf[offs[k] + last] = steps[k, 4]
        if method == 0:
            for k in range(nsteps):
                dest, source, tag, o = steps[k, 0], steps[k, 1], steps[k, 2], offs[k]
                if dest >= 0 and source >= 0:
                    err |= C.Sendrecv(sa + o, length, dtype, dest, tag, ra + o, length, dtype,
                                      source, tag, comm, statuses)
                elif dest >= 0:
                    err |= C.Send(sa + o, length, dtype, dest, tag, comm)
                elif source >= 0:
                    err |= C.Recv(ra + o, length, dtype, source, tag, comm, statuses)
        elif method == 1:
            for k in range(nsteps):
                if steps[k, 0] >= 0:
                    sdisp[steps[k, 0]] = offs[k]
                if steps[k, 1] >= 0:
                    rdisp[steps[k, 1]] = offs[k]
            err |= C.Alltoallv(sa, scount.ctypes.data, sdisp.ctypes.data, dtype, ra,
                               rcount.ctypes.data, rdisp.ctypes.data, dtype, comm)
        elif method == 2:
            # the original's order: each step's Irecv, then its Isend
            nreq = 0
            for k in range(nsteps):
                if steps[k, 1] >= 0:
                    err |= C.Irecv(ra + offs[k], length, dtype, steps[k, 1], steps[k, 2],
                                   comm, requests + nreq * hsize)
                    nreq += 1
                if steps[k, 0] >= 0:
                    err |= C.Isend(sa + offs[k], length, dtype, steps[k, 0], steps[k, 2],
                                   comm, requests + nreq * hsize)
                    nreq += 1
            err |= C.Waitall(nreq, requests, statuses)
        else:
            nreq = 0
            if method != 4:
                for k in range(nsteps):
                    if steps[k, 1] >= 0:
                        err |= C.Irecv(ra + offs[k], length, dtype, steps[k, 1], steps[k, 2],
                                       comm, requests + nreq * hsize)
                        nreq += 1
            for k in range(nsteps):
                if steps[k, 0] >= 0:
                    if method == 3:
                        err |= C.Send(sa + offs[k], length, dtype, steps[k, 0], steps[k, 2],
                                      comm)
                    else:  # 4: all Isends, then the Recvs
                        err |= C.Isend(sa + offs[k], length, dtype, steps[k, 0], steps[k, 2],
                                       comm, requests + nreq * hsize)
                        nreq += 1
            if method == 4:
                for k in range(nsteps):
                    if steps[k, 1] >= 0:
                        err |= C.Recv(ra + offs[k], length, dtype, steps[k, 1], steps[k, 2],
                                      comm, statuses)
            err |= C.Waitall(nreq, requests, statuses)
        for k in range(nsteps):
            if steps[k, 1] >= 0 and (rbuf[offs[k]] != steps[k, 3]
                                     or rbuf[offs[k] + last] != steps[k, 4]):
                return C.Wtime() - t0, err, base, k, offs[k]
    return C.Wtime() - t0, err, base, -1, 0


class Loops:
    """The five methods over cyclic buffers with one global offset (spec §6); the timed loop
    is :func:`method_loop`."""

    def __init__(self, MPI: types.ModuleType, lmax: int, hugepages: bool = False) -> None:
        self.MPI = MPI
        self.buflng = 6 * (lmax + 16)
        # as the original's malloc leaves them: untouched (--hugepages: filled, 2 MiB pages)
        alloc = aligned if hugepages else untouched
        self.sbuf = alloc(self.buflng)
        self.rbuf = alloc(self.buflng)
        self.base = 0
        self.byte = capi.handle(MPI.BYTE)
        self.hsize = capi.handle_size()
        # Test-only hook: rank 0 stamps wrong bytes, so the receivers' check must fire.
        self.corrupt = int(testhooks.corrupt() and MPI.COMM_WORLD.Get_rank() == 0)
        self.prepared: dict[tuple[int, int, int], tuple[Any, ...]] = {}

    def _prepare(self, b: Bound, lindex: int, method: int, length: int) -> tuple[Any, ...]:
        """The step table, the scratch for requests and statuses, and Alltoallv's vectors."""
        key = (id(b), lindex, length)
        if key not in self.prepared:
            # Per step: dest, source, tag, and the stamps v1 = (tag * length index + 1) & 255,
            # v2 = (2 v1 - 1) & 255.
            steps = np.array([(d, s, t, (t * lindex + 1) & 0xFF,
                               (2 * ((t * lindex + 1) & 0xFF) - 1) & 0xFF)
                              for d, s, t in b.steps], dtype=np.int64).reshape(-1, 5)
            if self.corrupt:
                steps[:, 3] ^= 0x80
            k = max(1, 2 * len(steps))
            statuses = np.zeros(k * capi.status_size(), dtype=np.uint8)
            requests = np.zeros(k * self.hsize, dtype=np.uint8)
            size = b.comm.Get_size() if b.comm != self.MPI.COMM_NULL else 1
            scount, rcount = np.zeros(size, np.int32), np.zeros(size, np.int32)
            scount[steps[steps[:, 0] >= 0, 0]] = length
            rcount[steps[steps[:, 1] >= 0, 1]] = length
            self.prepared = {key: (steps, statuses, requests, scount, rcount,
                                   np.zeros(size, np.int32), np.zeros(size, np.int32))}
        return self.prepared[key]

    def run(self, method: int, b: Bound, length: int, lindex: int, iterations: int,
            pre: int, where: str) -> float:
        """Loop ``pre`` warm-up and ``iterations`` timed iterations; return the timed seconds."""
        steps, statuses, requests, scount, rcount, sdisp, rdisp = self._prepare(
            b, lindex, method, length)
        elapsed, err, self.base, bad, off = method_loop(
            method, steps, self.sbuf, self.rbuf, self.buflng, length, iterations, pre,
            self.base, self.byte, capi.handle(b.comm), int(statuses.ctypes.data),
            int(requests.ctypes.data), self.hsize, scount, rcount, sdisp, rdisp)
        capi.check(err, where)
        if bad >= 0:
            v1, v2 = int(steps[bad, 3]), int(steps[bad, 4])
            first, last = int(self.rbuf[off]), int(self.rbuf[off + length - 1])
            rank = self.MPI.COMM_WORLD.Get_rank()
            raise Mismatch(f"b_eff data check failed on rank {rank}: {where}, offset {off}: "
                           f"expected first/last byte {v1}/{v2}, got {first}/{last}")
        return float(elapsed)


# ----------------------------------------------------------------------------- driver
class Beff:
    """Measures b_eff on MPI.COMM_WORLD; rank 0 keeps the loop-length control."""

    def __init__(self, MPI: types.ModuleType, plan: Plan, progress: Callable[[str], None],
                 flush: Callable[[int, State], None], stall: float | None = None,
                 first: int = 0) -> None:
        self.MPI = MPI
        self.plan = plan
        self.world = MPI.COMM_WORLD
        self.rank = self.world.Get_rank()
        self.patterns = build_patterns(plan.nprocs, plan.n_random, seed=plan.seed,
                                       dims_create=MPI.Compute_dims)
        self.bound = bind_patterns(MPI, self.patterns)
        self.loops = Loops(MPI, plan.lmax, plan.hugepages)
        self.progress = progress
        self.flush = flush
        # Per length: every pattern and method, each loop about time_per_loop / patterns.
        self.stall = stall if stall is not None else max(
            120.0, 20.0 * plan.time_per_loop * len(plan.methods))
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
        self.first = first  # the first repetition to measure (--resume: the ones before are)

    def measure(self, r: int, li: int, looplng: list[int], methods_of: Callable[[int], list[int]],
                record: bool = True) -> None:
        """All patterns and methods at one length, with a world barrier before each."""
        plan, st = self.plan, self.state
        length = plan.lengths[li]
        pre = warmup_iterations(li)
        _mpi.guard(self.stall, f"b_eff repetition {r + 1}, length {length} B")
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
        for r in range(self.first, plan.repetitions):
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
        _mpi.guard(None, "")

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
