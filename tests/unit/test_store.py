"""The HDF5 archive: schema round trip, and the golden file of every schema version."""

from pathlib import Path

import h5py
import numpy as np
import pytest

from beff.effbw.view import beff_summary
from beff.io.record import BeffIORecord
from beff.results import stats
from beff.results.archive import SCHEMA_VERSION, load
from tests.data.current_writer import (
    RANKS,
    beff_record,
    measurements,
    write,
    write_beff,
    write_beffio,
)

DATA = Path(__file__).resolve().parents[1] / "data"


def structure(path: Path) -> dict[str, object]:
    """Names of groups, datasets and attributes, dataset units and dtypes kinds."""
    out: dict[str, object] = {}
    with h5py.File(path, "r") as f:
        out["/"] = sorted(k for k in f.attrs if k not in ("updated", "finished"))

        def visit(name: str, obj: object) -> None:
            if isinstance(obj, h5py.Dataset):
                out[name] = (obj.attrs.get("units"), obj.dtype.kind, obj.shape)
            elif isinstance(obj, h5py.Group):
                out[name] = sorted(obj.attrs)

        f.visititems(visit)
    return out


def test_schema_1_golden_file_loads() -> None:
    record = load(DATA / "golden-schema-v1.h5")
    assert record.attrs["schema_version"] == 1
    assert [m.benchmark for m in record.measurements] == ["PingPong", "Sendrecv"]
    pp = record.measurements[0]
    assert pp.time_scale == 0.5 and pp.idle == 1
    assert stats.summarize(pp).t_max[3] == pytest.approx(2.5)
    # schema 1 stored no columns: they come from the benchmark class
    assert pp.columns == ("bytes", "repetitions", "t", "mbytes_per_sec")
    assert pp.mode == "" and pp.metrics == ("t",)
    assert record.measurements[1].status[2] == "time-out"
    assert record.ranks[2]["host"] == "hostB"
    assert record.attrs["placement"]["nodes"] == 2


def test_schema_2_golden_imb_file_loads() -> None:
    record = load(DATA / "golden-schema-v2-imb.h5")
    assert record.attrs["schema_version"] == 2 < SCHEMA_VERSION
    assert [m.benchmark for m in record.measurements] == ["PingPong", "Sendrecv", "Overlap"]
    assert stats.summarize(record.measurements[0]).t_max[3] == pytest.approx(2.5)
    ov = record.measurements[2]
    assert ov.mode == "aggregate" and ov.key == "golden/Overlap/aggregate/np2"
    assert ov.metrics == ("t_ovrl", "t_pure", "t_CPU")
    assert ov.columns == ("bytes", "repetitions", "t_ovrl", "t_pure", "t_CPU")
    assert stats.summarize(ov, metric="t_pure").t_max[3] == pytest.approx(5.0)
    assert ov.prepared["cpu_loops"][2, 1] == 21.0
    assert ov.attrs["backend"] == "jit"


def test_schema_2_golden_beff_file_derives_b_eff() -> None:
    record = load(DATA / "golden-schema-v2-beff.h5")
    summary = beff_summary(record)
    assert summary is not None
    # By hand: b = bw_min * scale, max over repetitions (rep 1 is 1.1x) and methods, then the
    # mean over the 3 lengths; b_eff = sqrt(ring * random) with one pattern each.
    lengths = np.array([1, 1024, 1 << 17])
    b_p = ((lengths * 1e3 + 1e6) * 1.1 * 2.0).mean()
    assert summary["b_eff_MBps"] == pytest.approx(b_p / 1e6, rel=1e-12)
    assert summary["pingpong_latency_us"] == pytest.approx(1e6 / ((1e3 + 1e6) * 1.1))
    assert [p["cross_node_share"] for p in summary["patterns"]] == [0.0, 0.5, 0.0]
    assert summary["final_line"].startswith("b_effSHORT = ")
    assert summary["final_line"].endswith("on Linux golden 6 #1 x86_64")


def test_schema_2_golden_beffio_file_derives_b_eff_io() -> None:
    from beff.io.record import summarize

    record = load(DATA / "golden-schema-v2-beffio.h5")
    assert record.result("beffio") is not None and record.result("beffio").uname[1] == "golden"
    s = summarize(record.result("beffio"))
    # By hand: every pattern moves 1 MiB per process in 0.01 s, so every type, average, WR
    # and b_eff_io is 104.8576 MB/s per process; the maximum is at n = 2.
    assert s.per_partition[0].write_MBps == pytest.approx(104.8576)
    assert s.b_eff_io_MBps == pytest.approx(209.7152) and s.nprocs_at_max == 2


