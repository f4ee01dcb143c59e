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
import threading
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden-schema-v2-imb.h5"

LAUNCHER = r"""
import os, subprocess, sys
name, channel, *cmd = sys.argv[1:]
with open("/proc/self/comm", "w") as fh:
    fh.write(name)
if channel == "pty":
    master, slave = os.openpty()
    child = subprocess.Popen(cmd, stdout=slave)
    os.close(slave)
    read = lambda: os.read(master, 4096)
else:
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    read = lambda: child.stdout.read1(4096)
while True:
    try:
        chunk = read()
    except OSError:  # EIO: the pty's last writer is gone
        break
    if not chunk:
        break
    os.write(1, chunk)
sys.exit(child.wait())
"""

pytestmark = pytest.mark.skipif(not Path("/proc/self/comm").exists(), reason="needs Linux /proc")


def _show_through(launcher: str, channel: str, stdout: int) -> int:
    """Run `beff show GOLDEN` under the stand-in launcher; its own stdout is ``stdout``."""
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"}
    for var in ("NO_COLOR", "FORCE_COLOR"):
        env.pop(var, None)
    cmd = [sys.executable, "-c", LAUNCHER, launcher, channel,
           sys.executable, "-m", "beff", "show", str(GOLDEN)]
    return subprocess.run(cmd, stdout=stdout, env=env, timeout=120).returncode


def test_open_mpi_style_pty_to_a_file_has_no_colour(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("wb") as fh:
        assert _show_through("prterun", "pty", fh.fileno()) == 0
    text = out.read_text()
    assert "PingPong" in text and "\x1b[" not in text


def test_mpich_style_pipe_to_a_terminal_has_colour() -> None:
    master, slave = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert _show_through("mpiexec", "pipe", slave) == 0
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    text = b"".join(chunks).decode(errors="replace")
    assert "PingPong" in text and "\x1b[" in text


def test_without_a_launcher_the_own_stdout_decides(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("wb") as fh:  # "python" is no launcher: the child's pty is the terminal
        assert _show_through("python3", "pty", fh.fileno()) == 0
    assert "\x1b[" in out.read_text()
