"""Crash-safe updates of a result file: change a copy, then rename it over the file.

HDF5 changes a file in place, its metadata included. A process killed while HDF5 writes or
closes (SIGKILL from MPI_Abort, from a launcher after SIGTERM, or from a job's time limit)
can leave a file that no longer opens, and every earlier result is lost with it. So each
update works on a copy next to the file and renames the copy over it when the update is
complete: a rename within one directory is atomic (POSIX), so the name always refers to a
complete file, the old one or the new one. A reader that opened the old file keeps reading
it undisturbed. A copy left behind by a killed writer is removed by its watcher.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

_serial = itertools.count()


def copy_prefix(path: Path, pid: int) -> str:
    """The name every working copy of ``path`` made by process ``pid`` starts with."""
    return f".{path.name}.{pid}-"


@contextlib.contextmanager
def updated(path: Path) -> Iterator[Path]:
    """A copy of ``path`` to change; it replaces ``path`` when the block ends normally and is
    removed when the block raises. (A symbolic link is followed: its target is replaced.)"""
    target = path.resolve()
    copy = target.with_name(f"{copy_prefix(target, os.getpid())}{next(_serial)}.tmp")
    try:
        shutil.copyfile(target, copy)
        shutil.copymode(target, copy)
        yield copy
        os.replace(copy, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            copy.unlink()


def remove_copies(path: Path, pid: int) -> int:
    """Remove the working copies of ``path`` left by process ``pid`` (killed in an update)."""
    target = path.resolve()
    removed = 0
    prefix = copy_prefix(target, pid)
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):  # not glob: the name may hold [ or *
            if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    removed += 1
    return removed
