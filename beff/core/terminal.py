"""Is the user's terminal behind this rank's stdout or stderr?

Under a launcher a rank's output goes through it: MPICH's hydra hands ranks a pipe even when
the user's terminal is on the other side, and Open MPI hands them a pseudo-terminal even when
the user redirected mpirun's output to a file. So the answer is read from the launcher's own
file descriptor (Linux /proc), found by walking up this process's parents; outside a launcher,
or where /proc cannot tell, from this process's own.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

LAUNCHERS = ("mpiexec", "mpirun", "mpiexec.hydra", "prterun", "orterun", "srun")
MAX_DEPTH = 8


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            # pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def launcher_fd_is_tty(fd: int) -> bool | None:
    """Whether the launcher above this process has a terminal on ``fd`` (None: no launcher
    found, or /proc does not say)."""
    pid: int | None = os.getppid()
    for _ in range(MAX_DEPTH):
        if pid is None or pid <= 1:
            return None
        if _comm(pid) in LAUNCHERS:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                return None
            return target.startswith(("/dev/pts/", "/dev/tty"))
        pid = _parent(pid)
    return None


def is_terminal(fd: int) -> bool:
    """Whether output on ``fd`` (1 or 2) reaches a terminal, launcher or not."""
    found = launcher_fd_is_tty(fd)
    if found is not None:
        return found
    stream = sys.stdout if fd == 1 else sys.stderr
    return stream.isatty()


def console(stderr: bool = False, force: bool | None = None) -> Console:
    """A rich console that colours only for a terminal and never wraps a line of data."""
    terminal = is_terminal(2 if stderr else 1) if force is None else force
    return Console(stderr=stderr, highlight=False, soft_wrap=True, force_terminal=terminal,
                   no_color=not terminal)
