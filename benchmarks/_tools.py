"""Shared by the benchmark scripts: find the MPI tools of the running environment."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

RUN_TIMEOUT_S = 1800.0
LOAD_POLL_S = 30.0


def find_tool(name: str, prog: str) -> str:
    """``name`` next to the running Python (a venv's MPI wheel), else the first on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        sys.exit(f"{prog}: {name} not found next to {sys.executable} nor on PATH")
    return found


def compile_beff() -> None:
    """Write the bytecode of the beff package that runs, as ``pip install`` does: from a
    source checkout under PYTHONDONTWRITEBYTECODE, every launch would otherwise compile each
    changed module again (tens of milliseconds of each run's wall time)."""
    import compileall

    import beff

    compileall.compile_dir(str(Path(beff.__file__).parent), quiet=1)


def wait_for_load(max_load: float, max_wait: float) -> float:
    """Sleep until the 1-minute load is <= max_load (at most max_wait s); return the load."""
    waited = 0.0
    load = os.getloadavg()[0]
    while load > max_load and waited < max_wait:
        print(f"  load {load:.2f} > {max_load}: waiting {LOAD_POLL_S:.0f} s", file=sys.stderr,
              flush=True)
        time.sleep(LOAD_POLL_S)
        waited += LOAD_POLL_S
        load = os.getloadavg()[0]
    return load


def busy_cpu_seconds() -> float | None:
    """CPU seconds all processes of this (Linux) machine have used so far, or None: the
    reader of beff's own disturbance record (beff.core.disturbance), so that a script's
    figure for either tool and a beff file's record count the same CPU time."""
    from beff.core.disturbance import busy_seconds

    return busy_seconds()


def children_cpu_seconds() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(cmd: list[str]) -> tuple[str, float, float]:
    """Run ``cmd``; return its stdout, wall time (s) and the foreign load during it.

    The foreign load is the CPU time the rest of the machine used while ``cmd`` ran (all busy
    CPU time minus that of ``cmd``'s processes), in cores; NaN where /proc/stat is missing.
    """
    busy0, own0 = busy_cpu_seconds(), children_cpu_seconds()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          check=False)
    wall = time.perf_counter() - t0
    busy1, own1 = busy_cpu_seconds(), children_cpu_seconds()
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {shlex.join(cmd)}\n"
                 f"{done.stdout[-4000:]}{done.stderr[-4000:]}")
    foreign = float("nan")
    if busy0 is not None and busy1 is not None and wall > 0:
        foreign = max(0.0, (busy1 - busy0) - (own1 - own0)) / wall
    return done.stdout, wall, foreign
