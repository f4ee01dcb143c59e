"""b_eff_io (``beff io``): the effective I/O bandwidth, as b_eff_io.c 2.1 measures it.

Loop nesting (outermost first): access method (write, rewrite, read), partition size n
(ranks < n do I/O, the others wait), pattern type (0 scatter, 1 shared, 2 separated, 3
segmented, 4 seg-coll), pattern. Each type has its own file (type 2: one per process), opened
at the type's first pattern and closed after its last, both timed between barriers. Each
pattern is one compiled loop (beff.io.loops.beffio_pattern): barrier, clock, view, calls,
barrier + sync (writes), barrier, clock. Types 0-2 write for their share of the scheduled time
(rank 0 decides after every call and broadcasts); types 3 and 4, the rewrite and the read
replay the repetitions the write phase recorded. All of it happens inside the files of this
run (beff.io.fs.RunFiles), removed on every exit path.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from beff.core import capi, testhooks
from beff.core import mpi as _mpi
from beff.core.config import RunConfig
from beff.core.errors import CollectiveFailure, UsageError
from beff.io import loops, plan, run
from beff.io.plan import ETYPE, MIB
from beff.io.record import BeffIORecord
from beff.io.reduce import ACCESSES, READ, REWRITE, TYPES, WRITE

if TYPE_CHECKING:
    from mpi4py.MPI import Comm

QUICK_SECONDS_PER_PARTITION = 2.0
QUICK_MEMORY = 256 * MIB  # Lmax = 2 MiB unless --memory-per-proc says otherwise
DEFAULT_T = 600.0
STALL_MIN_S, STALL_FACTOR = 300.0, 10.0  # a phase takes about its share of T / partitions
MAX_PARTITIONS = 10


@dataclass
class Plan:
    """What rank 0 decided before the run (the same on every rank)."""

    nprocs: int
    memory_per_proc: int
    memory_source: str
    total_memory: int
    total_memory_source: str
    lmax: int
    scheduled_time: float
    partitions: list[int]
    rewrite_all: bool
    shared: bool
    unique: bool
    quick: bool
    check: bool
    stall_timeout: float | None = None

    @property
    def tu(self) -> float:
        """Seconds per unit of weight U."""
        return self.scheduled_time / len(self.partitions) / plan.usum(self.rewrite_all)


def _source(cfg: RunConfig, key: str, flag: str) -> str:
    where = cfg.sources.get(key, "cli")
    return f"config file {where[len('config:'):]}" if where.startswith("config:") else flag


def make_plan(cfg: RunConfig, ranks: list[dict[str, Any]]) -> Plan:
    """Rank 0: the memory figures, Lmax, T and the partition sizes (UsageError when bad)."""
    from beff.core.metadata import node_memory_per_rank

    size = len(ranks)
    if cfg.options.memory_per_proc is not None:
        mem = cfg.options.memory_per_proc
        mem_src = _source(cfg, "memory_per_proc", "--memory-per-proc")
    elif cfg.options.quick:
        mem, mem_src = QUICK_MEMORY, "--quick (Lmax 2 MiB)"
    else:
        mem, mem_src = node_memory_per_rank(ranks), "node memory / ranks on the node"
    if cfg.options.total_memory is not None:
        total, total_src = cfg.options.total_memory, _source(cfg, "total_memory", "--total-memory")
    else:
        nodes: dict[str, int] = {}
        for r in ranks:
            nodes[str(r["node"])] = int(r.get("memory_bytes", 0))
        total, total_src = sum(nodes.values()), f"memory of the {len(nodes)} node(s)"
    parts = list(cfg.options.partitions) or plan.default_partitions(size)
    check_partitions(parts, size)
    if cfg.options.scheduled_time is not None:
        T = cfg.options.scheduled_time
    else:
        T = QUICK_SECONDS_PER_PARTITION * len(parts) if cfg.options.quick else DEFAULT_T
    return Plan(nprocs=size, memory_per_proc=mem, memory_source=mem_src, total_memory=total,
                total_memory_source=total_src, lmax=plan.lmax_from_memory(mem),
                scheduled_time=T, partitions=parts, rewrite_all=cfg.options.rewrite,
                shared=not cfg.options.noshared, unique=not cfg.options.nounique,
                quick=cfg.options.quick,
                check=cfg.check, stall_timeout=cfg.stall_timeout)


def check_partitions(parts: list[int], size: int) -> None:
    """-N: 1 to 10 sizes, each between 1 and the job's processes (UsageError)."""
    bad = [n for n in parts if not 1 <= n <= size]
    if bad:
        raise UsageError(f"-N: partition size {bad[0]} is not between 1 and the {size} "
                         f"process{'es' if size != 1 else ''} of the job")
    if len(parts) > MAX_PARTITIONS:
        raise UsageError(f"-N: at most {MAX_PARTITIONS} partition sizes, got {len(parts)}")


