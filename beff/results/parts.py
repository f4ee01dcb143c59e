"""The results of a running run: one small HDF5 file each, merged into the result file at the end.

Rewriting the whole result file for every result (a copy renamed over it) costs a run
quadratic time and bytes. So while a run measures, its result file ``DIR/NAME`` holds only
the header (root attributes and ``/ranks``), and each result goes to a *part* of its own in
the hidden directory ``DIR/.NAME.RUN_ID.parts/`` (``RUN_ID``: the run's ``run_id``
attribute, so parts of two runs never mix, and a reader finds the parts of the run that
owns the file). A part is written under a temporary name and renamed into place, so it is
complete or absent; a result rewritten under the same key (b_eff's ``/beff`` group after
each repetition) replaces its part in one rename. Each update then writes in proportion to
its result.

A part holds its group at the same path as the result file does (``results/<key>``,
``beff``, ``beffio``) and root attributes ``key`` (that path), ``run_id`` and ``updated``.

At the end (:meth:`beff.results.archive.ResultFile.finish`, or the watcher when the writer
died) every part is copied into a copy of the result file, which replaces the file in one
rename (:mod:`beff.results.atomic`); then the directory is removed: one self-contained file
per run. A reader (:func:`beff.results.archive.load`) reads the file and then any parts not
yet merged; a part is always at least as new as the file's copy of its group.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import h5py

SUFFIX = ".parts"
_serial = itertools.count()


def directory(path: Path, run_id: str) -> Path:
    """The parts directory of the result file ``path`` (a symbolic link is followed)."""
    target = Path(path).resolve()
    return target.with_name(f".{target.name}.{run_id}{SUFFIX}")


def part_name(key: str) -> str:
    """The file name of the part that holds group ``key`` (a name the key maps to one-to-one;
    a long key, which no beff benchmark has, by its hash)."""
    name = quote(key, safe="") + ".h5"
    if len(name) > 200:
        import hashlib

        name = hashlib.sha256(key.encode()).hexdigest() + ".h5"
    return name


@contextlib.contextmanager
def written(path: Path, run_id: str, key: str) -> Iterator[h5py.File]:
    """A new part of ``path``'s run that will hold group ``key``, open for writing; when the
    block ends normally it replaces any part of the same key (one rename) at
    ``directory(path, run_id) / part_name(key)``; when it raises it is removed."""
    import h5py

    where = directory(path, run_id)
    where.mkdir(exist_ok=True)
    tmp = where / f".{os.getpid()}-{next(_serial)}.tmp"  # a leading dot: never read as a part
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["key"] = key
            f.attrs["run_id"] = run_id
            f.attrs["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            yield f
        os.replace(tmp, where / part_name(key))
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def listing(where: Path) -> list[Path]:
    """The complete parts in ``where`` (none when it does not exist)."""
    try:
        names = os.listdir(where)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [where / n for n in sorted(names) if n.endswith(".h5") and not n.startswith(".")]


def total_size(where: Path) -> int:
    size = 0
    for part in listing(where):
        with contextlib.suppress(FileNotFoundError):
            size += part.stat().st_size
    return size


def each(where: Path) -> Iterator[tuple[str, h5py.File]]:
    """Every part in ``where``, open for reading (without HDF5's file lock: a reader never
    disturbs the writer), with the key of the group it holds. A part that vanished meanwhile
    was merged into the result file (its directory is removed after the merge): skipped."""
    import h5py

    for part in listing(where):
        try:
            f = h5py.File(part, "r", locking=False)
        except FileNotFoundError:
            continue
        with f:
            yield _text(f.attrs["key"]), f


def merge_into(f: h5py.File, where: Path) -> int:
    """Copy every part in ``where`` into ``f`` (open for writing), each replacing the group of
    its key; returns how many. The parts stay: remove them (:func:`remove`) once ``f`` has
    replaced the result file."""
    n = 0
    for key, part in each(where):
        if key in f:
            del f[key]
        parent, _, name = key.rpartition("/")
        part.copy(part[key], f.require_group(parent) if parent else f, name=name)
        n += 1
    return n


def remove(where: Path) -> None:
    """Remove a parts directory once its parts are in the result file. Errors are ignored (a
    reader on NFS may hold a part open): what stays is a copy of what the file holds."""
    shutil.rmtree(where, ignore_errors=True)


def remove_others(path: Path, run_id: str) -> int:
    """Remove the parts directories of ``path`` left by other runs (the file now belongs to
    ``run_id``, so nothing reads them any more); returns how many."""
    target = Path(path).resolve()
    pattern = re.compile(re.escape(f".{target.name}.") + r"[0-9A-Za-z_-]+" + re.escape(SUFFIX))
    removed = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):  # not glob: the name may hold [ or *
            if pattern.fullmatch(entry.name) and entry.name != directory(target, run_id).name:
                remove(Path(entry.path))
                removed += 1
    return removed


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
