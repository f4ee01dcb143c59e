"""The one Measurement builder (beff.results.build) and the shapes a Measurement checks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from beff.bench.registry import resolve
from beff.results import build as measured
from beff.results.archive import ResultFile, load
from beff.results.model import OK, TIME_OUT, MeasurementError
from tests.data.current_writer import ATTRS, RANKS

PINGPONG = resolve("mpi1", ["PingPong"], [], [])[0]


def built() -> measured.Measurement:
    """PingPong at 2 ranks, 3 sizes, 4 batches; the last size timed out (nothing timed)."""
    samples = np.full((3, 2, 4), 0.25e-3)
    samples[2] = np.nan
    iters = np.full((3, 2, 4), 25)
    iters[2] = 0
    return measured.from_batches(PINGPONG, sizes=[0, 8, 1024], repetitions=np.array([100,
                                 100, 0]), status=[OK, OK, TIME_OUT], samples=samples,
                                 batch_iters=iters, nprocs=2, backend="jit")


def test_times_are_the_batches_sum_over_the_repetitions_times_the_scale() -> None:
    m = built()
    # PingPong: half a round trip (time_scale 0.5); 4 x 0.25 ms over 100 iterations
    assert m.time_scale == 0.5
    np.testing.assert_allclose(m.times[:2], 1e-3 / 100 * 0.5)
    assert np.isnan(m.times[2]).all()  # a size without a timed batch has no time
    assert list(m.world_ranks) == [0, 1] and list(m.group) == [0, 0]
    assert m.attrs["description"] == PINGPONG.description


def test_a_rank_that_timed_nothing_has_no_time() -> None:
    samples = np.full((1, 2, 3), 1e-3)
    samples[0, 1] = np.nan  # an RMA target: every batch NaN
    m = measured.from_batches(PINGPONG, sizes=[8], repetitions=np.array([30]), status=[OK],
                              samples=samples, batch_iters=np.full((1, 2, 3), 10), nprocs=2,
                              backend="jit")
    assert np.isfinite(m.times[0, 0]) and np.isnan(m.times[0, 1])


@pytest.mark.parametrize("change,words", [
    ({"times": np.zeros((2, 2))}, "times has shape (2, 2), not (3, *)"),
    ({"samples": np.zeros((3, 3, 4))}, "samples has shape (3, 3, 4), not (3, 2, *)"),
    ({"batch_iters": np.zeros((3, 2, 5))}, "batch_iters has shape (3, 2, 5), not (3, 2, 4)"),
    ({"status": [OK, OK]}, "2 statuses for 3 sizes"),
    ({"status": [OK, OK, "fine"]}, "unknown status ['fine']"),
    ({"world_ranks": np.arange(3)}, "world_ranks has shape (3,), not (2,)"),
    ({"more_samples": {"t_pure": np.zeros((3, 2, 1))}},
     "samples of t_pure has shape (3, 2, 1), not (3, 2, 4)"),
    ({"defects": np.zeros(4)}, "defects has shape (4,), not (3,)"),
])
def test_arrays_that_do_not_fit_together_are_refused(change: dict, words: str) -> None:
    with pytest.raises(MeasurementError) as err:
        dataclasses.replace(built(), **change)
    assert str(err.value) == f"mpi1 PingPong at 2 processes: {words}"


def test_an_unmeasured_benchmark_and_an_imported_table_fit_too() -> None:
    m = measured.unmeasured(PINGPONG, [0, 8], 3, "PingPong not run: why", checked=False)
    assert m.unsupported and m.samples.shape == (2, 3, 1) and m.attrs["unsupported"].endswith(
        "why")
    i = measured.imported(suite="mpi1", benchmark="PingPong", kind="single_transfer",
                          nprocs=2, ngroups=1, multi=None, idle=0, sizes=[0, 8],
                          repetitions=np.array([1000, 1000]), status=[OK, OK], group=[0, 0],
                          world_ranks=[0, 1], columns=("bytes", "repetitions", "t"),
                          printed={"t": np.array([[0.5], [0.6]])})
    assert i.samples.shape == (2, 2, 0) and np.isnan(i.times).all()


def test_iterations_every_rank_shares_are_held_once_and_stored_for_every_rank(
        tmp_path: Path) -> None:
    """Where every rank ran the same iterations (a group's ranks do), batch_iters is one
    rank's row broadcast over the ranks: the same values, no copy per rank; the file still
    holds every rank's. Ranks that differ keep their own rows."""
    m = built()
    assert m.batch_iters.shape == (3, 2, 4) and m.batch_iters.strides[1] == 0
    assert (m.batch_iters[:2] == 25).all() and (m.batch_iters[2] == 0).all()
    differ = np.full((3, 2, 4), 25)
    differ[0, 1, 0] = 24
    own = measured.from_batches(PINGPONG, sizes=[0, 8, 1024], repetitions=np.full(3, 100),
                                status=[OK] * 3, samples=np.full((3, 2, 4), 1e-4),
                                batch_iters=differ, nprocs=2, backend="jit")
    assert own.batch_iters.strides[1] != 0 and own.batch_iters[0, 1, 0] == 24
    out = ResultFile(tmp_path / "r.h5")
    out.create(ATTRS, RANKS, exclusive=True)
    out.add(m)
    stored = load(out.path).measurements[0].batch_iters
    assert stored.strides[1] != 0 and np.array_equal(stored, m.batch_iters)


def test_only_the_builder_builds_a_measurement() -> None:
    """Every engine, importer and reader goes through beff.results.build: no other module
    of the package calls the Measurement class (render/tables.py's is rich's own)."""
    import ast
    from pathlib import Path

    import beff

    root = Path(beff.__file__).parent
    callers = set()
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        imported = any(isinstance(node, ast.ImportFrom) and node.module == "beff.results.model"
                       and any(a.name == "Measurement" for a in node.names)
                       for node in ast.walk(tree))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "Measurement" and imported):
                callers.add(path.relative_to(root).as_posix())
    assert callers == {"results/build.py"}, callers


def test_imb_mt_columns_are_rank_and_thread_pairs_and_old_files_get_them(
        tmp_path: Path) -> None:
    """The thread of each column is stored beside its rank; a file written before that (its
    columns rank-major, as ``column_order`` says) reads with the same pairs."""

    def mt(thread: list[int] | None) -> measured.Measurement:
        return measured.from_batches(
            PINGPONG, sizes=[8], repetitions=np.array([4]), status=[OK],
            samples=np.ones((1, 6, 2)), batch_iters=np.full((1, 6, 2), 2), nprocs=2,
            world_ranks=[0, 0, 0, 1, 1, 1], thread=thread, backend="jit",
            attrs={"threads": 3, "column_order": "rank-major: column j is rank j // threads, "
                                                 "thread j % threads"})

    for thread in ([0, 1, 2, 0, 1, 2], None):  # this version's file, and an older one's
        out = ResultFile(tmp_path / f"mt-{thread is None}.h5")
        out.create(ATTRS, RANKS, exclusive=True)
        out.add(mt(thread))
        back = load(out.path).measurements[0]
        assert back.thread is not None and list(back.thread) == [0, 1, 2, 0, 1, 2]
        assert back.threads == 3
    assert built().thread is None and built().threads == 1
    with pytest.raises(MeasurementError, match="names two columns"):
        mt([0, 1, 1, 0, 1, 2])
