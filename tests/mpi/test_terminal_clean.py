"""The terminal after a run is as clean as before it (issue: what a user sees, item 1):
through a pseudo-terminal, the live bar's cursor codes balance, the bar is not drawn again
after the results, and the last lines stand each on its own."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.mpirun import launcher, mpi_env, on_a_pty

pytestmark = pytest.mark.mpi
HIDE, SHOW = "\x1b[?25l", "\x1b[?25h"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.mark.parametrize("nprocs, args", [
    (1, ["imb", "mpi1", "Barrier", "-time", "0.1"]),
    (2, ["imb", "mpi1", "PingPong", "-msglog", "0:4", "-time", "0.2"]),
    (2, ["imb", "mpi1", "PingPong", "-msglog", "0:4", "-time", "0.2", "--report", "PAGE"]),
    (2, ["run", "--quick", "--time-per-loop", "0.01", "--memory-per-proc", "16MiB"]),
], ids=["imb-1", "imb-2", "imb-2-report", "run-2"])
def test_the_terminal_is_clean_after_a_run(nprocs: int, args: list[str],
                                           tmp_path: Path) -> None:
    args = [str(tmp_path / "p.html") if a == "PAGE" else a for a in args]
    cmd = [launcher(), "-n", str(nprocs), sys.executable, "-m", "beff", *args, "-o",
           str(tmp_path / "r.h5")]
    code, text = on_a_pty(cmd, mpi_env({"TERM": "xterm-256color"}))
    assert code == 0, text[-3000:]
    assert text.count(HIDE) == text.count(SHOW), (text.count(HIDE), text.count(SHOW))
    assert text.count(HIDE) >= 1  # the live bar was there (a terminal behind stderr)
    after = text[text.rindex(SHOW) + len(SHOW):]
    assert "━" not in after and HIDE not in after  # the bar is not drawn again
    lines = [ANSI.sub("", line).strip() for line in after.replace("\r\n", "\n").split("\n")]
    lines = [line for line in lines if line]
    assert lines[-2 if "--report" not in args else -1].startswith(
        "results written to" if "--report" not in args else "report written to"), lines
    assert all(line.count("written to") <= 1 for line in lines), lines
