"""What a kernel gets (:class:`Ctx`): the MPI module, its group communicator, the run's options,
and helpers for buffers, handles and resources that live as long as one message size."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from beff.bench import window
from beff.bench.registry import BenchmarkSpec, Runner
from beff.core import capi, counts
from beff.core.buffers import BufferSet
from beff.core.config import RunConfig

if TYPE_CHECKING:  # mpi4py's own stubs; importing mpi4py.MPI at run time would start MPI
    from mpi4py.MPI import Comm


@dataclass
class Ctx:
    """What a kernel gets: the MPI module, its group communicator and the run options."""

    MPI: types.ModuleType
    comm: Comm
    cfg: RunConfig
    spec: BenchmarkSpec
    group_index: int = 0
    ngroups: int = 1
    n0: int = 1
    defects: int = 0
    mode: str = ""
    prepared: dict[str, float] = field(default_factory=dict)
    resources: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    state: Any = None  # what spec.setup yielded for this mode and process count
    # Facts a kernel records about the whole measurement (e.g. the hints in effect); rank 0's
    # are stored with it.
    attrs: dict[str, Any] = field(default_factory=dict)
    # Which timed batch of this size the next run() call is (0, 1, ...), or -1 for a call
    # that is not one (warm-up, calibration). Set by the engines that split one timed run
    # into batches; a kernel that carries state through the timed run (IMB-P2P's random
    # streams, IMB-MT's warm-up before the first batch only) reads it.
    batch: int = -1
    batches: int = 1  # how many timed batches this size's run is cut into
    # --per-iteration: where this size's timed run() calls record single iterations (every
    # iter_stride-th), and how many timed iterations came before the next call (the engine
    # sets them before the timed batches; None: not recorded)
    iter_times: np.ndarray | None = None
    iter_stride: int = 1
    iter_done: int = 0
    # --sync window: this size's windows for the timed calls (beff.bench.window; None: not
    # windowed), and which calls of the last timed run() were valid (None: it ran none)
    window: Any = None
    window_valid: np.ndarray | None = None
    # and this size's valid calls' times as the window policy defines them (the latest end
    # over the ranks less the common start), summed, with their count
    window_latest: list[float] = field(default_factory=lambda: [0.0, 0.0])
    # which twins the timed calls of this run use: readied (compiled or loaded) by an untimed
    # call, so that no timed call waits for a compile (beff.bench.driver)
    twins: tuple[str, ...] = ()

    def begin_size(self, n0: int = 1) -> None:
        """Forget what the previous message size prepared."""
        self.defects = 0
        self.n0 = n0
        self.prepared = {}
        self.batch = -1
        self.iter_times = None
        self.iter_done = 0
        self.window_latest = [0.0, 0.0]

    def prepare(self, name: str, value: float) -> None:
        """Record a figure of this size's preparation (e.g. a calibration); it is stored per
        size and rank with the results."""
        self.prepared[name] = float(value)

    def hold(self, release: Callable[[], Any]) -> None:
        """Have ``release`` (e.g. a request's Free) run when this size ends, however it ends."""
        self.resources.callback(release)

    def hold_collective(self, release: Callable[[], Any]) -> None:
        """Have the collective ``release`` (e.g. MPI_Win_free) run when this size ends
        normally. After an exception it is skipped: the other ranks may never call it, and
        the job is aborted (which frees everything) instead of waiting for them."""

        def exit_(exc_type: type[BaseException] | None, *_: Any) -> None:
            if exc_type is None:
                release()

        self.resources.push(exit_)

    @property
    def rank(self) -> int:
        return int(self.comm.Get_rank())

    @property
    def size(self) -> int:
        return int(self.comm.Get_size())

    def buffers(self, nbytes: int, fill: int = 0) -> BufferSet:
        """Message buffers honouring ``-off_cache`` (at most n0 slots, as IMB), except for a
        benchmark whose calls are bound to one buffer (``spec.one_buffer``)."""
        off_cache = None if self.spec.one_buffer else self.cfg.options.off_cache
        # New each size, as IMB 2021 frees its buffers after every size (IMB_del_s_buf).
        bufs = BufferSet(nbytes, off_cache, fill, self.n0, self.cfg.hugepages)
        # Alive until the size's resources are released (a window over them is freed first).
        self.keep(bufs.base)
        return bufs

    def handle(self, obj: Any) -> int:
        """The C handle of an mpi4py object (communicator, datatype, op) for a compiled loop."""
        return capi.handle(obj)

    def message(self, count: int, dtype: Any = None) -> tuple[int, int]:
        """(count, datatype handle) of ``count`` elements of ``dtype`` (MPI_BYTE) for a loop:
        beyond a C int, one element of a block type made for this size (:mod:`counts`)."""
        dtype = self.MPI.BYTE if dtype is None else dtype
        if count <= counts.limit():
            return count, self.handle(dtype)
        return 1, self.handle(self.block(dtype, count))

    def block(self, dtype: Any, count: int) -> Any:
        """A block type of ``count`` elements of ``dtype``, freed when this size ends."""
        block = counts.block_type(self.MPI, dtype, count)
        self.hold(block.Free)
        return block

    def keep(self, *objs: Any) -> None:
        """Keep ``objs`` (arrays a compiled loop only knows by address) alive until this size
        ends: the callback holds them."""
        self.resources.callback(objs.__len__)

    def scratch(self, statuses: int = 1, requests: int = 0) -> tuple[int, int]:
        """Addresses of room for ``statuses`` MPI_Status and ``requests`` MPI_Request handles,
        valid until this message size ends."""
        st = np.zeros(max(1, statuses) * capi.status_size(), dtype=np.uint8)
        rq = np.zeros(max(1, requests) * capi.handle_size(), dtype=np.uint8)
        self.keep(st, rq)
        return int(st.ctypes.data), int(rq.ctypes.data)

    def call(self, lf: capi.LoopFunc, *args: Any) -> tuple[float, ...]:
        """Call the compiled loop ``lf(*args) -> (figures..., err)``; raise if err reports a
        failed MPI call, else return the figures."""
        *figures, err = lf(*args)
        if err:  # the message only then: this runs between every two timed loops
            capi.check(err, f"{self.spec.name} (group of {self.size})")
        return tuple(map(float, figures))

    def ready_twins(self, lf: capi.LoopFunc) -> None:
        """Compile or load the twins of ``lf`` that this run's timed calls use (``twins``),
        from an untimed call: no timed call then waits for a compile."""
        for name in self.twins:
            twin = getattr(lf, name)
            if twin is not None:
                capi.active().ready(twin)

    def timed(self, lf: capi.LoopFunc, *args: Any, tally: Tally | None = None) -> Runner:
        """``run(n)``: call the compiled loop ``lf(n, *args) -> (seconds..., err)``, one
        seconds figure per declared metric; raise if err reports a failed MPI call."""

        def run(n: int) -> float | tuple[float, ...]:
            if self.batch < 0:
                self.ready_twins(lf)
            if self.window is not None and self.batch >= 0 and lf.windowed:
                got, _ = self.window.run(self.call, lf.windowed, n, *args)
                self.window_valid = got.valid
                self.window_latest[0] += float(got.latest[got.valid].sum())
                self.window_latest[1] += float(got.valid.sum())
                if self.iter_times is not None:  # --per-iteration: each valid call's time
                    window.record(self, got)
                seconds: tuple[float, ...] = (got.seconds,)
            elif self.iter_times is not None and self.batch >= 0 and lf.per_iteration:
                seconds = self.call(lf.per_iteration, n, *args, self.iter_times,
                                    self.iter_stride, self.iter_done)
                self.iter_done += n
            else:
                seconds = self.call(lf, n, *args)
            if tally is not None:
                tally.runs.append(n)
            return seconds[0] if len(seconds) == 1 else seconds

        return run


class Tally:
    """The iteration counts of a kernel's run() calls, for checking after the timed loop."""

    def __init__(self) -> None:
        self.runs: list[int] = []

    @property
    def last(self) -> int:
        """Index of the last call of the last run (the one whose data the check sees)."""
        return self.runs[-1] - 1 if self.runs else -1

    def uses(self, slot: int, cycle: int) -> int:
        """How many calls used off-cache slot ``slot`` of a ``cycle``-long cycle, in all runs."""
        return sum((n - slot + cycle - 1) // cycle for n in self.runs if n > slot)
