"""One result model: for every family, a live run and `beff show` of its file print the same
bytes in JSON, CSV, the original's text and one figure a line, and JSON has one shape. The
runs of one format share one job (tests/mpi/runs_script.py): what a run prints is its own, as
under a job of its own."""

from __future__ import annotations

import json

import pytest

from tests.mpirun import Runs, beff, is_open_mpi_cached, runs

pytestmark = [pytest.mark.mpi, pytest.mark.openmpi]  # also in the Open MPI tier of the tests
# Under Open MPI one format, the original's text (the most lines): what that tier adds is its
# launcher's forwarding of rank 0's output; the renderers are the same under either MPI, and
# the four formats' jobs took 24 s of its 66 s.
FORMATS = ("text",) if is_open_mpi_cached() else ("json", "csv", "text", "lines")

FAMILIES = {
    "mpi1": (["imb", "mpi1", "PingPong", "Allreduce", "-msglog", "0:3", "-iter", "50",
              "-time", "0.2"], "imb"),
    # one method of b_eff's three: each format renders the same rows for each method
    "beff": (["run", "--quick", "--memory-per-proc", "8MiB", "--time-per-loop", "0.01",
              "--methods", "sendrecv"], "sum"),
    "beffio": (["io", "--quick", "-T", "1", "-N", "2", "--memory-per-proc", "8MiB"], "sum"),
}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Runs]:
    """Every family in each format of FORMATS: one job at 2 ranks per format
    (tests/mpi/runs_script.py; b_eff_io's run the last of its job), each run in a directory
    of its own."""
    found = {}
    for fmt in FORMATS:
        directory = tmp_path_factory.mktemp(f"formats-{fmt}")
        commands = {}
        for family in ("mpi1", "beff", "beffio"):
            args, text = FAMILIES[family]
            extra = ["--dir", str(directory / family)] if family == "beffio" else []
            commands[family] = [*args, *extra, "--format", text if fmt == "text" else fmt]
        found[fmt] = runs(2, commands, directory)
    return found


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_live_output_is_what_show_prints(live: dict[str, Runs], family: str, fmt: str) -> None:
    run = live[fmt][family]
    fmt = FAMILIES[family][1] if fmt == "text" else fmt
    assert run.returncode == 0, run.stderr
    shown = beff("show", str(run.out), "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    assert run.stdout == shown.stdout and run.stdout.strip()
    if fmt == "json":
        doc = json.loads(run.stdout)
        assert list(doc) == ["schema_version", "units", "run", "ranks", "startup", "results"]
        assert sorted(doc["startup"]) == ["barrier", "imports", "mpi_init", "setup"]
        assert doc["schema_version"] == 3 and doc["run"]["suite"] == family
        assert doc["run"]["command_line"][0] == "beff"  # run as `python -m beff`
        assert doc["results"] and all(r["suite"] == family and r["key"]
                                      for r in doc["results"])
        assert len(doc["ranks"]) == 2
    if fmt == "lines":
        names = [ln.split(" ")[0] for ln in run.stdout.splitlines()]
        assert names[-1] == "run.status" and len(names) == len(set(names))
        first = {"mpi1": "mpi1.PingPong.np2.0B.", "beff": "beff.b_eff_MBps",
                 "beffio": "beffio.b_eff_io_MBps"}[family]
        assert names[0].startswith(first), names[:3]
