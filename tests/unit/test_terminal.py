"""Colour and progress follow the user's terminal, not the launcher's plumbing.

A stand-in launcher (a Python process that names itself ``prterun`` or ``mpiexec`` in
/proc/self/comm) starts ``beff show`` as Open MPI and MPICH do: Open MPI hands the rank a
pseudo-terminal even when mpirun's own output is a file; MPICH's hydra hands it a pipe even
when the user's terminal is behind mpiexec. A check of the rank's own stdout gets both wrong.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mpirun import on_a_pty

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden-schema-v2-imb.h5"

# A stand-in launcher (prterun, mpiexec, srun or slurmstepd): names itself, optionally listens
# on a TCP port (as srun does on SLURM_SRUN_COMM_PORT) and starts a command with stdout and
# stderr each a pty, a pipe or inherited, relaying what it writes to its own stdout and stderr.
STANDIN = r"""
import os, socket, subprocess, sys, threading
name, listen, out_kind, err_kind, *cmd = sys.argv[1:]
with open("/proc/self/comm", "w") as fh:
    fh.write(name)
env = dict(os.environ)
if listen == "listen":
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    env["SLURM_SRUN_COMM_PORT"] = str(server.getsockname()[1])
ends, relays = {}, []
for fd, kind in ((1, out_kind), (2, err_kind)):
    if kind == "pty":
        master, slave = os.openpty()
    elif kind == "pipe":
        master, slave = os.pipe()
    else:
        continue
    ends[fd] = slave
    relays.append((master, fd))
child = subprocess.Popen(cmd, stdout=ends.get(1), stderr=ends.get(2), env=env)
for slave in ends.values():
    os.close(slave)

def relay(master, fd):
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            return
        if not chunk:
            return
        os.write(fd, chunk)

threads = [threading.Thread(target=relay, args=r) for r in relays]
for t in threads:
    t.start()
code = child.wait()
for t in threads:
    t.join(timeout=10)
sys.exit(code)
"""

pytestmark = pytest.mark.skipif(not Path("/proc/self/comm").exists(), reason="needs Linux /proc")


def _show_through(launcher: str, channel: str) -> list[str]:
    """`beff show GOLDEN` under a stand-in launcher that hands it a ``channel`` (pty or
    pipe) on stdout."""
    return [sys.executable, "-c", STANDIN, launcher, "-", channel, "inherit",
            sys.executable, "-m", "beff", "show", str(GOLDEN)]


def _env() -> dict[str, str]:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"}
    for var in ("NO_COLOR", "FORCE_COLOR"):
        env.pop(var, None)
    return env


def test_open_mpi_style_pty_to_a_file_has_no_colour(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("wb") as fh:
        assert subprocess.run(_show_through("prterun", "pty"), stdout=fh, env=_env(),
                              timeout=120).returncode == 0
    text = out.read_text()
    assert "PingPong" in text and "\x1b[" not in text


def test_mpich_style_pipe_to_a_terminal_has_colour() -> None:
    code, text = on_a_pty(_show_through("mpiexec", "pipe"), _env(), stderr_too=False)
    assert code == 0
    assert "PingPong" in text and "\x1b[" in text


def test_without_a_launcher_the_own_stdout_decides(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("wb") as fh:  # "python" is no launcher: the child's pty is the terminal
        assert subprocess.run(_show_through("python3", "pty"), stdout=fh, env=_env(),
                              timeout=120).returncode == 0
    assert "\x1b[" in out.read_text()


PROBE = ("import json, sys; from beff.core import terminal as t; "
         "open(sys.argv[1], 'w').write(json.dumps([t.is_terminal(1), t.is_terminal(2), "
         "t.line_relay()]))")


def _probe_under_slurm(tmp_path: Path, srun_out: str, srun_on_host: bool, task_out: str,
                       task_err: str, pty_port: bool = False) -> list[bool]:
    """is_terminal(1), is_terminal(2) and line_relay() of a task started by a stand-in
    slurmstepd, itself started by a stand-in srun whose stdout and stderr are a file or a
    terminal (``srun_out``); with ``srun_on_host`` False nothing listens on the port."""
    import json

    result = tmp_path / "probe.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    if pty_port:
        env["SLURM_PTY_PORT"] = "1"
    if not srun_on_host:
        env["SLURM_SRUN_COMM_PORT"] = "1"  # nothing of ours listens on port 1
    stepd = [sys.executable, "-c", STANDIN, "slurmstepd", "-", task_out, task_err,
             sys.executable, "-c", PROBE, str(result)]
    srun = [sys.executable, "-c", STANDIN, "srun", "listen" if srun_on_host else "-",
            "inherit", "inherit", *stepd]
    if srun_out == "file":
        with (tmp_path / "srun.out").open("wb") as fh:
            code = subprocess.run(srun, stdout=fh, stderr=fh, env=env, timeout=60).returncode
    else:
        code, _ = on_a_pty(srun, env, timeout=60)
    assert code == 0
    found: list[bool] = json.loads(result.read_text())
    return found


def test_under_srun_on_this_host_its_descriptors_decide(tmp_path: Path) -> None:
    # srun -u hands the task a pty on stdout: it is not the user's terminal when srun's
    # output is a file, and it is when srun's output is a terminal
    assert _probe_under_slurm(tmp_path, "file", True, "pty", "pipe") == [False, False, False]
    assert _probe_under_slurm(tmp_path, "tty", True, "pty", "pipe") == [True, True, False]
    # plain srun: pipes, and slurmstepd relays whole lines
    assert _probe_under_slurm(tmp_path, "tty", True, "pipe", "pipe") == [True, True, True]


def test_under_srun_elsewhere_only_a_pty_of_srun_pty_counts(tmp_path: Path) -> None:
    assert _probe_under_slurm(tmp_path, "tty", False, "pty", "pipe") == [False, False, False]
    assert _probe_under_slurm(tmp_path, "tty", False, "pty", "pty",
                              pty_port=True) == [True, True, False]


def test_a_file_gets_tables_at_full_width(tmp_path: Path) -> None:
    """Redirected output is not squeezed into 80 columns (rich's guess), which cut figures
    short with an ellipsis."""
    out = tmp_path / "out.txt"
    env = {k: v for k, v in _env().items() if k != "COLUMNS"}
    with out.open("wb") as fh:
        # b_eff_io's tables are wider than 80 columns
        assert subprocess.run([sys.executable, "-m", "beff", "show",
                               str(DATA / "golden-schema-v3-beffio.h5")], stdout=fh, env=env,
                              timeout=120).returncode == 0
    lines = out.read_text().splitlines()
    assert max(len(ln.rstrip()) for ln in lines if "│" in ln or "─" in ln) > 80
    assert not any("…" in ln for ln in lines), "\n".join(ln for ln in lines if "…" in ln)


def test_names_with_colons_print_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """Host and file names are printed as they are: ":smile:" is no emoji code."""
    from beff.core import terminal

    terminal.console().print("host:smile:1 wrote a:thumbs_up:.h5")
    assert capsys.readouterr().out == "host:smile:1 wrote a:thumbs_up:.h5\n"
