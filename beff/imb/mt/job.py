"""IMB-MT's job: T threads per rank, each on its own duplicate of MPI_COMM_WORLD.

MPI runs under MPI_THREAD_MULTIPLE (the suite's ``thread_level``); a library that provides
less is refused, on every rank, with one line (exit 2). T comes from ``-threads``, else from
``OMP_NUM_THREADS`` (rank 0's), else from the CPUs rank 0 may run on, as IMB-MT's OpenMP
finds it. Each thread's communicator is duplicated once per run, with the info key
``thread_id`` set to its index, as IMB-MT's ``duplicate_comm``.

For each benchmark (in IMB-MT's order, or as named) and each ``-count``, every thread of every
rank runs the benchmark's kernel (:mod:`.kernels`) in a Python thread of its own: thread 0 is
the main thread, the others are started for that count and joined after it, as IMB-MT opens
an OpenMP parallel region per count. The kernels' compiled loops hold no interpreter lock, so
the threads' MPI calls run at the same time. Each thread's loop seconds are gathered on rank 0
into one :class:`~beff.results.model.Measurement` per benchmark, with one column per rank and
thread (rank-major: column j is rank j // T, thread j % T).
"""

from __future__ import annotations

import ctypes
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from beff.bench import measured
from beff.bench.ctx import Ctx
from beff.bench.job import read_input_file
from beff.bench.registry import BenchmarkSpec, resolve
from beff.bench.schedule import split_batches
from beff.core import capi
from beff.core import mpi as _mpi
from beff.core.config import RunConfig, stall_limit
from beff.core.errors import UsageError
from beff.core.progress import Bar
from beff.core.suite import Suite
from beff.imb.mt import kernels
from beff.imb.mt.options import TYPE_SIZES, parse_count, threads_from_env
from beff.results.model import (
    OK,
    UNSUPPORTED,
    Measurement,
    Result,
    RunRecord,
    measurement_key,
)
from beff.results.placement import annotate

# The IMB flags IMB-MT has besides its own (its generic ones).
THREAD_NAMES = {0: "MPI_THREAD_SINGLE", 1: "MPI_THREAD_FUNNELED", 2: "MPI_THREAD_SERIALIZED",
                3: "MPI_THREAD_MULTIPLE"}
BARRIER_BYTES = 256  # room for a pthread_barrier_t (32 bytes on x86_64 glibc)


def thread_level_refusal(provided: int, names: dict[int, str] = THREAD_NAMES) -> str:
    """The one line that refuses a library providing less than MPI_THREAD_MULTIPLE ("" if it
    provides it); ``provided`` is MPI_Query_thread's answer (0 single ... 3 multiple)."""
    if provided >= 3:
        return ""
    return (f"IMB-MT needs MPI_THREAD_MULTIPLE, but this MPI library provides only "
            f"{names.get(provided, str(provided))}")


def aligned(nbytes: int, align: int) -> np.ndarray:
    """``nbytes`` of zeros starting on a multiple of ``align``, as IMB-MT's AlignedAllocator
    (which always skips 1 to ``align`` bytes of a malloc'd block)."""
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    skip = align - raw.ctypes.data % align
    return raw[skip : skip + nbytes]


