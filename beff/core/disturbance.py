"""Was the run disturbed? Each node's record of the CPU time that processes outside the job
took, and its load average, before, during and after the run (as pyperf and hyperfine warn
when other work shared the machine).

One rank per node, its node leader, samples:

* the node's busy CPU seconds (``/proc/stat``: every CPU's user, nice, system, irq, softirq
  and steal time; guest time is inside user);
* the CPU seconds of this job's ranks on the node (``/proc/PID/stat``: utime + stime of
  every thread of each rank);
* the 1-minute load average.

It samples once at the start (before the first measurement), at most once per
:data:`SAMPLE_EVERY_S` between two sizes (from the stall guard, which every suite arms at
each size or step: never inside a timed loop), and once after the last measurement. At most
:data:`MAX_SAMPLES` are kept: when full, every other sample goes and the spacing doubles.

Between two samples, the share of the node that other processes took is

    (busy seconds - the job's seconds) / (wall seconds x the node's CPUs)

and an interval in which it is above :data:`DISTURBED_SHARE` is *disturbed*. The launcher
(mpiexec, its proxies) and rank 0's file watcher count as other processes: they sleep
while the job measures. Without ``/proc`` (not Linux) nothing is recorded.
"""

from __future__ import annotations

import os
import time
import types
from dataclasses import dataclass, field
from typing import Any

SAMPLE_EVERY_S = 1.0
MAX_SAMPLES = 2048
# An interval is disturbed when other processes took more than this share of the node's
# CPUs on average: a tenth of the cores (one of ten busy, or a core's fifth on two cores).
DISTURBED_SHARE = 0.10
# A sample row: wall-clock time (time.time), the node's busy CPU seconds, the job's CPU
# seconds on the node, the 1-minute load average.
COLUMNS = ("time", "busy_s", "job_s", "load1")
try:
    _TICK = float(os.sysconf("SC_CLK_TCK"))  # the unit of /proc's CPU times
except (AttributeError, OSError, ValueError):
    _TICK = 100.0


def busy_seconds() -> float | None:
    """CPU seconds that every process of this (Linux) node has used since boot, or None."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()[1:]
    except OSError:
        return None
    # user nice system idle iowait irq softirq steal: all but idle and iowait
    return sum(int(v) for i, v in enumerate(fields[:8]) if i not in (3, 4)) / _TICK


def process_seconds(pids: list[int]) -> float:
    """CPU seconds (user + system, every thread) that the processes ``pids`` have used; a
    process that is gone counts 0."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICK


@dataclass
class Monitor:
    """A node leader's samples of its node (:data:`COLUMNS`)."""

    pids: list[int]
    cpus: int
    rows: list[tuple[float, float, float, float]] = field(default_factory=list)
    every: float = SAMPLE_EVERY_S
    next_at: float = 0.0

    def sample(self) -> None:
        busy = busy_seconds()
        if busy is None:
            return
        self.rows.append((time.time(), busy, process_seconds(self.pids), os.getloadavg()[0]))
        if len(self.rows) > MAX_SAMPLES:  # keep the first and last, every other one between
            self.rows = self.rows[:-1:2] + self.rows[-1:]
            self.every *= 2
        self.next_at = time.monotonic() + self.every

    def record(self, host: str) -> dict[str, Any]:
        return {"host": host, "cpus": self.cpus, "samples": [list(r) for r in self.rows]}


_monitor: Monitor | None = None


def tick() -> None:
    """Between two sizes (the stall guard's call): a sample if one is due."""
    if _monitor is not None and time.monotonic() >= _monitor.next_at:
        _monitor.sample()


def start(MPI: types.ModuleType) -> Any:
    """Every rank, collective: each node's leader starts sampling its node (its first
    sample). Returns the communicator of the node leaders (MPI_COMM_NULL elsewhere)."""
    global _monitor
    world = MPI.COMM_WORLD
    node = world.Split_type(MPI.COMM_TYPE_SHARED, world.Get_rank())
    pids = node.gather(os.getpid(), root=0)
    leading = node.Get_rank() == 0
    node.Free()
    leaders = world.Split(0 if leading else MPI.UNDEFINED, world.Get_rank())
    if leading:
        _monitor = Monitor(list(pids or []), os.cpu_count() or 1)
        _monitor.sample()
    return leaders


def finish(MPI: types.ModuleType, leaders: Any, windows: list[tuple[str, float, float]]
           ) -> dict[str, Any] | None:
    """The node leaders, collective among them: the last sample, and every node's record
    gathered on rank 0, which returns the run's record (None elsewhere): ``nodes`` (each
    node's host, CPUs and samples), the benchmarks' ``windows`` (key, start, end; rank 0's
    clock), ``share`` (the threshold) and ``columns``."""
    global _monitor
    monitor, _monitor = _monitor, None
    if leaders == MPI.COMM_NULL or monitor is None:
        return None
    import socket

    monitor.sample()
    nodes = leaders.gather(monitor.record(socket.gethostname()), root=0)
    leaders.Free()
    if nodes is None:
        return None
    return {"columns": list(COLUMNS), "share": DISTURBED_SHARE, "nodes": nodes,
            "windows": [list(w) for w in windows]}


# ---------------------------------------------------------------------- the verdict
@dataclass
class Interval:
    """Between two samples of one node: what other processes took, as a share of its CPUs."""

    host: str
    start: float
    end: float
    share: float
    load1: float


def intervals(record: dict[str, Any]) -> list[Interval]:
    """Every node's intervals between consecutive samples (of at least a tenth of a second:
    shorter ones are too coarse for the kernel's ticks)."""
    out = []
    for node in record.get("nodes", []):
        cpus = max(1, int(node.get("cpus", 1)))
        rows = node.get("samples", [])
        for a, b in zip(rows, rows[1:], strict=False):
            wall = b[0] - a[0]
            if wall < 0.1:
                continue
            others = max(0.0, (b[1] - a[1]) - (b[2] - a[2]))
            out.append(Interval(str(node.get("host", "")), a[0], b[0],
                                others / (wall * cpus), b[3]))
    return out


def disturbed(record: dict[str, Any]) -> list[Interval]:
    """The intervals in which other processes took more than the record's share."""
    limit = float(record.get("share", DISTURBED_SHARE))
    return [i for i in intervals(record) if i.share > limit]


def during(record: dict[str, Any], found: list[Interval]) -> list[str]:
    """The benchmarks (their keys) whose windows overlap a disturbed interval, in order."""
    return [key for key, start, end in record.get("windows", [])
            if any(i.start < end and start < i.end for i in found)]


def warning(record: dict[str, Any] | None) -> str | None:
    """The run's warning, or None when no interval was disturbed."""
    if not record:
        return None
    found = disturbed(record)
    if not found:
        return None
    worst = max(found, key=lambda i: i.share)
    names = during(record, found)
    hosts = sorted({i.host for i in found})
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return (f"disturbed run: other processes took up to {worst.share:.0%} of the CPUs of "
            f"{', '.join(hosts)} (load {worst.load1:.2f}; limit {record.get('share', 0):.0%})"
            + (f", during {shown}" if shown else " between the benchmarks")
            + ": these timings may include their interference")
