"""The Python API in a user's MPI program (tests/mpi/api_script.py under ``mpiexec -n 2``):
it raises in its own words on every rank, never ends the program, prints nothing unless
asked, and gives back warnings and time-out rows on the results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mpirun import launch_prefix, mpi_env

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[2]
CLI_WORDS = ("-o ", "--force", "-msglog", "-map", "--format")


def launch(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [*launch_prefix(2), sys.executable, "-m", "tests.mpi.api_script", str(directory),
           *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240,
                          env=mpi_env())


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[tuple[int, str], Any],
                                                                 str, int]:
    """The script's steps by (rank, step), its stderr and its exit code."""
    directory = tmp_path_factory.mktemp("api")
    r = launch(directory)
    steps: dict[tuple[int, str], Any] = {}
    for path in directory.glob("steps.*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            steps[doc["rank"], doc["step"]] = doc
    return steps, r.stderr, r.returncode


def test_the_program_goes_on_after_every_error(program: Any) -> None:
    steps, err, code = program
    assert code == 0, err
    assert (0, "ok") in steps and (1, "ok") in steps  # its own final barrier, on both ranks
    assert (0, "progress done") in steps and (1, "progress done") in steps


def test_an_existing_output_raises_usage_error_in_the_api_words(program: Any) -> None:
    steps, _, _ = program
    for rank in (0, 1):
        got = steps[rank, "again"]
        assert got["type"] == "UsageError"
        assert got["message"].startswith("output='") and "pp.h5'" in got["message"]
        assert "the file exists" in got["message"] and "force=True" in got["message"]
        assert not any(w in got["message"] for w in CLI_WORDS), got["message"]


@pytest.mark.parametrize(("step", "words"), [
    ("bad value", "msglog_max= must be between 0 and 34, got 99"),  # before MPI
    ("unknown", "unknown option msglog_mx= (did you mean msglog_max=?)"),
    ("bad pair", "msglog_min (5) must not exceed msglog_max (3)"),  # rank 0's, broadcast
    ("bad map", "map=4x4 needs 16 processes, the job has 2"),  # the suite's, in API words
    ("bad format", "format='sum': IMB mpi1 results come as"),
])
def test_a_bad_option_raises_on_every_rank(program: Any, step: str, words: str) -> None:
    steps, _, _ = program
    for rank in (0, 1):
        got = steps[rank, step]
        assert got["type"] == "UsageError" and words in got["message"], got
        assert not any(w in got["message"] for w in CLI_WORDS), got["message"]


def test_a_normal_run_prints_nothing_and_leaves_nothing_armed(program: Any) -> None:
    steps, err, _ = program
    quiet, _, asked = err.partition("--- progress=True\n")
    assert quiet == ""  # no progress, no warnings, no compile notice, no error lines
    assert "progress: " in asked  # progress=True asks for it (rank 0)
    for rank in (0, 1):
        first = steps[rank, "first"]
        assert first["kind"] == "RunResults" and first["run_status"] == "complete"
        assert first["problems"] == []
        assert any("all ranks ran on one node" in w for w in first["warnings"])  # on the record
        assert first["hook_kept"]  # the caller's sys.excepthook, not beff's abort hook
        assert first["backstops"] == [] and first["timers"] == []
    assert steps[0, "first"]["status"] == [["ok"] * 5]  # sizes 0, 1, 2, 4, 8
    assert steps[1, "first"]["status"] == []  # rank 0 holds the results


def test_a_time_out_comes_back_as_status_problem_and_warning(program: Any) -> None:
    steps, _, _ = program
    assert steps[0, "time-out"]["status"] == [["time-out"] + ["skipped"] * 4]
    for rank in (0, 1):
        got = steps[rank, "time-out"]
        [(benchmark, nprocs, size, status, message)] = got["problems"]
        assert (benchmark, nprocs, size, status) == ("PingPong", 2, 0, "time-out")
        assert message.startswith("PingPong at 2 processes: time-out at 0 bytes")
        assert "time=" in message and got["timed_out"] == 1
        assert message in got["warnings"]  # the run's warnings, on every rank
        assert message in got["stored_warnings"]  # and in its file (beff.load)
        assert got["stored_problems"] == [message]
        assert got["backstops"] == [] and got["timers"] == []  # timeout=600 is lifted


def test_strict_raises_strict_failure_on_every_rank_with_the_results(program: Any) -> None:
    """strict=True, the Python API's --strict: the time-out row voids the run's figures."""
    steps, _, _ = program
    for rank in (0, 1):
        got = steps[rank, "strict"]
        assert got["type"] == "StrictFailure", got
        assert "time-out" in got["message"] and not got["message"].startswith("beff:"), got
        assert len(got["problems"]) == 1 and "time-out" in got["problems"][0]
        assert got["stored"] == "complete"  # the file was written first


def test_an_uncaught_usage_error_ends_the_program_as_python_does(tmp_path: Path) -> None:
    """Not through beff's abort hook (MPI_Abort): the caller's program, its way out."""
    r = launch(tmp_path, "uncaught")
    assert r.returncode != 0
    # every rank raises; the launcher may end the others once the first has exited
    assert "beff.core.errors.UsageError: output='" in r.stderr, r.stderr
    assert "MPI_Abort" not in r.stderr and "aborts the job" not in r.stderr, r.stderr
