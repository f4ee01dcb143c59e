"""Is the user's terminal behind this rank's stdout or stderr?

Under a launcher a rank's output goes through it: MPICH's hydra hands ranks a pipe even when
the user's terminal is on the other side, and Open MPI hands them a pseudo-terminal even when
the user redirected mpirun's output to a file. So the answer is read from the launcher's own
file descriptor (Linux /proc), found by walking up this process's parents; outside a launcher,
or where /proc cannot tell, from this process's own.

Under Slurm the parent is slurmstepd, and srun is not an ancestor. srun is found on this host
by the port it listens on (SLURM_SRUN_COMM_PORT), and its descriptor decides. When srun runs
elsewhere, only ``srun --pty`` (SLURM_PTY_PORT) makes the rank's own terminal the user's:
``srun -u`` hands every task a pseudo-terminal on stdout even when srun's output is a file.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a console is made: rank 0 (worker ranks print nothing)
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


def _fd_is_tty(pid: int, fd: int) -> bool | None:
    try:
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None
    return target.startswith(("/dev/pts/", "/dev/tty"))


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on TCP ``port`` on this host (/proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            # sl local rem st ... inode: local is ADDR:PORT in hex, st 0A is LISTEN
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                found.add(f"socket:[{f[9]}]")
    return found


@functools.cache  # srun does not move, and scanning /proc once per job is enough
def srun_on_this_host() -> int | None:
    """The pid of the srun that launched this Slurm step, if it runs on this host."""
    try:
        port = int(os.environ["SLURM_SRUN_COMM_PORT"])
    except (KeyError, ValueError):
        return None
    sockets = _listening_inodes(port)
    if not sockets:
        return None
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or _comm(int(entry)) != "srun":
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for name in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{name}") in sockets:
                    return int(entry)
            except OSError:
                continue
    return None


def _slurm_fd_is_tty(fd: int) -> bool:
    srun = srun_on_this_host()
    if srun is not None:
        found = _fd_is_tty(srun, fd)
        if found is not None:
            return found
    if "SLURM_PTY_PORT" in os.environ:  # srun --pty: task 0's terminal relays to srun's
        return os.isatty(fd)
    return False


@functools.cache  # asked for stdout, stderr and progress: the parents do not change
def launcher() -> tuple[int, str] | None:
    """The pid and name of the launcher (or slurmstepd) above this process, if any."""
    pid: int | None = os.getppid()
    for _ in range(MAX_DEPTH):
        if pid is None or pid <= 1:
            return None
        comm = _comm(pid)
        if comm in LAUNCHERS or comm == "slurmstepd":
            return pid, comm
        pid = _parent(pid)
    return None


def launcher_fd_is_tty(fd: int) -> bool | None:
    """Whether the launcher above this process has a terminal on ``fd`` (None: no launcher
    found, or /proc does not say)."""
    found = launcher()
    if found is None:
        return None
    pid, comm = found
    return _slurm_fd_is_tty(fd) if comm == "slurmstepd" else _fd_is_tty(pid, fd)


def line_relay() -> bool:
    """Whether this rank's output reaches the user line by line: under srun without ``-u``
    or ``--pty``, slurmstepd holds output until a newline (or 1 KiB)."""
    found = launcher()
    return (found is not None and found[1] == "slurmstepd"
            and "SLURM_PTY_PORT" not in os.environ and not os.isatty(1))


def is_terminal(fd: int) -> bool:
    """Whether output on ``fd`` (1 or 2) reaches a terminal, launcher or not."""
    found = launcher_fd_is_tty(fd)
    if found is not None:
        return found
    stream = sys.stdout if fd == 1 else sys.stderr
    return stream.isatty()


# A file or a pipe gets tables at their full width (rich would squeeze them into 80 columns
# and cut the figures): no beff table is wider.
FILE_WIDTH = 240


def terminal_width(fd: int) -> int | None:
    """Columns of the terminal that output on ``fd`` reaches: this process's own, else its
    launcher's (mpiexec passes output through a pipe, where rich would assume 80); None
    where neither says (rich then reads COLUMNS, or assumes 80)."""
    if "COLUMNS" in os.environ:
        return None
    try:
        return os.get_terminal_size(fd).columns
    except OSError:
        pass
    found = launcher()
    if found is None or found[1] == "slurmstepd":
        return None
    try:
        target = os.readlink(f"/proc/{found[0]}/fd/{fd}")
        if not target.startswith(("/dev/pts/", "/dev/tty")):
            return None
        tty = os.open(target, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.get_terminal_size(tty).columns or None
    except OSError:
        return None
    finally:
        os.close(tty)


def console(stderr: bool = False, force: bool | None = None) -> Console:
    """A rich console that colours only for a terminal and never wraps a line of data: as
    wide as the terminal, or :data:`FILE_WIDTH` for a file or a pipe."""
    fd = 2 if stderr else 1
    terminal = is_terminal(fd) if force is None else force
    width = terminal_width(fd) if terminal else FILE_WIDTH
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True, force_terminal=terminal,
                   emoji=False,  # ":name:" in a host or file name stays as written
                   no_color=not terminal, width=width)
