"""``beff map``'s job: its checks, the mapped ranks' communicator and buffers, the calibration
that sets the samples per pair, and passes over the shifts whose samples rank 0 gathers into
a growing record (stored about ten times during the run, rendered at the end)."""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from beff.core import capi
from beff.core import mpi as _mpi
from beff.core.buffers import malloc_like
from beff.core.config import RunConfig, stall_limit
from beff.core.errors import UsageError
from beff.core.progress import Bar
from beff.core.suite import Suite
from beff.netmap import outliers, schedule
from beff.netmap.loops import LOOPS, bandwidth_loop, latency_loop
from beff.netmap.options import size_text
from beff.netmap.record import MapRecord, derive
from beff.results.model import Result

IDLE_POLL_S = 0.002
CALIBRATION_STEP_S = 5.0  # what the calibration should take at most on a quick machine
STORES = 10  # rank 0 stores the growing record about this many times


def buffer_bytes(opts: dict[str, Any]) -> int:
    """What one mapped rank allocates: the bandwidth windows and the ping-pong messages."""
    return 2 * int(opts["window"]) * int(opts["size"]) + 4 * int(opts["latency_size"])


def check_placement(ranks: list[dict[str, Any]], mapped: list[int], opts: dict[str, Any],
                    per_node: int) -> None:
    """At least two mapped ranks, and buffers within half of each node's memory (UsageError
    otherwise). Rank 0 decides, from the ranks table; every rank hears its verdict."""
    if len(mapped) < 2:
        nodes = len({r["node"] for r in ranks})
        how = "every rank" if per_node == 0 else f"{per_node} rank(s) per node"
        raise UsageError(
            f"beff map needs at least 2 ranks to map, got {len(mapped)} ({how}; {len(ranks)} "
            f"rank(s) on {nodes} node(s)): run one rank on each of several nodes, or map "
            "ranks within a node with --per-node N or --all-ranks")
    P = len(mapped)
    K = schedule.shift_count(P, int(opts["shifts"]))
    held = schedule.record_bytes(P, K, int(opts["repetitions"]))
    memory = int(ranks[0].get("memory_bytes") or 0)
    if memory > 0 and held > memory // 2:
        raise UsageError(
            f"beff map would hold {size_text(held)} of samples on rank 0 (3 figures x {K} "
            f"shifts x {P} ranks x {opts['repetitions']} samples x 8 B): more than half of "
            f"{ranks[0]['host']}'s {size_text(memory)} of memory; measure fewer shifts "
            "(--shifts) or fewer samples (--repetitions)")
    need = buffer_bytes(opts)
    on_node: dict[int, int] = {}
    for w in mapped:
        on_node[int(ranks[w]["node"])] = on_node.get(int(ranks[w]["node"]), 0) + 1
    for w in mapped:
        r = ranks[w]
        memory, count = int(r.get("memory_bytes") or 0), on_node[int(r["node"])]
        if memory > 0 and count * need > memory // 2:
            raise UsageError(
                f"--size {size_text(int(opts['size']))} with --window {opts['window']} needs "
                f"{size_text(need)} of buffers per mapped rank, {count} on {r['host']}: more than "
                f"half of its {size_text(memory)} of memory; use a smaller --size or --window")


