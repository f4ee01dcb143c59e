"""Ctrl-C before MPI is initialized, under a launcher: remembered, not acted on at once.

A rank that ends before MPI_Init while the others wait inside it (where no Python runs, and
SIGINT only marks itself for later) leaves them there: MPICH's launcher, once it has passed
the Ctrl-C on, waits for every rank, and the job hangs. So under a launcher a SIGINT until
MPI_Init has returned only sets a flag; :func:`beff.core.mpi.init` sends it again once every
rank has passed MPI_Init, when the job's own handling (one line from rank 0, MPI_Abort with
130) is in place. Without a launcher, and in commands without MPI, Ctrl-C acts at once
(:func:`beff.cli.interrupted`). No import here but the standard library's smallest.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK",
             "SLURM_PROCID")
pending = False


def env_rank() -> int | None:
    """This process's rank as the launcher announced it, before MPI is initialized."""
    for var in RANK_VARS:
        value = os.environ.get(var)
        if value is not None and value.isdigit():
            return int(value)
    return None


def under_launcher() -> bool:
    return env_rank() is not None


def _remember(signum: int, frame: FrameType | None) -> None:
    global pending
    pending = True


def defer() -> None:
    """Under a launcher, in the main thread: remember SIGINT instead of raising. A Ctrl-C
    that the package noted while it loaded (``beff._interrupted``) counts as one: under a
    launcher it is pending, without one it is raised here."""
    global pending
    import beff

    noted = bool(getattr(beff, "_interrupted", False))
    beff._interrupted = False  # counted once
    try:
        if under_launcher():
            signal.signal(signal.SIGINT, _remember)
            pending = pending or noted
            return
        if signal.getsignal(signal.SIGINT) is getattr(beff, "_note_sigint", None):
            signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread (the Python API inside a thread)
        return
    if noted:
        raise KeyboardInterrupt
