"""IMB-MT's job: T threads per rank, each on its own duplicate of MPI_COMM_WORLD, measured by
the one loop every IMB-style suite uses under IMB-MT's schedule (:class:`.plan.MTPlan`).

MPI runs under MPI_THREAD_MULTIPLE (the suite's ``thread_level``); a library that provides
less is refused, on every rank, with one line (exit 2). T comes from ``-threads``, else from
``OMP_NUM_THREADS`` (rank 0's), else from the CPUs rank 0 may run on, as IMB-MT's OpenMP
finds it. Each thread's communicator is duplicated once per run, with the info key
``thread_id`` set to its index, as IMB-MT's ``duplicate_comm``; each benchmark gets each
thread's buffers (:meth:`MTJob.lanes`, ``-malloc_align``, ``-malloc_algo``).
"""

from __future__ import annotations

import ctypes
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from beff.bench.job import ImbJob, read_input_file
from beff.bench.plan import Plan
from beff.bench.registry import BenchmarkSpec, resolve
from beff.core import capi
from beff.core.config import RunConfig
from beff.core.errors import UsageError
from beff.core.progress import Bar
from beff.core.suite import Suite
from beff.imb.mt import kernels
from beff.imb.mt.options import TYPE_SIZES, parse_count, threads_from_env
from beff.imb.mt.plan import MTPlan, in_threads
from beff.results.model import Result

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


class MTJob(ImbJob):
    """One run of IMB-MT."""

    def __init__(self, suite: Suite) -> None:
        super().__init__(suite)
        self.comms: list[Any] = []  # every thread's communicator, during measure
        self.barrier: ThreadBarrier | None = None
        self.MPI: types.ModuleType | None = None

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

    def specs(self, cfg: RunConfig) -> list[BenchmarkSpec]:
        return resolve(self.suite, self.benchmarks, [], [])

    def plan(self, cfg: RunConfig) -> Plan:
        return MTPlan(cfg, self.comms, lambda spec, most: self.lanes(cfg, spec, most))

    # ------------------------------------------------------------------ every rank
    def notes(self) -> list[str]:
        if capi.active().name == "python" and int(self.derived.get("threads", 1)) > 1:
            return ["IMB-MT with the python backend: the threads hold the interpreter lock "
                    "between MPI calls, so they overlap only inside them"]
        return []

    def measure(self, MPI: types.ModuleType, cfg: RunConfig, emit: Callable[[Result], None],
                bar: Bar) -> str:
        world = MPI.COMM_WORLD
        threads = int(self.derived["threads"])
        capi.compile_only(*kernels.LOOPS)  # before any thread could compile them at once
        self.MPI = MPI
        self.comms = []
        for k in range(threads):
            comm = world.Dup()
            info = MPI.Info.Create()
            info.Set("thread_id", str(k))
            comm.Set_info(info)
            info.Free()
            self.comms.append(comm)
        self.barrier = ThreadBarrier(threads)
        try:
            super().measure(MPI, cfg, emit, bar)
            world.Barrier()
        finally:
            self.barrier.close()
            for comm in self.comms:
                comm.Free()
            self.comms = []
        return ""

    # ------------------------------------------------------------------ one benchmark
    def lanes(self, cfg: RunConfig, spec: BenchmarkSpec, most: int) -> list[kernels.Lane]:
        """Every thread's buffers (for ``most`` elements; -malloc_align, -malloc_algo) and
        what its compiled barrier needs."""
        MPI, barrier = self.MPI, self.barrier
        assert MPI is not None and barrier is not None
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


def job(suite: Suite) -> MTJob:
    return MTJob(suite)
