"""The measurement driver with a fake timer, in-process on one real MPI rank (as pyperf
drives its runner): time-out and out-of-mem rows, repetition policies and calibration are
checked exactly, with no timing noise."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from beff.bench.driver import Driver
from beff.bench.registry import BenchmarkSpec, Kind, Runner
from beff.core.config import build_config
from beff.results.model import OK, OUT_OF_MEM, SKIPPED, TIME_OUT, Measurement

MiB = 1 << 20


@pytest.fixture(scope="module")
def real_mpi() -> types.ModuleType:
    from mpi4py import MPI  # a singleton MPI process; the driver needs its communicators

    from beff.core import mpi as _mpi

    _mpi._MPI = MPI  # as _mpi.init would, without its signal watcher in the test process
    return MPI


@pytest.fixture(autouse=True)
def no_guard_left() -> Iterator[None]:
    """The driver arms a watchdog per size; none may outlive a test (it would end pytest)."""
    from beff.core import mpi as _mpi

    yield
    _mpi.guard(None, "")


class Clock:
    """MPI.Wtime of a world where a kernel iteration of X bytes takes ``cost(X)`` seconds."""

    def __init__(self, cost: Callable[[int], float]) -> None:
        self.now = 0.0
        self.cost = cost
        self.runs: list[tuple[int, int]] = []  # (bytes, iterations) of every run() call

    def Wtime(self) -> float:  # noqa: N802 - MPI's name
        return self.now


def fake_mpi(real: types.ModuleType, clock: Clock) -> types.ModuleType:
    fake = types.ModuleType("fake_MPI")
    fake.__dict__.update({k: getattr(real, k) for k in dir(real) if not k.startswith("__")})
    fake.Wtime = clock.Wtime
    return fake


def spec(clock: Clock, kind: Kind = Kind.COLLECTIVE, **fields: Any) -> BenchmarkSpec:
    @contextmanager
    def kernel(ctx: Any, nbytes: int) -> Iterator[Runner]:
        def run(n: int) -> float:
            clock.runs.append((nbytes, n))
            t = n * clock.cost(nbytes)
            clock.now += t
            return t

        yield run

    return BenchmarkSpec(name="Fake", suite="fake", kernel=kernel, kind=kind, **fields)


def measure(real: types.ModuleType, clock: Clock, s: BenchmarkSpec, **cfg: Any) -> Measurement:
    out: list[Measurement] = []
    Driver(fake_mpi(real, clock), build_config({"suite": "mpi1", **cfg})).run(s, out.append)
    assert len(out) == 1
    return out[0]


def test_time_out_row_ends_the_benchmark(real_mpi: types.ModuleType) -> None:
    # 1 ms per iteration whatever the size; budget = (max_log - min_log - 1) * time = 3 s
    clock = Clock(lambda nbytes: 1e-3)
    m = measure(real_mpi, clock, spec(clock), msglog_min=0, msglog_max=4, time=1.0,
                batches=1)
    # each size: calibration 1 + 1000 iterations, then about 1 s of timed ones
    assert m.status[0] == OK and TIME_OUT in m.status
    first = m.status.index(TIME_OUT)
    assert all(s == SKIPPED for s in m.status[first + 1:])
    assert m.failed
    assert np.isnan(m.times[first:]).all() and np.isfinite(m.times[:first]).all()


def test_out_of_mem_row_at_the_first_size_above_mem(real_mpi: types.ModuleType) -> None:
    clock = Clock(lambda nbytes: 1e-6)
    # send + receive buffer = 2 X; -mem 0.003 GiB (about 3.1 MiB) holds X = 1 MiB only
    m = measure(real_mpi, clock, spec(clock), msglen=[MiB, 2 * MiB, 4 * MiB], mem_gb=0.003,
                msglog_max=22, batches=1)
    assert m.status == [OK, OUT_OF_MEM, SKIPPED]
    assert m.needed_gb is not None and m.needed_gb[1] == pytest.approx(4 * MiB / 2**30 + 0.001)


def test_policy_off_runs_msgspersample_exactly(real_mpi: types.ModuleType) -> None:
    clock = Clock(lambda nbytes: 1e-3)
    m = measure(real_mpi, clock, spec(clock), msglog_min=0, msglog_max=3, iter_policy="off",
                msgspersample=37, warm_up=False, batches=4, time=100.0)
    assert (m.repetitions == 37).all()
    # no calibration: only the four timed batches per size (37 = 10 + 9 + 9 + 9)
    assert [n for _, n in clock.runs] == [10, 9, 9, 9] * len(m.sizes)


def test_dynamic_policy_fits_time(real_mpi: types.ModuleType) -> None:
    clock = Clock(lambda nbytes: 2e-4)  # 0.2 ms per iteration
    m = measure(real_mpi, clock, spec(clock), msglog_min=0, msglog_max=12, time=0.05,
                warm_up=False, batches=1)
    ok = np.array(m.status) == OK
    # IMB: 1 iteration, then 1000 (t < 1 ms), then t_sample = int(1 + time / t_iter) = 251;
    # 0.25 s per size: the budget of 11 x 0.05 s is checked after the third calibration
    # (0.70 s) and ends the benchmark
    assert m.repetitions[ok].tolist() == [251, 251]
    assert m.status[2] == TIME_OUT
    assert clock.runs[:3] == [(0, 1), (0, 1000), (0, 251)]


def test_multiple_np_and_auto_for_rooted(real_mpi: types.ModuleType) -> None:
    clock = Clock(lambda nbytes: 1e-6)
    rooted = spec(clock, rooted=True)
    m = measure(real_mpi, clock, rooted, msglen=[4, 1 << 20], msglog_max=20,
                iter_policy="auto", warm_up=False, batches=1)
    # rounded hyperbola msgspersample * M / (NP * max(X, 4) + M) with M = 2^20, NP = 1
    assert m.repetitions.tolist() == [round(1000 * (1 << 20) / (4 + (1 << 20))), 500]
    assert [n for _, n in clock.runs] == [1000, 500]  # no calibration runs


def test_multiple_np_is_taken_by_any_benchmark_and_auto_is_dynamic_unless_rooted(
        real_mpi: types.ModuleType) -> None:
    clock = Clock(lambda nbytes: 1e-6)
    m = measure(real_mpi, clock, spec(clock), msglen=[4, 1 << 20], msglog_max=20,
                iter_policy="multiple_np", warm_up=False, batches=1)
    assert m.repetitions.tolist() == [round(1000 * (1 << 20) / (4 + (1 << 20))), 500]
    assert [n for _, n in clock.runs] == [1000, 500]
    clock = Clock(lambda nbytes: 1e-6)
    m = measure(real_mpi, clock, spec(clock), msglen=[4, 1 << 20], msglog_max=20,
                iter_policy="auto", warm_up=False, batches=1, time=100.0)
    # dynamic: msgspersample, capped at 1 MiB by OVERALL_VOL / X = 40 MiB / 1 MiB; each size
    # calibrates first (1 iteration, then a test batch of 1000, within that cap too)
    assert m.repetitions.tolist() == [1000, 40]
    assert [n for _, n in clock.runs] == [1, 1000, 1000, 1, 40, 40]


def test_user_sizes_never_grow_the_count(real_mpi: types.ModuleType) -> None:
    # cost grows with size; the list is out of order: the count must not grow with the size
    clock = Clock(lambda nbytes: 1e-4 * (1 + nbytes / 1024))
    m = measure(real_mpi, clock, spec(clock), msglen=[4096, 1024, 16384], msglog_max=14,
                time=0.2, warm_up=False, batches=1)
    by_size = dict(zip(m.sizes.tolist(), m.repetitions.tolist(), strict=True))
    assert by_size[1024] >= by_size[4096] >= by_size[16384]


def test_a_failed_size_ends_later_process_counts(real_mpi: types.ModuleType) -> None:
    clock = Clock(lambda nbytes: 1e-3)
    s = spec(clock)

    class ThreeCounts(Driver):
        def run_count(self, spec: BenchmarkSpec, np_: int, mode: str = "") -> Measurement:
            seen.append(np_)
            m = measure(real_mpi, clock, spec, msglog_max=2, batches=1)
            m.status[-1] = TIME_OUT if np_ == 2 else m.status[-1]
            return m

    seen: list[int] = []
    driver = ThreeCounts(fake_mpi(real_mpi, clock), build_config({"suite": "mpi1", "npmin": 1}))
    done = types.SimpleNamespace(Test=lambda: True)
    driver.world = types.SimpleNamespace(Get_size=lambda: 4, Get_rank=lambda: 0,  # type: ignore[assignment]
                                         bcast=lambda v, root=0: v, Ibarrier=lambda: done)
    driver.run(s, lambda m: None)
    assert seen == [1, 2]  # counts 1, 2, 4: the time-out at 2 ends the sweep