def new_record(p: Plan, uname: list[str]) -> BeffIORecord:
    P, N = len(p.partitions), plan.NPATTERNS
    sz = plan.sizes(p.lmax)
    table = np.array(plan.PATTERNS)
    return BeffIORecord(
        nprocs=p.nprocs, memory_per_proc=p.memory_per_proc, memory_source=p.memory_source,
        total_memory=p.total_memory, total_memory_source=p.total_memory_source, lmax=p.lmax,
        scheduled_time=p.scheduled_time, quick=p.quick, rewrite_all=p.rewrite_all,
        shared=p.shared, unique=p.unique, checked=p.check, uname=uname,
        partitions=np.array(p.partitions, dtype=np.int64),
        chunk=np.tile(np.array(sz.l, dtype=np.int64), (P, 1)),
        call=np.tile(np.array(sz.L, dtype=np.int64), (P, 1)),
        weight=table[:, 3].astype(np.int64), ptype=table[:, 0].astype(np.int64),
        row=table[:, 5].astype(np.int64), segment=np.zeros(P, dtype=np.int64),
        repetitions=np.full((3, P, N), -1, dtype=np.int64),
        t_pattern=np.full((3, P, N), np.nan),
        parts=np.full((3, P, N, p.nprocs, loops.NPARTS), np.nan),
        t_open=np.full((3, P, len(TYPES)), np.nan), t_close=np.full((3, P, len(TYPES)), np.nan),
        errors=np.zeros((3, P, N), dtype=np.int64), defects=np.zeros((3, P, N), dtype=np.int64),
        done=np.zeros((3, P), dtype=np.int64),
    )


@dataclass
class Kept:
    """``--resume``: what the file's b_eff_io finished (sent to every rank). Its phases are
    not measured again; the write phase's repetitions and sizes of a kept partition are
    replayed by its later phases, as they would have been."""

    done: np.ndarray  # [access, partition] 1: kept
    reps: np.ndarray  # [partition, pattern] the write phase's repetitions
    chunk: np.ndarray  # [partition, pattern]
    call: np.ndarray  # [partition, pattern]
    segment: np.ndarray  # [partition]


def kept_of(rec: BeffIORecord) -> Kept:
    return Kept(done=np.asarray(rec.done, dtype=np.int64).copy(),
                reps=np.asarray(rec.repetitions[WRITE], dtype=np.int64).copy(),
                chunk=np.asarray(rec.chunk, dtype=np.int64).copy(),
                call=np.asarray(rec.call, dtype=np.int64).copy(),
                segment=np.asarray(rec.segment, dtype=np.int64).copy())


def kept_differs(rec: BeffIORecord, p: Plan) -> str:
    """Why a resumed run would not measure what the kept phases measured ("" if it would):
    with ``--force`` the configuration may differ, but not what the phases are."""
    theirs = (rec.nprocs, rec.lmax, [int(n) for n in rec.partitions], rec.scheduled_time,
              rec.rewrite_all, rec.shared, rec.unique)
    ours = (p.nprocs, p.lmax, list(p.partitions), p.scheduled_time, p.rewrite_all, p.shared,
            p.unique)
    if theirs == ours:
        return ""
    return (f"--resume: the file's b_eff_io measured partitions {theirs[2]} with Lmax "
            f"{rec.lmax:,} and T {rec.scheduled_time:g} s; this run would measure "
            f"{ours[2]} with Lmax {p.lmax:,} and T {p.scheduled_time:g} s: its phases "
            "cannot be continued")


def pending(p: Plan, kept: Kept | None) -> list[tuple[int, int]]:
    """The phases a run measures, in order: all of them, or those ``kept`` lacks."""
    return [(a, i) for a, i in phases(p) if kept is None or not kept.done[a, i]]


@dataclass
class PhaseResult:
    """One rank's measurements of one access method at one partition size."""

    reps: np.ndarray  # [pattern]
    out: np.ndarray  # [pattern, loops.OUT_DEFECTS + 1]
    t_open: np.ndarray  # [type]
    t_close: np.ndarray
    chunk: np.ndarray
    call: np.ndarray
    segment: int
    hints: dict[str, dict[str, str]]


