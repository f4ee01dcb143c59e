"""The disturbance record's readers and verdict (beff.core.disturbance), without MPI."""

from __future__ import annotations

import os
import time

from beff.core import disturbance
from beff.core.disturbance import Monitor


def record(rows_per_node: dict[str, list[list[float]]], cpus: int = 2,
           windows: list[list[object]] | None = None) -> dict[str, object]:
    return {"columns": list(disturbance.COLUMNS), "share": disturbance.DISTURBED_SHARE,
            "nodes": [{"host": h, "cpus": cpus, "samples": rows}
                      for h, rows in rows_per_node.items()],
            "windows": windows or []}


def test_a_quiet_record_is_not_marked() -> None:
    # the node busy exactly as long as the job: nobody else ran
    rows = [[100.0 + t, 50.0 + 2 * t, 10.0 + 2 * t, 0.5] for t in range(5)]
    rec = record({"a": rows}, windows=[["mpi1/PingPong/np2", 100.0, 104.0]])
    assert [round(i.share, 6) for i in disturbance.intervals(rec)] == [0.0] * 4
    assert disturbance.disturbed(rec) == []
    assert disturbance.warning(rec) is None


def test_others_in_one_interval_name_the_benchmarks_it_overlaps() -> None:
    rows = [[100.0, 0.0, 0.0, 0.1], [101.0, 1.0, 1.0, 0.1], [102.0, 3.0, 2.0, 1.9],
            [103.0, 4.0, 3.0, 1.9]]
    windows: list[list[object]] = [["mpi1/PingPong/np2", 100.0, 101.2],
                                   ["mpi1/Sendrecv/np2", 101.2, 101.9],
                                   ["mpi1/Allreduce/np2", 102.0, 103.0]]
    rec = record({"hostA": rows, "hostB": [[100.0, 0.0, 0.0, 0.0], [103.0, 1.0, 1.0, 0.0]]},
                 windows=windows)
    (found,) = disturbance.disturbed(rec)
    assert (found.host, found.start, found.end) == ("hostA", 101.0, 102.0)
    assert abs(found.share - 0.5) < 1e-9  # 1 s of others on 2 CPUs over 1 s
    assert disturbance.during(rec, [found]) == ["mpi1/PingPong/np2", "mpi1/Sendrecv/np2"]
    said = disturbance.warning(rec)
    assert said is not None and "50% of the CPUs of hostA" in said
    assert "during mpi1/PingPong/np2, mpi1/Sendrecv/np2" in said and "Allreduce" not in said


def test_the_share_is_compared_with_the_records_own_limit() -> None:
    rows = [[0.0, 0.0, 0.0, 0.0], [1.0, 0.3, 0.0, 0.0]]  # 15% of 2 CPUs
    assert disturbance.disturbed(record({"a": rows}))
    assert not disturbance.disturbed({**record({"a": rows}), "share": 0.2})


def test_a_full_monitor_keeps_every_other_sample_and_samples_half_as_often() -> None:
    m = Monitor([os.getpid()], 2)
    for _ in range(disturbance.MAX_SAMPLES + 1):
        m.sample()
    assert len(m.rows) == disturbance.MAX_SAMPLES // 2 + 1
    assert m.every == 2 * disturbance.SAMPLE_EVERY_S
    times = [r[0] for r in m.rows]
    assert times == sorted(times)


def test_the_readers_count_this_process_and_the_node() -> None:
    """Spinning for 0.3 s adds about 0.3 s to this process's CPU time in /proc (as os.times
    counts it) and at least as much to the node's busy time."""
    busy0, own0, t0 = disturbance.busy_seconds(), disturbance.process_seconds([os.getpid()]), \
        os.times()
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
    busy1, own1, t1 = disturbance.busy_seconds(), disturbance.process_seconds([os.getpid()]), \
        os.times()
    assert busy0 is not None and busy1 is not None
    mine = (t1.user + t1.system) - (t0.user + t0.system)
    assert abs((own1 - own0) - mine) <= 0.03, (own1 - own0, mine)
    assert busy1 - busy0 >= (own1 - own0) - 0.03
    assert disturbance.process_seconds([2 ** 22 + 12345]) == 0.0  # no such process