def test_golden_files_of_every_schema_give_the_same_figures() -> None:
    """The JSON view of each family (what `show` derives) is the same from the schema-2 and
    schema-3 golden files, and schema 1's PingPong gives the figures schema 2 gives."""
    from beff.render.view import json_doc

    assert SCHEMA_VERSION == 3
    for name in ("imb", "beff", "beffio"):
        v2, v3 = (load(DATA / f"golden-schema-v{v}-{name}.h5") for v in (2, 3))
        assert v3.attrs["schema_version"] == 3 and v3.attrs["derived"] == {}
        assert json_doc(v2)["results"] == json_doc(v3)["results"], name
        assert len(json_doc(v3)["results"]) == (3 if name == "imb" else 1)
    v1 = load(DATA / "golden-schema-v1.h5")
    v2 = load(DATA / "golden-schema-v2-imb.h5")
    rows = [json_doc(r)["results"][0]["rows"] for r in (v1, v2)]
    assert rows[0] == rows[1]
    with h5py.File(DATA / "golden-schema-v3-imb.h5") as f:  # derived figures are not stored
        assert "t_avg" not in f["results/mpi1/PingPong/np2"]
        assert "t_avg" in h5py.File(DATA / "golden-schema-v2-imb.h5")["results/mpi1/PingPong/np2"]


@pytest.mark.parametrize("name, writer", [("imb", write), ("beff", write_beff),
                                          ("beffio", write_beffio)])
def test_writer_produces_the_golden_structure(tmp_path: Path, name: str, writer: object) -> None:
    path = tmp_path / "now.h5"
    writer(path)  # type: ignore[operator]
    golden = DATA / f"golden-schema-v{SCHEMA_VERSION}-{name}.h5"
    assert structure(path) == structure(golden)


def test_round_trip_keeps_raw_samples_and_every_metric(tmp_path: Path) -> None:
    path = tmp_path / "rt.h5"
    write(path)
    record = load(path)
    for before, after in zip(measurements(), record.measurements, strict=True):
        np.testing.assert_array_equal(before.sizes, after.sizes)
        np.testing.assert_array_equal(before.times, after.times)
        np.testing.assert_array_equal(before.samples, after.samples)
        np.testing.assert_array_equal(before.batch_iters, after.batch_iters)
        assert before.status == after.status
        assert (before.mode, before.columns, before.metrics) == (
            after.mode, after.columns, after.metrics)
        for name in before.more_times:
            np.testing.assert_array_equal(before.more_samples[name], after.more_samples[name])
        for name in before.prepared:
            np.testing.assert_array_equal(before.prepared[name], after.prepared[name])
    assert record.ranks == [{**r} for r in RANKS]
    assert record.attrs["status"] == "complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rt.h5"]  # one file, nothing beside


def test_a_running_file_is_read_with_its_parts_and_finishes_as_one_file(tmp_path: Path) -> None:
    """While the run measures, the results are in parts beside the file (the file holds the
    header) and load reads both, in run order; finish merges them into the file alone."""
    from beff.results import parts
    from beff.results.archive import ResultFile
    from tests.data.current_writer import ATTRS

    out = ResultFile(tmp_path / "run.h5")
    out.create(ATTRS, RANKS, exclusive=True)
    for m in reversed(measurements()):  # run order differs from the order of the names
        out.add(m)
    out.add(beff_record())
    with h5py.File(out.path, "r") as f:
        assert list(f["results"]) == [] and "beff" not in f
    assert len(parts.listing(parts.directory(out.path, out.run_id))) == 4
    running = load(out.path)
    assert [m.benchmark for m in running.measurements] == ["Overlap", "Sendrecv", "PingPong"]
    assert running.result("beff") is not None and running.attrs["status"] == "running"
    out.finish("complete")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]
    with h5py.File(out.path, "r") as f:
        assert f["results/golden/Overlap/aggregate/np2"].attrs["order"] == 0 and "beff" in f
    done = load(out.path)
    assert [m.benchmark for m in done.measurements] == ["Overlap", "Sendrecv", "PingPong"]
    np.testing.assert_array_equal(done.result("beff").bw_min if done.result("beff") else None,
                                  beff_record().bw_min)


def test_beff_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "b.h5"
    write_beff(path)
    rec = load(path).result("beff")
    assert rec is not None
    before = beff_record()
    np.testing.assert_array_equal(rec.bw_min, before.bw_min)
    assert rec.labels == before.labels and rec.official == before.official
    assert rec.seed == 7 and rec.short is True


def test_every_dataset_has_units_and_a_description(tmp_path: Path) -> None:
    for writer in (write, write_beff, write_beffio):
        path = tmp_path / f"u-{writer.__name__}.h5"
        writer(path)
        with h5py.File(path, "r") as f:
            names = _datasets(f)
            assert names and [n for n in names if "units" not in f[n].attrs] == []
            assert [n for n in names if not f[n].attrs.get("description")] == []
            assert any(n.startswith(("beff/", "beffio/")) for n in names) == (writer != write)
            if "results/mpi1/PingPong/np2" in f:
                g = f["results/mpi1/PingPong/np2"]
                assert g["times"].attrs["units"] == "s" and g["bytes"].attrs["units"] == "B"
                assert "t_max" not in g  # schema 3: derived figures are not stored