def phases(p: Plan) -> list[tuple[int, int]]:
    """(access method, partition index) in the order they run."""
    return [(a, i) for a in (WRITE, REWRITE, READ) for i in range(len(p.partitions))]


def types_of(p: Plan, a: int) -> list[int]:
    """The pattern types access method ``a`` runs (rewrite: type 0 only without --rewrite)."""
    return [0] if a == REWRITE and not p.rewrite_all else list(range(len(TYPES)))


def patterns_of(p: Plan, a: int) -> list[int]:
    return [k for k, q in enumerate(plan.PATTERNS) if q[0] in types_of(p, a)]


def steps(p: Plan, kept: Kept | None = None) -> int:
    """Patterns to run in all, for the progress bar."""
    return sum(len(patterns_of(p, a)) for a, _ in pending(p, kept))


class BeffIO:
    """The measurement on every rank; ``store(record)`` runs on rank 0 after each phase."""

    def __init__(self, MPI: types.ModuleType, p: Plan, record: BeffIORecord | None,
                 advance: Callable[[str], None], store: Callable[[BeffIORecord], None],
                 kept: Kept | None = None) -> None:
        self.MPI = MPI
        self.plan = p
        self.record = record
        self.advance = advance
        self.store = store
        self.world = MPI.COMM_WORLD
        self.rank = self.world.Get_rank()
        n_dbl = max(p.lmax, 2 * MIB) // ETYPE
        self.wbuf = -2.0 * np.arange(n_dbl, dtype=np.float64)
        self.rbuf = -2.0 * np.arange(n_dbl, dtype=np.float64) - 1.0
        self.sizes = plan.sizes(p.lmax)
        P = len(p.partitions)
        self.reps = np.zeros((P, plan.NPATTERNS), dtype=np.int64)  # the write phase's counts
        self.chunk = np.tile(np.array(self.sizes.l, dtype=np.int64), (P, 1))
        self.call = np.tile(np.array(self.sizes.L, dtype=np.int64), (P, 1))
        self.segment = np.zeros(P, dtype=np.int64)
        self.status = np.zeros(max(capi.status_size(), 8), dtype=np.uint8)
        self.flag = np.zeros(1, dtype=np.uint8)
        self.fh = np.zeros(1, dtype=np.int64)
        self.datarep = np.frombuffer(b"native\0", dtype=np.uint8).copy()
        self.corrupt = int(testhooks.corrupt() and self.rank == 0)
        self.partial: PhaseResult | None = None
        self.kept = kept
        if kept is not None:  # the kept write phases' repetitions and sizes, replayed
            for i in np.flatnonzero(kept.done[WRITE]):
                self.reps[i], self.chunk[i] = kept.reps[i], kept.chunk[i]
                self.call[i], self.segment[i] = kept.call[i], kept.segment[i]

    def types_of(self, a: int) -> list[int]:
        return types_of(self.plan, a)

    def stall_limit(self) -> float:
        """Seconds one phase (an access method at one partition size) may take before the
        guard aborts the job: a stopped rank leaves the others in a barrier forever."""
        if self.plan.stall_timeout is not None:
            return self.plan.stall_timeout
        return max(STALL_MIN_S, STALL_FACTOR * self.plan.scheduled_time
                   / len(self.plan.partitions))

    def run(self) -> None:
        try:
            self.run_phases()
        finally:
            _mpi.guard(None, "")

    def run_phases(self) -> None:
        """Every phase, or (``--resume``) those the file lacks. A kept write phase's files
        are gone (removed when its run ended): before the first later phase of that
        partition they are written again, unmeasured, as its finished phases left them."""
        laid: set[int] = set()
        for a, i in pending(self.plan, self.kept):
            if a != WRITE and self.kept is not None and self.kept.done[WRITE, i] \
                    and i not in laid:
                laid.add(i)
                self.step(WRITE, i, lay=True)
            self.step(a, i)

    def step(self, a: int, i: int, lay: bool = False) -> None:
        """One phase on every rank (``lay``: the files of a kept write phase written again,
        nothing stored)."""
        n = self.plan.partitions[i]
        _mpi.guard(self.stall_limit(), f"b_eff_io {ACCESSES[a]} at {n} processes"
                   + (" (--resume: the kept write phase's files, again)" if lay else ""))
        member = self.rank < n
        comm = self.world.Split(1 if member else 2, 0)
        failure, result = "", None
        self.partial = None
        try:
            if member:
                result = self.phase(a, i, n, comm, lay)
        except CollectiveFailure as exc:
            failure, result = str(exc), self.partial
        finally:
            comm.Free()
        # The ranks outside the partition wait the whole phase: asleep, not polling in MPI,
        # which on a node with more ranks than cores took the members' CPU time.
        _mpi.quiet_barrier(self.world)
        failures = [f for f in self.world.allgather(failure) if f]
        if not lay:
            results = self.world.gather(result, root=0)
            if self.record is not None and results is not None:
                self.collect(a, i, [r for r in results if r is not None])
                if failures:
                    self.record.failure = failures[0]
                self.store(self.record)
            _mpi.quiet_barrier(self.world)  # the others sleep while rank 0 writes
        if failures:
            raise CollectiveFailure(failures[0])

    def collect(self, a: int, i: int, results: list[PhaseResult]) -> None:
        """Rank 0: one phase's results into the record (rank 0's clock for the figures)."""
        rec = self.record
        assert rec is not None
        if not results:
            return
        first = results[0]
        rec.repetitions[a, i] = first.reps
        rec.t_pattern[a, i] = first.out[:, 0]
        rec.t_open[a, i] = first.t_open
        rec.t_close[a, i] = first.t_close
        rec.chunk[i], rec.call[i], rec.segment[i] = first.chunk, first.call, first.segment
        for r, res in enumerate(results):
            rec.parts[a, i, :, r, :] = res.out[:, :loops.NPARTS]
        for col, into in ((loops.OUT_ERRORS, rec.errors), (loops.OUT_DEFECTS, rec.defects)):
            into[a, i] = np.nansum([res.out[:, col] for res in results], axis=0)  # NaN: not run
        rec.done[a, i] = int(all(np.isfinite(first.out[p, 0]) for p in patterns_of(self.plan, a)))
        rec.hints_used.update(first.hints)

    def phase(self, a: int, i: int, n: int, comm: Comm, lay: bool = False) -> PhaseResult:
        """Access method ``a`` at partition ``i`` (n processes) on this member rank; what it
        measured before a failure stays in ``self.partial``. ``lay``: every type's file
        written again with the kept repetitions (``--resume``)."""
        N = plan.NPATTERNS
        res = self.partial = PhaseResult(
            reps=np.full(N, -1, dtype=np.int64),
            out=np.full((N, loops.OUT_DEFECTS + 1), np.nan),
            t_open=np.full(len(TYPES), np.nan), t_close=np.full(len(TYPES), np.nan),
            chunk=self.chunk[i], call=self.call[i], segment=0, hints={})
        for t in self.types_of(a):
            if a == WRITE and t == 3 and not lay:
                derived, seg = plan.derived_repetitions(list(self.reps[i]), self.sizes)
                self.reps[i] = derived
                full = plan.with_fill(self.sizes, seg, derived)
                self.chunk[i], self.call[i], self.segment[i] = full.l, full.L, seg
            res.segment = int(self.segment[i])
            if a == WRITE:
                first = plan.TYPE_START[t]
                need = int(self.segment[i]) * n if t >= 3 else int(self.call[i, first + 1]) * n
                run.collective(comm, functools.partial(run.check_space,
                                                       f"b_eff_io {TYPES[t]}", need),
                               "space check")
            self.one_type(a, i, n, t, comm, res, lay)
        return res

    def one_type(self, a: int, i: int, n: int, t: int, comm: Comm, res: PhaseResult,
                 lay: bool = False) -> None:
        """Open the type's file, run its patterns, close it (also after a failure)."""
        MPI = self.MPI
        me = comm.Get_rank()
        name = f"i{i:02d}_{n:03d}_{t}" + (f"-{me:03d}" if t == 2 else "")
        path = run.current().path(name)
        cname = np.frombuffer(str(path).encode() + b"\0", dtype=np.uint8).copy()
        amode = (MPI.MODE_CREATE | MPI.MODE_RDWR if a == WRITE else
                 MPI.MODE_RDWR if a == REWRITE else MPI.MODE_RDONLY |
                 (0 if run.keeps_files() else MPI.MODE_DELETE_ON_CLOSE))
        if self.plan.unique:
            amode |= MPI.MODE_UNIQUE_OPEN
        fcomm = MPI.COMM_SELF if t == 2 else comm
        with run.creating():  # as every open of the run's files
            seconds, err = loops.beffio_open(capi.handle(comm), capi.handle(fcomm),
                                             int(cname.ctypes.data), amode,
                                             capi.handle(run.info()), self.fh)
        run.agree_on(comm, err, f"b_eff_io {TYPES[t]}: MPI_File_open {path.name}")
        _mpi.injected_fault(f"b_eff_io/{TYPES[t]}", MPI.COMM_WORLD.Get_rank())
        if not lay:
            _mpi.injected_fault(f"b_eff_io/{ACCESSES[a]}/{TYPES[t]}", MPI.COMM_WORLD.Get_rank())
        res.t_open[t] = seconds
        fh = int(self.fh[0])
        if me == 0:
            res.hints[f"{ACCESSES[a]}/n{n}/{TYPES[t]}"] = run.hints_of(
                MPI.File.fromhandle(fh))
        disp = 0
        closed = False
        try:
            for p in (p for p, q in enumerate(plan.PATTERNS) if q[0] == t):
                self.pattern(a, i, n, t, p, comm, fh, disp, res.out, res.reps, lay)
                if t == 0 or (t == 1 and not self.plan.shared):
                    disp += n * int(res.reps[p]) * int(self.call[i, p])
                if not lay:
                    self.advance(f"{ACCESSES[a]} n={n} {TYPES[t]} "
                                 f"l={int(self.chunk[i, p]):,}")
            seconds, err = loops.beffio_close(capi.handle(comm), self.fh)
            closed = True
            run.agree_on(comm, err, f"b_eff_io {TYPES[t]}: MPI_File_close {path.name}")
            res.t_close[t] = seconds
        finally:
            if not closed:  # every rank of the partition failed here together
                loops.beffio_close(capi.handle(comm), self.fh)

    def pattern(self, a: int, i: int, n: int, t: int, p: int, comm: Comm, fh: int, disp: int,
                out: np.ndarray, reps: np.ndarray, lay: bool = False) -> None:
        """One pattern through the compiled loop, its results into ``out`` and ``reps``
        (``lay``: written with the kept repetitions and the stamps its kept phases left)."""
        MPI = self.MPI
        _, _, _, U, part, _ = plan.PATTERNS[p]
        l_dbl = int(self.chunk[i, p]) // ETYPE
        L_dbl = int(self.call[i, p]) // ETYPE
        strided = t == 0 or (t == 1 and not self.plan.shared)
        ftype = None
        view, vdisp, vtype = 0, 0, MPI.DOUBLE
        me = comm.Get_rank()
        if strided:
            ftype = MPI.DOUBLE.Create_darray(
                n, me, [n, l_dbl], [MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_NONE],
                [MPI.DISTRIBUTE_DFLT_DARG, MPI.DISTRIBUTE_DFLT_DARG], [n, 1], MPI.ORDER_C)
            ftype.Commit()
            view, vdisp, vtype = 1, disp, ftype
        elif part == 0:
            view = 1
            vdisp = me * int(self.segment[i]) if t >= 3 else 0
        pos, coll = {0: (loops.INDV, 1), 1: (loops.SHARED, 1) if self.plan.shared else
                     (loops.INDV, 1), 2: (loops.INDV, 0), 3: (loops.INDV, 0),
                     4: (loops.INDV, 1)}[t]
        timed = int(a == WRITE and t <= 2 and not lay)
        a_old = 1 if self.plan.rewrite_all or t == 0 else 0
        stamp = a
        if lay:  # as the kept phases left the file: rewritten where the rewrite was kept
            assert self.kept is not None
            stamp = REWRITE if self.kept.done[REWRITE, i] and a_old else WRITE
        row = out[p]
        try:
            err = loops.beffio_pattern(
                stamp, loops.WRITE if a < READ else loops.READ, pos, coll, fh, capi.handle(comm),
                self.wbuf, self.rbuf, L_dbl, l_dbl, p, 0 if timed else int(self.reps[i, p]),
                self.plan.tu * U, timed, a_old, int(self.plan.check), self.corrupt, view,
                vdisp, capi.handle(MPI.DOUBLE), capi.handle(vtype),
                int(self.datarep.ctypes.data), capi.handle(MPI.INFO_NULL),
                int(self.status.ctypes.data), self.flag, capi.handle(MPI.BYTE), row)
        finally:
            if ftype is not None:
                ftype.Free()
        run.agree_on(comm, err, f"b_eff_io {ACCESSES[a]} {TYPES[t]} pattern {p}")
        reps[p] = int(row[loops.OUT_REPS])
        if timed:
            self.reps[i, p] = reps[p]