class ThreadBarrier:
    """A pthread barrier for the T threads of this rank (where IMB-MT's meet at OpenMP's)."""

    def __init__(self, threads: int) -> None:
        self.libc = ctypes.CDLL(None)
        self.memory = np.zeros(BARRIER_BYTES // 8, dtype=np.uint64)
        rc = self.libc.pthread_barrier_init(ctypes.c_void_p(self.address), None,
                                            ctypes.c_uint(threads))
        if rc:
            raise OSError(rc, f"pthread_barrier_init({threads}) failed")

    @property
    def address(self) -> int:
        return int(self.memory.ctypes.data)

    def close(self) -> None:
        self.libc.pthread_barrier_destroy(ctypes.c_void_p(self.address))


def in_threads(threads: int, work: Callable[[int], Any]) -> list[Any]:
    """``work(k)`` for k = 0 .. threads - 1 at once: k = 0 in this thread, the others in
    threads started now and joined. An exception of thread 0 is raised at once (the others
    may wait for it forever: the job is aborted); another's after the join."""
    results: list[Any] = [None] * threads
    errors: list[BaseException | None] = [None] * threads

    def target(k: int) -> None:
        try:
            results[k] = work(k)
        except BaseException as exc:  # noqa: BLE001 - raised again in the main thread
            errors[k] = exc

    started = [threading.Thread(target=target, args=(k,), name=f"beff-mt-{k}", daemon=True)
               for k in range(1, threads)]
    for t in started:
        t.start()
    target(0)
    if errors[0] is not None:
        raise errors[0]
    for t in started:
        t.join()
    for exc in errors:
        if exc is not None:
            raise exc
    return results


class MTJob:
    """One run of IMB-MT."""

    streaming = True
    network = True

    def __init__(self, suite: Suite) -> None:
        self.suite = suite.name
        self.derived: dict[str, Any] = {}
        self.benchmarks: list[str] = []
        self.ranks: list[dict[str, Any]] = []
        self.cfg: RunConfig | None = None
        self.done: dict[str, bool] = {}  # --resume: the file's results (key -> failed)

    # ------------------------------------------------------------------ rank 0, before
    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        if cfg.sources.get("thread_level", "default") != "default" and \
                cfg.thread_level != "multiple":
            raise UsageError(f"IMB-MT runs under -thread_level multiple only (beff imb mt "
                             f"always asks for it), not {cfg.thread_level}")
        refusal = thread_level_refusal(int(MPI.Query_thread()))
        if refusal:
            raise UsageError(refusal)
        if not hasattr(ctypes.CDLL(None), "pthread_barrier_wait"):
            raise UsageError("IMB-MT's threads meet at a pthread barrier, which this C "
                             "library lacks")
        opts = cfg.options
        threads, source = (int(opts["threads"]), "-threads") if opts["threads"] else \
            threads_from_env()
        checking = bool(cfg.check)  # --check, or IMB-MT's -check on
        if checking and opts["datatype"] != "int":
            raise UsageError("-check: only -datatype int can be checked (as in IMB-MT)")
        names = list(opts.benchmarks)
        if opts.input_file is not None:
            names += read_input_file(opts.input_file)
        self.benchmarks = [s.name for s in resolve(self.suite, names, opts.include,
                                                   opts.exclude)]
        self.derived.update(threads=threads, threads_from=source,
                            counts=parse_count(str(opts["count"])),
                            type_size=TYPE_SIZES[str(opts["datatype"])], checked=checking,
                            thread_level="multiple")

    def resume(self, record: RunRecord) -> None:
        """Rank 0, ``--resume``: the results ``record`` holds are not measured again."""
        self.done = {r.key: r.failed for r in record.measurements}

    def names(self) -> list[str]:
        return list(self.benchmarks)

    def specs(self) -> list[BenchmarkSpec]:
        return resolve(self.suite, self.benchmarks, [], [])

    def counts(self, spec: BenchmarkSpec) -> list[int]:
        """The element counts ``spec`` runs: -count's, BarrierMT one (of none)."""
        return [0] if spec.name == "BarrierMT" else [int(c) for c in self.derived["counts"]]

    # ------------------------------------------------------------------ every rank
    def start(self, MPI: types.ModuleType, cfg: RunConfig,
              ranks: list[dict[str, Any]] | None) -> dict[str, Any]:
        self.ranks = ranks or []
        self.cfg = cfg
        return {}

    def notes(self) -> list[str]:
        if capi.active().name == "python" and int(self.derived.get("threads", 1)) > 1:
            return ["IMB-MT with the python backend: the threads hold the interpreter lock "
                    "between MPI calls, so they overlap only inside them"]
        return []

    def steps(self, nprocs: int) -> int:
        return sum(len(self.counts(s)) for s in self.specs())

    def measure(self, MPI: types.ModuleType, cfg: RunConfig, emit: Callable[[Result], None],
                bar: Bar) -> str:
        world = MPI.COMM_WORLD
        threads = int(self.derived["threads"])
        capi.compile_only(*kernels.LOOPS)  # before any thread could compile them at once
        comms = []
        for k in range(threads):
            comm = world.Dup()
            info = MPI.Info.Create()
            info.Set("thread_id", str(k))
            comm.Set_info(info)
            info.Free()
            comms.append(comm)
        barrier = ThreadBarrier(threads)
        try:
            for spec in self.specs():
                if measurement_key(self.suite, spec.name, "", world.Get_size(), None) \
                        in self.done:  # the resumed file's (the same on every rank)
                    continue
                m = self.run(MPI, cfg, spec, comms, barrier, bar)
                if m is not None:
                    if not m.unsupported:
                        annotate(m, self.ranks)
                    emit(m)
            _mpi.guard(None, "")
            world.Barrier()
        finally:
            barrier.close()
            for comm in comms:
                comm.Free()
        return ""

    def finish(self, results: list[Result], nprocs: int) -> list[str]:
        return []

    # ------------------------------------------------------------------ one benchmark
    def lanes(self, MPI: types.ModuleType, cfg: RunConfig, spec: BenchmarkSpec,
              barrier: ThreadBarrier, most: int) -> list[kernels.Lane]:
        """Every thread's buffers (for ``most`` elements; -malloc_align, -malloc_algo) and
        what its compiled barrier needs."""
        opts = cfg.options
        world = MPI.COMM_WORLD
        threads = int(self.derived["threads"])
        type_size = int(self.derived["type_size"])
        align, algo = int(opts["malloc_align"]), str(opts["malloc_algo"])
        size_a = type_size * most
        size_b = size_a * (2 if spec.recvbuf > 1 else 1)
        window = int(opts["window_size"])
        slots = max(2, 2 * window)
        if algo == "parallel":  # each thread allocates (and so first touches) its own
            buffers = in_threads(threads, lambda k: (aligned(size_a, align),
                                                     aligned(size_b, align)))
        elif algo == "continuous":
            a, b = aligned(size_a * threads, align), aligned(size_b * threads, align)
            buffers = [(a[k * size_a : (k + 1) * size_a], b[k * size_b : (k + 1) * size_b])
                       for k in range(threads)]
        else:
            buffers = [(aligned(size_a, align), aligned(size_b, align)) for _ in range(threads)]
        zero = np.zeros(1, dtype=np.uint8)
        out = []
        for k, (send, recv) in enumerate(buffers):
            statuses = np.zeros(slots * capi.status_size(), dtype=np.uint8)
            requests = np.zeros(slots * capi.handle_size(), dtype=np.uint8)
            status = np.zeros(capi.status_size(), dtype=np.uint8)
            sync = np.array([kernels.BARRIERS[str(opts["barrier"])], barrier.address, k,
                             capi.handle(world), world.Get_rank(), world.Get_size(),
                             int(zero.ctypes.data), capi.handle(MPI.BYTE),
                             int(status.ctypes.data)], dtype=np.int64)
            lane = kernels.Lane(
                index=k, threads=threads, sync=sync, send=send, recv=recv,
                ack=np.zeros(1, dtype=np.uint8), status=int(status.ctypes.data),
                statuses=int(statuses.ctypes.data), requests=int(requests.ctypes.data),
                dtype=capi.handle(MPI.INT if opts["datatype"] == "int" else MPI.CHAR),
                type_size=type_size, char=capi.handle(MPI.CHAR), op_sum=capi.handle(MPI.SUM),
                stride=int(opts["stride"]), window=window, warmup=int(opts["warmup"]),
                checking=bool(self.derived["checked"]), keep=(zero, status, statuses, requests))
            out.append(lane)
        return out

    def run(self, MPI: types.ModuleType, cfg: RunConfig, spec: BenchmarkSpec,
            comms: list[Any], barrier: ThreadBarrier, bar: Bar) -> Measurement | None:
        """Every count of ``spec`` on every thread of every rank; rank 0 returns the
        Measurement."""
        world = MPI.COMM_WORLD
        P, rank = world.Get_size(), world.Get_rank()
        threads = int(self.derived["threads"])
        type_size = int(self.derived["type_size"])
        counts = self.counts(spec)
        repeat, warmup = int(cfg.options["repeat"]), int(cfg.options["warmup"])
        window = int(cfg.options["window_size"])
        _mpi.injected_fault(spec.name, rank)
        lanes = self.lanes(MPI, cfg, spec, barrier, max(counts))
        ctxs = [Ctx(MPI, comms[k], cfg, spec, state=lanes[k]) for k in range(threads)]
        S, parts = len(counts), split_batches(repeat, max(1, cfg.batches))
        B = len(parts)
        seconds = np.full((S, threads, B), np.nan)  # each thread's timed seconds per batch
        defects = np.zeros(S, dtype=np.int64)
        for i, count in enumerate(counts):
            messages = (repeat + warmup) * (window if spec.name in kernels.WINDOWED else 1)
            step = messages * threads * (20e-6 + count * type_size / 1e8)
            _mpi.guard(stall_limit(cfg, step), f"{spec.name} at {P} processes, {count} "
                                               "elements")
            if rank == 0:
                bar(f"{spec.name} {count} x {threads} threads")

            def work(k: int, count: int = count) -> tuple[np.ndarray, float, int]:
                ctx = ctxs[k]
                ctx.begin_size()
                ctx.batches = len(parts)
                secs = np.full(B, np.nan)
                took = 0.0
                with spec.kernel(ctx, count) as run:
                    # -repeat timed iterations, as batches one after the other
                    for ctx.batch, n in enumerate(parts):
                        figures = run(n)
                        assert isinstance(figures, tuple)
                        secs[ctx.batch], took = figures[0], figures[1]
                return secs, took, ctx.defects

            for k, (secs, took, bad) in enumerate(in_threads(threads, work)):
                if took:
                    seconds[i, k] = secs
                defects[i] += bad
        _mpi.guard(stall_limit(cfg, 1.0), f"{spec.name} at {P} processes, gathering the "
                                          "results")
        gathered = world.gather((seconds, defects), root=0)
        if gathered is None:
            return None
        return self.record(spec, cfg, counts, P, np.concatenate([g[0] for g in gathered],
                                                                axis=1),
                           np.sum([g[1] for g in gathered], axis=0), parts)

    def record(self, spec: BenchmarkSpec, cfg: RunConfig, counts: list[int], P: int,
               secs: np.ndarray, defects: np.ndarray, parts: list[int]) -> Measurement:
        """The Measurement of ``secs`` [count, rank x thread, batch] (NaN: a thread that sat
        out), the batches of ``parts`` iterations."""
        threads = int(self.derived["threads"])
        type_size = int(self.derived["type_size"])
        checking = bool(self.derived["checked"])
        opts = cfg.options
        repeat = int(opts["repeat"])
        window = int(opts["window_size"])
        S, cols, _ = secs.shape
        scale = spec.time_scale / (window if spec.name in kernels.WINDOWED else 1)
        took = np.isfinite(secs).any(axis=2)
        status = [OK if took[i].any() else UNSUPPORTED for i in range(S)]
        attrs: dict[str, Any] = {
            "threads": threads, "counts": counts,
            "datatype": opts["datatype"], "type_size": type_size, "stride": opts["stride"],
            "barrier": opts["barrier"], "warm_up_repetitions": int(opts["warmup"]),
            "column_order": "rank-major: column j is rank j // threads, thread j % threads",
            "participants": int(took[0].sum()),
        }
        if spec.name in kernels.WINDOWED:
            attrs["window_size"] = window
        if not took.any():
            attrs["unsupported"] = (
                f"{spec.name} not run on {P} process{'es' if P != 1 else ''}: no rank has a "
                f"partner at -stride {opts['stride']} (IMB-MT prints NO SUCCESSFUL "
                "EXECUTIONS)")
        return measured.from_batches(
            spec, sizes=np.asarray(counts, dtype=np.int64) * type_size * threads,
            repetitions=np.full(S, repeat, dtype=np.int64), status=status, samples=secs,
            batch_iters=np.broadcast_to(np.asarray(parts, dtype=np.int64),
                                        (S, cols, len(parts))).copy(),
            nprocs=P, world_ranks=np.repeat(np.arange(P, dtype=np.int64), threads),
            time_scale=scale, defects=defects if checking else None, checked=checking,
            attrs=attrs)


def job(suite: Suite) -> MTJob:
    return MTJob(suite)
