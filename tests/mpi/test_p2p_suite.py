"""IMB-P2P (``beff imb p2p``) under mpiexec: every format, IMB-P2P's layout, its partners as
the pure module says, --check, and bad input. The runs share one job per process count
(tests/mpi/runs_script.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from beff.imb.p2p import partners
from beff.results.archive import load
from tests.mpirun import Jobs, Ran, beff, beff_lines

pytestmark = pytest.mark.mpi
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "imb-samples" / \
    "format-sample-p2p-np2.txt"
QUICK = ["-pause", "0"]
ALL = ["PingPong", "PingPing", "Unirandom", "Birandom", "Corandom", "Stencil2D", "Stencil3D",
       "SendRecv_Replace"]
CHECKED = ["-msglog", "3:4", "-iter", "5,1", *QUICK, "--check"]
SAMPLED = ["-msglog", "0:4", "-iter", "200", "PingPong", "-pause", "0"]  # the sample's own
# The runs of this module: one job per process count, one for rank 0's corrupted messages
# (tests/mpi/runs_script.py), one for the sample's own command (the Open MPI tier's).
JOBS: list[tuple[int, dict[str, list[str]], dict[str, str | None] | None]] = [
    (1, {"one rank": ["-msglog", "0:1", *QUICK, "--format", "imb"]}, None),
    (2, {**{fmt: ["-msglog", "0:4", "-iter", "200", *QUICK, "PingPong", "Stencil2D",
                  "--format", fmt] for fmt in ("imb", "json", "csv", "table")},
         "msglen": ["-msglen", "{dir}/sizes.txt", "-msgsz", "3", *QUICK, "-iter", "4",
                    "PingPing", "--format", "imb"]}, None),
    (2, {"sample": [*SAMPLED, "-o", "{dir}/sample.h5", "--format", "imb"]}, None),
    (4, {"all eight": ["-msglog", "2:3", "-iter", "6,1", "-seed", "7", *QUICK, "--format",
                       "imb"],
         "clean": CHECKED}, None),
    (4, {"corrupted": CHECKED}, {"BEFF_TEST_CORRUPT": "1"}),
]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    return Jobs(tmp_path_factory.mktemp, "p2p", [
        (nprocs, {name: ["imb", "p2p", *args] for name, args in commands.items()}, env)
        for nprocs, commands, env in JOBS], files={"sizes.txt": "# sizes\n8\n1k\n"})


def ran(jobs: Jobs, name: str) -> Ran:
    return jobs.ok(name)


@pytest.mark.parametrize("fmt", ["imb", "json", "csv", "table"])
def test_every_format_and_show_prints_the_same(jobs: Jobs, fmt: str) -> None:
    r = ran(jobs, fmt)
    out = r.out
    shown = beff("show", str(out), "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    if fmt != "table":  # a stored table adds the run's header
        assert shown.stdout == r.stdout
    record = load(out)
    pp, st = record.measurements
    assert (pp.benchmark, st.benchmark) == ("PingPong", "Stencil2D")
    assert list(pp.sizes) == [1, 2, 4, 8, 16] and list(pp.repetitions) == [200] * 5
    assert pp.times.shape == (5, 2) and np.all(pp.times > 0)
    assert st.unsupported  # no 2-D grid of 2 ranks with both sides >= 2
    assert record.attrs["config"]["options"]["iter"] == "200,800"
    assert record.attrs["config"]["options"]["seed"] == 0
    assert record.attrs["derived"]["sizes"] == [1, 2, 4, 8, 16]
    if fmt == "imb":
        assert "\n# !! Benchmark Stencil2D is invalid for 2 processes !!\n" in r.stdout
    if fmt == "json":
        entry = json.loads(r.stdout)["results"][0]
        assert entry["suite"] == "p2p" and [row["bytes"] for row in entry["rows"]] == \
            [1, 2, 4, 8, 16]
        # IMB-P2P's 200 timed iterations as 10 batches of 20: an interval for every size
        assert pp.samples.shape == (5, 2, 10) and np.all(pp.batch_iters == 20)
        for row in entry["rows"]:
            assert row["batches"] == 10 and \
                row["t_avg_ci_low_us"] <= row["t_avg_us"] <= row["t_avg_ci_high_us"], row
        assert all(row["t_us"] == row["t_avg_us"] for row in entry["rows"])
    if fmt == "csv":
        lines = r.stdout.splitlines()
        assert lines[0].startswith("suite,benchmark,") and len(lines) == 6
    if fmt == "table":
        assert "Stencil2D not run on 2 processes" in r.stderr


def _normalize(line: str) -> str:
    return re.sub(r" +", " ", re.sub(r"\d+(\.\d+)?", "0", line)).rstrip()


@pytest.mark.openmpi  # also in the Open MPI tier of the tests
def test_imb_text_matches_the_sample_line_for_line(jobs: Jobs) -> None:
    r = ran(jobs, "sample")
    ours, theirs = r.stdout.rstrip("\n").split("\n"), SAMPLE.read_text().rstrip("\n").split("\n")
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a == a.rstrip()  # no trailing spaces anywhere
        if b.startswith("#    Intel(R) MPI Benchmarks"):
            assert a.startswith("#    beff ") and a.endswith(", IMB-P2P part")
        elif b.startswith("# ./IMB-P2P"):  # the calling sequence: beff's own command
            assert a.endswith(f" imb p2p {' '.join(SAMPLED)} -o {r.out} --format imb")
        elif re.match(r"# (Machine|System|Release|Version|Date) ", b):
            assert a.split(":")[0] == b.split(":")[0]
        elif b and b[0] == " ":  # table rows and titles: fixed width, numbers aside
            assert len(a) == len(b) and _normalize(a) == _normalize(b)
        else:
            assert _normalize(a) == _normalize(b)


def test_all_eight_at_four_ranks_with_partners_from_the_seed(jobs: Jobs) -> None:
    r = ran(jobs, "all eight")
    out = r.out
    got = {m.benchmark: m for m in load(out).measurements}
    assert list(got) == ALL
    assert got["Stencil3D"].unsupported and "Stencil3D is invalid for 4 processes" in r.stdout
    assert "# Benchmarking Stencil2D (2 x 2)\n" in r.stdout
    for name, m in got.items():
        if name == "Stencil3D":
            continue
        assert list(m.sizes) == [4, 8] and list(m.repetitions) == [6, 6], name
        assert np.all(np.isfinite(m.times)) and m.msgrate_factor > 0, name
        sent = m.prepared["messages"]  # [size, rank]: messages each rank sent and received
        total = partners.MESSAGES_PER_ITERATION[name] * 6 * 4
        assert np.all(sent.sum(axis=1) / 2 == total), (name, sent)
    # Unirandom and Birandom: each rank's messages are those of the pairs the pure module
    # draws from the stored seed (7), n P = 24 steps.
    pairs = partners.random_pairs(4, 24, seed=load(out).attrs["config"]["options"]["seed"])
    ranks, counts = np.unique(pairs, return_counts=True)
    per_rank = np.zeros(4)
    per_rank[ranks] = counts
    assert np.array_equal(got["Unirandom"].prepared["messages"][0], per_rank)
    assert np.array_equal(got["Birandom"].prepared["messages"][0], 2 * per_rank)


def test_check_finds_a_corrupted_message_in_every_benchmark(jobs: Jobs) -> None:
    clean = ran(jobs, "clean").out
    r = ran(jobs, "corrupted")
    bad = r.out
    assert "-msgwr's writes into the send buffers are off" in r.stderr
    for m in load(clean).measurements:
        assert m.unsupported or (m.defects is not None and not m.defects.any()), m.benchmark
    for m in load(bad).measurements:
        if m.benchmark in ("Stencil3D", "Unirandom"):
            continue  # not run on 4 ranks; Unirandom: see below
        assert m.defects is not None and (m.defects > 0).all(), (m.benchmark, m.defects)
    uni = next(m for m in load(bad).measurements if m.benchmark == "Unirandom")
    assert uni.defects is not None  # whoever last received from rank 0 sees the corruption
    last = {}  # receiver -> sender of the last of the n P = 20 steps
    for rank0, rank1 in partners.random_pairs(4, 20):
        last[int(rank1)] = int(rank0)
    assert (uni.defects > 0).all() == (0 in last.values())


def test_one_rank_lists_every_benchmark_as_imb_p2p_does(jobs: Jobs) -> None:
    r = ran(jobs, "one rank")
    assert "# !! Benchmark PingPong is invalid for 1 processes !!" in r.stdout
    assert "# !! Benchmark Unirandom invalid for 1 processes !!" in r.stdout
    assert "# !! Benchmark SendRecv_Replace is invalid for 1 process !!" in r.stdout
    assert r.stdout.count("# !! Benchmark") == 8


@pytest.mark.parametrize("args,message", [
    (["-iter", "0"], "-iter expects max[,numerator] with positive integers"),
    (["-iter", "5,0"], "-iter expects max[,numerator]"),
    (["-pause", "-1"], "-pause must be between 0 and"),
    (["-msglog", "5:3"], "-msglog expects n or k:n"),
    (["-msgrd", "maybe"], "-msgrd expects one of"),
    (["-msgsz", "4x"], "-msgsz: not a message length: '4x'"),
    (["-seed", "-2"], "-seed must be between 0 and"),
    (["Frobnicate"], "unknown benchmark 'Frobnicate' in suite p2p"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                          message: str) -> None:
    """The option syntax, refused before MPI starts, so without a launcher; what rank 0
    decides after MPI_Init (files, the IMB flags P2P lacks): tests/mpi/test_bad_input.py."""
    out = tmp_path / "never.h5"
    r = beff("imb", "p2p", *args, "-o", str(out))
    assert r.returncode == 2, (r.stdout, r.stderr)
    (line,) = beff_lines(r.stderr)
    assert line.startswith("beff: error: ") and message in line, r.stderr
    assert not out.exists()


def test_msglen_file_and_msgsz(jobs: Jobs) -> None:
    r = ran(jobs, "msglen")
    out = r.out
    (m,) = load(out).measurements
    assert list(m.sizes) == [8, 1024, 3] and list(m.repetitions) == [4, 4, 4]
    assert "# Minimum message length in bytes:   3\n" in r.stdout
    assert "# Maximum message length in bytes:   1024\n" in r.stdout


def test_list_and_describe() -> None:
    listed = beff("list", "p2p")
    assert listed.returncode == 0, listed.stderr
    for name in ALL:
        assert name in listed.stdout
    described = beff("describe", "Stencil2D", "--suite", "p2p")
    assert described.returncode == 0 and "4 neighbours" in described.stdout
