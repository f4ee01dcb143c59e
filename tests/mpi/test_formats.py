"""One result model: for every family, a live run and `beff show` of its file print the same
bytes in JSON, CSV and the original's text, and JSON has one shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.mpirun import beff, mpirun

pytestmark = [pytest.mark.mpi, pytest.mark.openmpi]  # also in the Open MPI tier of the tests

FAMILIES = {
    "mpi1": (["imb", "mpi1", "PingPong", "Allreduce", "-msglog", "0:3", "-iter", "50",
              "-time", "0.2"], "imb"),
    "beff": (["run", "--quick", "--memory-per-proc", "8MiB", "--time-per-loop", "0.01"],
             "sum"),
    "beffio": (["io", "--quick", "-T", "1", "-N", "2", "--memory-per-proc", "8MiB"], "sum"),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("fmt", ["json", "csv", "text"])
def test_live_output_is_what_show_prints(tmp_path: Path, family: str, fmt: str) -> None:
    args, text = FAMILIES[family]
    fmt = text if fmt == "text" else fmt
    out = tmp_path / "r.h5"
    extra = ["--dir", str(tmp_path)] if family == "beffio" else []
    live = mpirun(2, *args, *extra, "-o", str(out), "--format", fmt, timeout=240,
                  cwd=tmp_path)
    assert live.returncode == 0, live.stderr
    shown = beff("show", str(out), "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    assert live.stdout == shown.stdout and live.stdout.strip()
    if fmt == "json":
        doc = json.loads(live.stdout)
        assert list(doc) == ["schema_version", "units", "run", "ranks", "results"]
        assert doc["schema_version"] == 3 and doc["run"]["suite"] == family
        assert doc["run"]["command_line"][0] == "beff"  # run as `python -m beff`
        assert doc["results"] and all(r["suite"] == family and r["key"]
                                      for r in doc["results"])
        assert len(doc["ranks"]) == 2
