"""`beff compare` and the statistics of `beff show` on stored files (no MPI): files made from
the schema-3 golden file with ten synthetic batches per size; imported IMB text (``-multi 1``
logs compared group by group, no timed-loop backend to differ) and measured ``-multi 1``
runs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from beff.results.model import OK, Measurement, RunRecord
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
    # the tail latencies of --per-iteration came after them, last (empty without it)
    assert csv[0].endswith(",overlap_pct,t_avg_ci_low_us,t_avg_ci_high_us,batches,batch_cv,"
                           "stable,p50_us,p90_us,p99_us,max_us")
    rows = [line.split(",") for line in csv[1:] if line.startswith("mpi1,PingPong")]
    assert [row[-5] for row in rows] == ["True", "False", "True", "True"]
    assert all(row[-4:] == ["", "", "", ""] for row in rows)
    assert all(float(row[-9]) < float(row[9]) < float(row[-8]) for row in rows)  # the CI
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


# ----------------------------------------------------------------------------- imported
IMB_SAMPLES = GOLDEN.parent / "imb-samples"
GROUP_ROW = re.compile(r"^ {12}([01])( .*)$")


def multi_pingpong(groups: int) -> str:
    """IMB's -multi 1 sample cut to its Multi-PingPong table (2 groups of 2): as printed, or
    as IMB prints 4 groups of 2 (8 ranks), made from it: group 0 and 1's rows swapped, and
    groups 2 and 3 as copies of the printed groups 0 and 1."""
    text = (IMB_SAMPLES / "format-sample-mpi1-np4-multi1.txt").read_text()
    cut = text.rindex("\n#---", 0, text.index("# Benchmarking Multi-Uniband"))
    text = text[:cut] + "\n\n# All processes entering MPI_Finalize\n\n"
    if groups == 2:
        return text
    lines, out = text.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("# ( 2 groups of 2"):
            out.append(line.replace("2 groups", "4 groups"))
        elif line.startswith("# Group  1:"):
            out += [line, "# ", "# Group  2:     4    5", "# ", "# Group  3:     6    7"]
        elif (row := GROUP_ROW.match(line)) and row.group(1) == "0":
            other = GROUP_ROW.match(lines[i + 1])
            assert other is not None and other.group(1) == "1"
            first, second = row.group(2), other.group(2)
            out += [f"{' ' * 12}{g}{r}" for g, r in
                    ((0, second), (1, first), (2, first), (3, second))]
        elif not (GROUP_ROW.match(line) and line[12] == "1"):
            out.append(line)
    return "\n".join(out) + "\n"


def imported_h5(text: str, path: Path) -> Path:
    from beff.results import imported

    src = path.with_suffix(".txt")
    src.write_text(text)
    imported.write(imported.read(src), path)
    return path


def test_multi_mode_logs_with_other_numbers_of_groups_compare_group_by_group(
        tmp_path: Path) -> None:
    two = imported_h5(multi_pingpong(2), tmp_path / "two.h5")
    four = imported_h5(multi_pingpong(4), tmp_path / "four.h5")
    r = beff("compare", str(two), str(four), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = {(row["group"], row["nbytes"]): row for row in doc["rows"]}
    assert sorted(rows) == [(g, size) for g in (0, 1) for size in (0, 1, 2, 4)]
    # group k with group k: the 4-group log's group 0 holds what group 1 printed, and back
    assert (rows[(0, 4)]["a_us"], rows[(0, 4)]["b_us"]) == (34.30, 149.45)
    assert (rows[(1, 4)]["a_us"], rows[(1, 4)]["b_us"]) == (149.45, 34.30)
    assert all(row["benchmark"] == "PingPong" and row["verdict"] == "not tested"
               for row in doc["rows"])
    assert doc["groups"] == [{"benchmark": "PingPong", "mode": "", "nprocs": 2,
                              "a_groups": 2, "b_groups": 4, "compared": [0, 1]}]
    table = beff("compare", str(two), str(four), env={"COLUMNS": "200"})
    assert table.returncode == 0, table.stderr
    assert "-multi 1: PingPong, 2 processes per group: groups 0-1 compared (A has 2 " \
           "groups, B 4)" in table.stdout
    assert "PingPong (group 1)" in table.stdout and "nothing" not in table.stderr


def test_an_imported_log_names_no_timed_loop_backend(tmp_path: Path) -> None:
    """The golden file ran with the jit backend; IMB's text records none, so none differs."""
    from beff.render import compare
    from beff.results.archive import load

    log = imported_h5((IMB_SAMPLES / "mpi1-np2-pt2pt-time1-quiet.txt").read_text(),
                      tmp_path / "imb.h5")
    r = beff("compare", str(GOLDEN), str(log), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert not any("backend" in d or "MPI library" in d for d in doc["differences"])
    assert doc["differences"] == ["nprocs differs: 3 vs 2"]  # still checked: both have it
    assert doc["notes"] == ["imb.h5 is an imported text: it records no MPI library, hosts, "
                            "ranks per node, oversubscribed, timed-loop backend; those are "
                            "not compared"]
    table = beff("compare", str(log), str(GOLDEN), env={"COLUMNS": "200"})
    assert "timed-loop backend differs" not in table.stdout
    assert "note: imb.h5 is an imported text" in table.stdout
    # two measured runs with other backends still differ
    measured = load(GOLDEN).attrs
    python = {**measured, "overhead": {**measured["overhead"], "backend": "python"}}
    assert compare.mismatches(measured, python) == [
        "timed-loop backend differs: jit vs python"]


def measured_multi(groups: int, scale: float, seed: int) -> RunRecord:
    """A measured -multi 1 PingPong run: ``groups`` groups of 2 ranks, group g taking
    (g + 1) µs per iteration times ``scale``, in 6 batches with 1 % noise."""
    rng = np.random.default_rng(seed)
    sizes, ranks, batches = np.array([1, 2, 4]), 2 * groups, 6
    group = np.repeat(np.arange(groups), 2)
    per_iter = (group + 1.0) * 1e-6 * scale
    iters = np.full((3, ranks, batches), 100, dtype=np.int64)
    samples = per_iter[None, :, None] * 100 * rng.normal(1.0, 0.01, (3, ranks, batches))
    m = Measurement(
        suite="mpi1", benchmark="PingPong", kind="single_transfer", nprocs=2,
        ngroups=groups, multi=1, idle=0, sizes=sizes, repetitions=np.full(3, 600),
        status=[OK] * 3, times=(samples / iters).mean(axis=2), group=group,
        world_ranks=np.arange(ranks), samples=samples, batch_iters=iters)
    return RunRecord(attrs={"suite": "mpi1", "nprocs": ranks}, results=[m])


def test_measured_multi_mode_runs_compare_group_by_group() -> None:
    from beff.render import compare

    a, b = measured_multi(2, 1.0, 1), measured_multi(4, 1.5, 2)
    rows = compare.compare_records(a, b)
    assert sorted((r.group, r.nbytes) for r in rows) == [(g, s) for g in (0, 1)
                                                         for s in (1, 2, 4)]
    for r in rows:  # each group against its own: group 1 is twice as slow in both runs
        assert r.a_us == pytest.approx((r.group + 1) * 1.0, rel=0.02)
        assert r.ratio == pytest.approx(1.5, rel=0.03)
        assert r.ratio_low < r.ratio < r.ratio_high and r.verdict == "slower"
    (match,) = compare.group_matches(a, b)
    assert (match.a_groups, match.b_groups, match.compared) == (2, 4, [0, 1])


def test_a_file_where_nothing_was_measured_says_so(tmp_path: Path) -> None:
    """Every size of every benchmark timed out: compare says nothing was measured, not
    that the files have nothing in common; and its settings read as words."""
    from beff.results import imported
    from beff.results.archive import load

    record = load(GOLDEN)
    for m in record.measurements:
        m.status = ["time-out"] * len(m.status)
    out = tmp_path / "timeout.h5"
    imported.write(record, out)
    r = beff("compare", str(out), str(out))
    assert r.returncode == 2
    assert f"nothing was measured in {out} (every size ended time-out)" in r.stderr, r.stderr


def test_settings_read_as_words() -> None:
    from beff.render.compare import say

    assert say("memory per process", 67108864) == "64 MiB"
    assert say("memory per process", 12638255104) == "11.77 GiB"
    assert say("hosts", None) == "not recorded" and say("hosts", ["vm"]) == "vm"
    assert say("oversubscribed", True) == "yes" and say("scheduled time", 10.0) == "10 s"
