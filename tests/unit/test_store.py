"""The HDF5 archive: schema round trip and the golden file of every schema version."""

from pathlib import Path

import h5py
import numpy as np
import pytest

from beff.results import stats
from beff.results.archive import SCHEMA_VERSION, load
from tests.data.make_golden import RANKS, measurements, write

DATA = Path(__file__).resolve().parents[1] / "data"


def structure(path: Path) -> dict[str, object]:
    """Names of groups, datasets and attributes, and dataset units."""
    out: dict[str, object] = {}
    with h5py.File(path, "r") as f:
        out["/"] = sorted(k for k in f.attrs if k not in ("updated", "finished"))

        def visit(name: str, obj: object) -> None:
            if isinstance(obj, h5py.Dataset):
                out[name] = obj.attrs.get("units", "")
            elif isinstance(obj, h5py.Group):
                out[name] = sorted(obj.attrs)

        f.visititems(visit)
    return out


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_golden_file_of_every_schema_version_loads(version: int) -> None:
    record = load(DATA / f"golden-schema-v{version}.h5")
    assert record.attrs["schema_version"] == version
    assert [m.benchmark for m in record.measurements] == ["PingPong", "Sendrecv"]
    pp = record.measurements[0]
    assert pp.time_scale == 0.5 and pp.idle == 1
    assert stats.summarize(pp).t_max[3] == pytest.approx(2.5)
    assert record.measurements[1].status[2] == "time-out"
    assert record.ranks[2]["host"] == "hostB"
    assert record.attrs["placement"]["nodes"] == 2


def test_writer_produces_the_golden_structure(tmp_path: Path) -> None:
    path = tmp_path / "now.h5"
    write(path)
    golden = DATA / f"golden-schema-v{SCHEMA_VERSION}.h5"
    assert structure(path) == structure(golden)


def test_round_trip_keeps_raw_samples(tmp_path: Path) -> None:
    path = tmp_path / "rt.h5"
    write(path)
    record = load(path)
    for before, after in zip(measurements(), record.measurements, strict=True):
        np.testing.assert_array_equal(before.sizes, after.sizes)
        np.testing.assert_array_equal(before.times, after.times)
        np.testing.assert_array_equal(before.samples, after.samples)
        np.testing.assert_array_equal(before.batch_iters, after.batch_iters)
        assert before.status == after.status
    assert record.ranks == [{**r} for r in RANKS]
    assert record.attrs["status"] == "complete"


def test_units_are_attributes(tmp_path: Path) -> None:
    path = tmp_path / "u.h5"
    write(path)
    with h5py.File(path, "r") as f:
        g = f["results/mpi1/PingPong/np2"]
        assert g["t_max"].attrs["units"] == "us"
        assert g["bandwidth"].attrs["units"].startswith("MB/s")
        assert g["samples"].attrs["units"] == "s"


def test_a_file_that_is_not_beff_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f.attrs["x"] = 1
    with pytest.raises(ValueError, match="not a beff result file"):
        load(path)