def _datasets(f: h5py.File) -> list[str]:
    names: list[str] = []
    f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return names


def test_a_file_that_is_not_beff_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f.attrs["x"] = 1
    with pytest.raises(ValueError, match="not a beff result file"):
        load(path)


def _beffio_file(path: Path, seconds: float = 0.01) -> BeffIORecord:
    """A b_eff_io record in which every pattern moves 1 MiB per process in ``seconds``."""
    from beff.io import beffio
    from beff.results.archive import ResultFile

    p = beffio.Plan(nprocs=2, memory_per_proc=64 << 20, memory_source="test",
                    total_memory=256 << 20, total_memory_source="test", lmax=2 << 20,
                    scheduled_time=16.0, partitions=[1, 2], rewrite_all=False, shared=True,
                    unique=True, quick=False, check=False)
    rec = beffio.new_record(p, ["Linux", "golden", "6", "#1", "x86_64"])
    rec.repetitions[:] = 1
    rec.call[:] = 1 << 20
    rec.t_pattern[:] = seconds
    rec.t_open[:] = rec.t_close[:] = 0.0
    rec.done[:] = 1
    rec.hints_used = {"write/n1/scatter": {"cb_nodes": "1"}}
    out = ResultFile(path)
    out.create({"nprocs": 2}, [])
    out.add(rec)
    return rec


def test_beffio_round_trip_and_derived_figures(tmp_path: Path) -> None:
    """A b_eff_io record survives the file, and the figures derived from it follow the
    original's averaging (checked by hand for uniform data)."""
    from beff.io.plan import NPATTERNS
    from beff.io.record import summarize

    path = tmp_path / "io.h5"
    rec = _beffio_file(path)
    back = load(path).result("beffio")
    assert back is not None and back.hints_used == rec.hints_used
    np.testing.assert_array_equal(back.t_pattern, rec.t_pattern)
    assert back.parts.shape == (3, 2, NPATTERNS, 2, 6) and back.uname[1] == "golden"
    s = summarize(back)
    # Per type: patterns x 1 MiB x n / (patterns x 0.01 s) = 104.8576 n MB/s for every type,
    # so every average, WR and b_eff_io is that too; the maximum is at n = 2.
    assert s.per_partition[1].write_MBps == pytest.approx(209.7152)
    assert s.b_eff_io_MBps == pytest.approx(209.7152) and s.nprocs_at_max == 2
    assert s.final_line.startswith(" b_eff_io =  209.715 MB/s on 2 processes with  64 "
                                      "MByte/PE, scheduled time=0.1 Min, on Linux golden")


def test_beffio_files_compare(tmp_path: Path) -> None:
    """`beff compare` of two b_eff_io files: B twice as slow halves every figure."""
    from beff.render.compare import compare_figures, kind_of_run

    _beffio_file(tmp_path / "a.h5")
    _beffio_file(tmp_path / "b.h5", seconds=0.02)
    a, b = load(tmp_path / "a.h5"), load(tmp_path / "b.h5")
    assert kind_of_run(a) == kind_of_run(b) == "b_eff_io"
    rows = compare_figures(a, b)
    assert {name for name, *_ in rows} >= {"b_eff_io_MBps", "n=1 read_MBps", "n=2 write_MBps"}
    assert all(vb == pytest.approx(va / 2) and up for _, va, vb, up in rows)


def test_b_eff_summary_is_typed_and_round_trips_through_json() -> None:
    """The typed, frozen summary: one to_json, and from_json for schema 1's stored figures
    (figures it lacks are NaN)."""
    import dataclasses
    import json

    from beff.effbw.record import BeffSummary, summarize

    rec = load(DATA / "golden-schema-v3-beff.h5").result("beff")
    s = summarize(rec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.b_eff_MBps = 0.0  # type: ignore[misc]
    doc = s.to_json()
    assert "b_eff_all_methods_MBps" not in doc and doc["per_length"][0]["bytes"] == 1
    again = BeffSummary.from_json(json.loads(json.dumps(doc)))
    assert json.dumps(again.to_json()) == json.dumps(doc)
    old = {k: v for k, v in doc.items() if k not in ("latency_ring_text_us", "patterns")}
    partial = BeffSummary.from_json(old)
    assert np.isnan(partial.latency_ring_text_us) and partial.patterns == ()
    assert partial.b_eff_MBps == s.b_eff_MBps


def test_compare_ignores_the_nul_open_mpi_puts_in_its_version() -> None:
    from beff.render.compare import mismatches

    a = {"mpi": {"library_version": "Open MPI v5.0.11, package: Open MPI\x00"}}
    b = {"mpi": {"library_version": "Open MPI v5.0.11, package: Open MPI"}}
    assert mismatches(a, b) == []
    assert mismatches(a, {"mpi": {"library_version": "MPICH Version: 5.0.2"}}) != []
