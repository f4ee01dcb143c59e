"""`beff compare` and the statistics of `beff show` on stored files (no MPI): files made from
the schema-3 golden file with ten synthetic batches per size."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np

from tests.mpirun import beff

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden-schema-v3-imb.h5"
PINGPONG = "results/mpi1/PingPong/np2"


def with_batches(path: Path, scale: float, seed: int) -> Path:
    """The golden file with PingPong's 4 sizes timed in 10 batches of 100 iterations: t
    times ``scale`` (1.5 = half as fast), batch spread 2 %."""
    shutil.copy(GOLDEN, path)
    rng = np.random.default_rng(seed)
    with h5py.File(path, "a") as f:
        g = f[PINGPONG]
        times = g["times"][()]  # [size, rank] seconds per iteration (x 0.5)
        per_iter = times[:, :, None] * scale * rng.gamma(2500, 1 / 2500, (4, 2, 10)) * 2
        for name in ("samples", "batch_iters", "times"):
            del g[name]
        g["batch_iters"] = np.full((4, 2, 10), 100, dtype=np.int64)
        g["samples"] = per_iter * 100
        g["times"] = per_iter.mean(axis=2) / 2
    return path


def test_compare_tests_every_size_and_says_slower(tmp_path: Path) -> None:
    a, b = with_batches(tmp_path / "a.h5", 1.0, 1), with_batches(tmp_path / "b.h5", 1.5, 2)
    r = beff("compare", str(a), str(b), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert list(doc)[:4] == ["kind", "a", "b", "differences"] and doc["differences"] == []
    assert doc["alpha"] == 0.05 and "Holm" in doc["method"]["correction"]
    verdicts = {(row["benchmark"], row["nbytes"]): row for row in doc["rows"]}
    for size in (0, 1, 2, 4):
        row = verdicts[("PingPong", size)]
        assert row["verdict"] == "slower" and row["p_holm"] <= 0.05
        assert row["ratio_low"] < row["ratio"] < row["ratio_high"]
        assert 1.4 < row["ratio"] < 1.6 and row["a_batches"] == row["b_batches"] == 10
    sendrecv = verdicts[("Sendrecv", 0)]  # one batch: the ratio, no test
    assert sendrecv["verdict"] == "not tested" and sendrecv["p"] is None
    untested = len(doc["rows"]) - 4  # Sendrecv and Overlap: one or two batches
    assert doc["verdicts"] == {"slower": 4, "faster": 0, "no significant difference": 0,
                               "not tested": untested} and untested >= 2
    table = beff("compare", str(a), str(b), env={"COLUMNS": "200"})
    assert table.returncode == 0
    assert "B is slower at 4, faster at 0 and not significantly different at 0 of 4 tested " \
           f"rows (α = 0.05, Holm-corrected); {untested} rows not tested" in table.stdout
    same = beff("compare", str(a), str(a), "--alpha", "0.01", "--format", "json")
    assert {row["verdict"] for row in json.loads(same.stdout)["rows"]
            if row["benchmark"] == "PingPong"} == {"no significant difference"}
    bad = beff("compare", str(a), str(b), "--format", "csv")
    assert bad.returncode == 2 and "compare writes table|json" in bad.stderr


def test_b_eff_files_compare_by_ratio_only(tmp_path: Path) -> None:
    beff_file = GOLDEN.parent / "golden-schema-v2-beff.h5"
    r = beff("compare", str(beff_file), str(beff_file), "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["note"] == "no samples: ratio only" and doc["figures"]
    assert all(f["ratio"] == 1.0 for f in doc["figures"])
    table = beff("compare", str(beff_file), str(beff_file), env={"COLUMNS": "200"})
    assert "no samples: ratio only" in table.stdout


def test_show_gives_the_interval_and_stability_in_every_format(tmp_path: Path) -> None:
    a = with_batches(tmp_path / "a.h5", 1.0, 1)
    with h5py.File(a, "a") as f:  # size 1: one batch 50 % slow, so the size is unstable
        samples = f[PINGPONG]["samples"][()]
        samples[1, :, 3] *= 1.5
        f[PINGPONG]["samples"][...] = samples
    csv = beff("show", str(a), "--format", "csv").stdout.splitlines()
    assert csv[0].endswith(",overlap_pct,t_avg_ci_low_us,t_avg_ci_high_us,batches,batch_cv,"
                           "stable")
    rows = [line.split(",") for line in csv[1:] if line.startswith("mpi1,PingPong")]
    assert [row[-1] for row in rows] == ["True", "False", "True", "True"]
    assert all(float(row[-5]) < float(row[9]) < float(row[-4]) for row in rows)
    doc = json.loads(beff("show", str(a), "--format", "json").stdout)
    ping = doc["results"][0]
    assert "bootstrap" in ping["statistics"]["t_avg_ci"]
    assert ping["rows"][1]["stable"] is False
    assert ping["rows"][1]["unstable_because"].startswith("spread ")
    assert doc["results"][1]["rows"][0]["stable"] is None  # Sendrecv: one batch
    table = beff("show", str(a), env={"COLUMNS": "200"}).stdout
    assert "95% CI" in table and " !" in table and "! unstable: cv > 10%" in table
    imb = beff("show", str(a), "--format", "imb").stdout
    assert "CI" not in imb and "stable" not in imb
