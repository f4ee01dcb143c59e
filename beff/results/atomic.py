"""Crash-safe changes of a result file: build the new version aside, then rename it into place.

HDF5 changes a file in place, its metadata included. A process killed while HDF5 writes or
closes (SIGKILL from MPI_Abort, from a launcher after SIGTERM, or from a job's time limit)
can leave a file that no longer opens, and every earlier result is lost with it. So a file is
created under a temporary name next to its final one and linked or renamed there when it is
complete (:func:`created`), and each update of the file works on a copy that is renamed over
it (:func:`updated`): a rename or link within one directory is atomic (POSIX), so the name
always refers to a complete file, the old one or the new one, from its first moment on. A
reader that opened the old file keeps reading it undisturbed. A copy left behind by a killed
writer is removed by its watcher.

A copy costs the whole file, so while a run measures the file holds only its header and the
results go to small files of their own (:mod:`beff.results.parts`), merged by one last copy.
"""

from __future__ import annotations

import contextlib
import errno
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


@contextlib.contextmanager
def created(path: Path, exclusive: bool = False) -> Iterator[Path]:
    """A temporary name next to ``path`` to build a new file under; when the block ends
    normally the file appears at ``path`` in one step, and when it raises it is removed.

    ``exclusive``: the file is hard-linked to ``path``, which fails with FileExistsError if
    ``path`` exists (as ``open(O_EXCL)`` would, but never showing a file still being built);
    otherwise it is renamed over whatever ``path`` was. (A symbolic link is followed.)
    """
    target = path.resolve()
    tmp = target.with_name(f"{copy_prefix(target, os.getpid())}{next(_serial)}.tmp")
    try:
        yield tmp
        if not exclusive:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK,
                                     errno.EXDEV):
                    raise
                # A file system without hard links: a rename, unless the name is taken (a
                # second run started in the same instant could still be replaced).
                if os.path.lexists(target):
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST),
                                          str(target)) from None
                os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


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