class MapJob:
    """One ``beff map``: the mapped ranks measure every shift (or K of them); the others wait
    in a polled nonblocking barrier."""

    network = True
    streaming = False

    def __init__(self, suite: Suite) -> None:
        self.derived: dict[str, Any] = {}
        self.opts: dict[str, Any] = {}
        self.started = time.monotonic()
        self.mapped: list[int] = []  # rank 0: the world ranks mapped
        self.nmapped = 0
        self.shifts: Sequence[int] = []
        self.hosts: list[str] = []
        self.node: list[int] = []
        self.index = -1  # this rank's place among the mapped ranks (-1: not mapped)
        self.nprocs = 0
        self.reps = 0
        self.over = False
        self.sample_s = 0.0
        self.comm: Any = None
        self.warnings: list[str] = []
        self.figures = ""  # rank 0: whose outliers are named (--outliers, auto resolved)

    # ------------------------------------------------------------------ rank 0, then all
    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        if MPI.COMM_WORLD.Get_size() < 2:
            raise UsageError("beff map needs at least 2 processes (P = 1 has no pair); run "
                             "it as `mpiexec -n P beff map` with one rank per node")
        self.opts = dict(cfg.options)
        seed = self.opts["seed"]
        self.derived = {"seed": int(time.time()) & 0xFFFFFFFF if seed is None else int(seed)}

    def names(self) -> list[str]:
        return ["map"]

    def check_ranks(self, ranks: list[dict[str, Any]]) -> None:
        """Rank 0, before any loop is readied: the placement can be mapped (UsageError
        otherwise, on every rank)."""
        per_node = 0 if self.opts["all_ranks"] else int(self.opts["per_node"])
        mapped = schedule.mapped_ranks([int(r["local_rank"]) for r in ranks], per_node,
                                       per_node == 0)
        check_placement(ranks, mapped, self.opts, per_node)

    def start(self, MPI: types.ModuleType, cfg: RunConfig,
              ranks: list[dict[str, Any]] | None) -> dict[str, Any]:
        """Every rank decides from its own node-local rank whether it is mapped; the
        mapped ranks' communicator (world order) gives its place among them, and one sum
        their count: no rank but 0 holds anything of size P but the shifts."""
        from beff.core import runtime

        world = MPI.COMM_WORLD
        self.started = time.monotonic()
        self.nprocs = world.Get_size()
        opts = self.opts
        per_node = 0 if opts["all_ranks"] else int(opts["per_node"])
        me = world.Get_rank()
        mine = schedule.mapped_ranks([int(runtime.own["local_rank"])], per_node, per_node == 0)
        self.comm = world.Split(0 if mine else MPI.UNDEFINED, me)
        self.index = self.comm.Get_rank() if mine else -1
        P = self.nmapped = _mpi.allreduce_number(world, int(bool(mine)), MPI.SUM)
        self.shifts = schedule.choose_shifts(P, int(opts["shifts"]), int(self.derived["seed"]))
        self.derived.update(nmapped=P, per_node=per_node, shifts=len(self.shifts))
        if ranks is not None:  # rank 0: who is mapped, where
            self.mapped = schedule.mapped_ranks([int(r["local_rank"]) for r in ranks],
                                                per_node, per_node == 0)
            assert self.nmapped == P
            self.hosts = [str(ranks[w]["host"]) for w in self.mapped]
            self.node = [int(ranks[w]["node"]) for w in self.mapped]
            self._judged(ranks)
        if self.index >= 0:
            capi.compile_only(*LOOPS)
            self._buffers(MPI)
        self._calibrate(MPI, cfg)
        if int(opts["shifts"]) > 0 and int(opts["shifts"]) >= P - 1:
            self.warnings.append(f"--shifts {opts['shifts']}: P - 1 = {P - 1} shifts exist; "
                                 "all of them are measured")
        return {}

    def _judged(self, ranks: list[dict[str, Any]]) -> None:
        """Rank 0: whose outliers are named, from --outliers and the placement (auto: none
        on one node or an oversubscribed job); a warning says why where pair figures judge
        no link."""
        from beff.core.metadata import placement

        where = placement(ranks)
        note = outliers.placement_note(int(where["nodes"]), bool(where["oversubscribed"]))
        self.figures = outliers.figures_judged(str(self.opts["outliers"]), note)
        self.derived.update(outliers=self.figures)
        if note:
            self.warnings.append(outliers.consequence(note, self.figures))

    def _buffers(self, MPI: types.ModuleType) -> None:
        opts = self.opts
        window, size, lsize = int(opts["window"]), int(opts["size"]), int(opts["latency_size"])
        self.sbuf = malloc_like(window * size, fill=1)
        self.rbuf = malloc_like(window * size)
        self.lsbuf = malloc_like(max(1, 2 * lsize), fill=1)
        self.lrbuf = malloc_like(max(1, 2 * lsize))
        self.hsize = capi.handle_size()
        self.requests = np.zeros(max(4, 2 * window) * self.hsize, dtype=np.uint8)
        self.statuses = np.zeros(max(4, 2 * window) * capi.status_size(), dtype=np.uint8)
        self.flag = np.zeros(1, dtype=np.int32)
        self.bw_out = np.zeros(2)
        self.lat_out = np.zeros(1)
        self.trips = np.zeros(int(opts["rounds"]))
        self.byte = capi.handle(MPI.BYTE)
        self.chandle = capi.handle(self.comm)

    def _calibrate(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        """The samples per pair the budget allows: one sample of the first shift, timed
        after one that opens the connections (the slowest rank's time counts)."""
        _mpi.guard(stall_limit(cfg, CALIBRATION_STEP_S), "beff map's calibration")
        _mpi.injected_stop("calibration")
        sample_s = 0.0
        if self.index >= 0:
            for _ in range(2):  # the first opens the connections; the second is timed
                t0 = time.perf_counter()
                self._latency(self.shifts[0])
                self._bandwidth(self.shifts[0])
                sample_s = time.perf_counter() - t0
        self.sample_s = _mpi.allreduce_number(MPI.COMM_WORLD, sample_s, MPI.MAX)
        opts = self.opts
        K = len(self.shifts)
        self.reps, self.over = schedule.repetitions(float(opts["time"]), K, self.sample_s,
                                                    int(opts["repetitions"]))
        self.derived.update(repetitions=self.reps, sample_s=self.sample_s)
        if self.over:
            self.warnings.append(
                f"the time budget --time {opts['time']:g} s is too short for 3 samples per "
                f"pair over {K} shifts ({self.sample_s * 1e3:.3g} ms per sample): 3 are "
                f"measured, about {3 * K * self.sample_s:.0f} s; use --shifts to measure "
                "fewer shifts")

    def notes(self) -> list[str]:
        return list(self.warnings)

    def steps(self, nprocs: int) -> int:
        return 2 * len(self.shifts) * self.reps

    # ------------------------------------------------------------------ measuring
    def _latency(self, shift: int) -> float:
        """One latency sample of ``shift`` on this rank: the seconds of its round trips."""
        dest, src = schedule.partners(self.index, self.nmapped, shift)
        opts = self.opts
        err = latency_loop(1, int(opts["rounds"]), int(self.lsbuf.ctypes.data),
                           int(self.lrbuf.ctypes.data), int(opts["latency_size"]), self.byte,
                           dest, src, self.chandle, int(self.requests.ctypes.data),
                           int(self.statuses.ctypes.data), self.hsize, self.flag, self.trips,
                           self.lat_out)
        capi.check(err, f"beff map's latency sample, shift {shift}")
        return float(self.lat_out[0])

    def _bandwidth(self, shift: int) -> tuple[float, float]:
        """One bandwidth sample of ``shift`` on this rank: the seconds until its sends
        completed and until its receives arrived."""
        dest, src = schedule.partners(self.index, self.nmapped, shift)
        opts = self.opts
        err = bandwidth_loop(1, int(opts["window"]), int(self.sbuf.ctypes.data),
                             int(self.rbuf.ctypes.data), int(opts["size"]), self.byte, dest,
                             src, self.chandle, int(self.requests.ctypes.data),
                             int(self.statuses.ctypes.data), self.hsize, self.flag,
                             self.bw_out)
        capi.check(err, f"beff map's bandwidth sample, shift {shift}")
        return float(self.bw_out[0]), float(self.bw_out[1])

    def _wait_for_all(self, MPI: types.ModuleType, cfg: RunConfig, seconds: float) -> None:
        """Every rank meets here: a nonblocking barrier polled with short sleeps (the ranks
        not mapped take no CPU from those measuring on an oversubscribed node)."""
        req = MPI.COMM_WORLD.Ibarrier()
        _mpi.guard(stall_limit(cfg, seconds), "waiting for the mapped ranks")
        while not req.Test():
            time.sleep(IDLE_POLL_S)

    def measure(self, MPI: types.ModuleType, cfg: RunConfig,
                emit: Callable[[Result], None], bar: Bar) -> str:
        """The latency samples, then the bandwidth samples (bulk transfers leave some
        transports slow to answer small messages for a while), each in passes over the
        shifts, one sample of each shift per pass: a disturbance of a few seconds then
        spoils one sample of many pairs rather than every sample of a few. Rank 0 gathers
        the new samples and stores the record about STORES times."""
        K, P, reps = len(self.shifts), self.nmapped, self.reps
        pass_s = K * self.sample_s
        if self.index < 0:
            self._wait_for_all(MPI, cfg, reps * pass_s + CALIBRATION_STEP_S)
            return ""
        record = self._record() if self.comm.Get_rank() == 0 else None
        mine = np.full((3, reps, K), np.nan)  # [send, recv, latency] x pass x shift
        every = max(1, -(-2 * reps // STORES))
        since = 0  # the first pass of this phase not gathered yet
        for step in range(2 * reps):
            latency, rep = step < reps, step % reps
            what = "latency" if latency else "bandwidth"
            _mpi.guard(stall_limit(cfg, pass_s), f"beff map, {what} pass {rep + 1} of {reps}")
            for s, shift in enumerate(self.shifts):
                if latency:
                    mine[2, rep, s] = self._latency(shift)
                else:
                    mine[:2, rep, s] = self._bandwidth(shift)
                bar(f"{what} {rep + 1}/{reps}, shift {shift} of {P - 1}")
            last = rep + 1 == reps
            if (step + 1) % every and not last:
                continue
            rows = slice(2, 3) if latency else slice(0, 2)
            new = np.ascontiguousarray(mine[rows, since:rep + 1])
            got = np.empty((P, *new.shape)) if record is not None else None
            self.comm.Gather(new, got, root=0)
            if record is not None and got is not None:
                targets = (record.latency_time,) if latency else (record.send_time,
                                                                  record.recv_time)
                for i, target in enumerate(targets):
                    target[:, :, since:rep + 1] = got[:, i].transpose(2, 0, 1)
                record.passes_done = step + 1
                record.runtime_s = time.monotonic() - self.started
                derive(record)
                emit(record)
            since = 0 if last else rep + 1
        self._wait_for_all(MPI, cfg, CALIBRATION_STEP_S)
        return ""

    def _record(self) -> MapRecord:
        opts = self.opts
        shape = (len(self.shifts), self.nmapped, self.reps)
        return MapRecord(
            nprocs=self.nprocs, nmapped=self.nmapped, per_node=int(self.derived["per_node"]),
            seed=int(self.derived["seed"]), size=int(opts["size"]),
            window=int(opts["window"]), latency_size=int(opts["latency_size"]),
            rounds=int(opts["rounds"]), budget_s=float(opts["time"]),
            max_repetitions=int(opts["repetitions"]), repetitions=self.reps,
            over_budget=self.over, calibration_s=self.sample_s, passes_done=0,
            runtime_s=0.0, threshold=float(opts["threshold"]),
            min_ratio=float(opts["min_ratio"]), outlier_figures=self.figures,
            hosts=list(self.hosts),
            world_rank=np.asarray(self.mapped, dtype=np.int64),
            node=np.asarray(self.node, dtype=np.int64),
            shifts=np.asarray(self.shifts, dtype=np.int64),
            send_time=np.full(shape, np.nan), recv_time=np.full(shape, np.nan),
            latency_time=np.full(shape, np.nan))

    def finish(self, results: list[Result], nprocs: int) -> list[str]:
        if self.comm is not None and self.comm != _mpi.mpi().COMM_NULL:
            self.comm.Free()
        return list(self.warnings)


def job(suite: Suite) -> MapJob:
    return MapJob(suite)
