"""MPICH's named shared-memory segments: remove this job's, and only this job's.

MPICH (ch4, POSIX shared memory: the PyPI ``mpich`` wheel) creates one segment per node at
MPI_Init, ``/dev/shm/mpich_shm_<world id>_<node id>`` (and ``mpich_vci_<world id>_<node id>``
when it uses several virtual channels), where the world id is a hash (FNV-1a, in hex) of the
job's PMI key-value space name, so it differs from job to job. The first rank of the node
creates it, every rank of the node maps it, and MPI_Finalize unlinks it; a job that does
not finalize (MPI_Abort, a watchdog, a signal, a killed rank) leaves it behind, 2-4 MiB
each, until the node reboots.

Every rank maps it before MPI_Init returns (MPICH waits there until every rank of the node
has attached), so after MPI_Init nobody needs its name any more. beff therefore:

* unlinks the segments its own process maps, right after MPI_Init (:func:`release_mapped`):
  the memory stays shared by the ranks until the last one exits, whatever ends the job, and
  MPI_Finalize's own unlink finds nothing (it ignores that);
* does the same when it aborts or is interrupted, for a segment created later: also
  MPICH's transient ``mpich_shar_tmpXXXXXX`` segments (shared-memory windows, the node's
  collective buffers), which MPICH unlinks once every rank has attached, within the call
  that creates them: a job aborted inside that call would leave one;
* and its result file's watcher, which outlives rank 0, removes the segments of this job's
  world id that no live process maps any more (:func:`sweep_after_job`).

A segment is this job's when this process maps it, or (in the watcher) when its name carries
this job's world id. Under Open MPI, or an MPICH built another way, nothing matches and
nothing is done. No MPI here: the watcher imports this module.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from beff.core import testhooks

SHM_DIR = Path("/dev/shm")
NAME = re.compile(r"mpich_(?:shm|vci)_([0-9a-f]+)_\d+")  # group 1: the world id
TRANSIENT = re.compile(r"mpich_shar_tmp\w+")  # random names (mkstemp), unlinked in the call
# The job's world id, for its watcher (set by rank 0, inherited by the watcher process).
JOB_ENV = "BEFF_MPICH_WORLD_ID"
# Test-only hook: keep the names after MPI_Init (so the later clean-ups can be tested).
KEEP_ENV = testhooks.SHM_KEEP
SWEEP_WAIT_S = 30.0  # the watcher waits this long for the job's ranks to be gone
# A transient segment unmapped at a first look is looked at again this much later: MPICH maps
# one microseconds after mkstemp makes it, so a live job's new one is mapped by then.
SETTLE_S = 0.2


def mapped(pid: int | str = "self", unlinked: bool = False,
           transient: bool = False) -> list[str]:
    """Names of the MPICH segments that process ``pid`` maps and that still have a name
    (``unlinked``: those without one too; ``transient``: the ``mpich_shar_tmp`` ones too)."""
    names: list[str] = []
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                gone = line.rstrip().endswith(" (deleted)")
                if "/dev/shm/mpich_" not in line or (gone and not unlinked):
                    continue
                name = line.rstrip().removesuffix(" (deleted)").rsplit("/", 1)[-1]
                known = NAME.fullmatch(name) or (transient and TRANSIENT.fullmatch(name))
                if known and name not in names:
                    names.append(name)
    except OSError:
        pass
    return names


def world_id(names: list[str]) -> str | None:
    """The world id in the first of ``names`` (None if none)."""
    for name in names:
        match = NAME.fullmatch(name)
        if match:
            return match.group(1)
    return None


def _unlink(name: str) -> bool:
    try:
        (SHM_DIR / name).unlink()
        return True
    except OSError:  # gone already (another rank of the node was first), or not ours
        return False


def release_mapped(startup: bool = False) -> list[str]:
    """Unlink the MPICH segments this process maps (this job's own); returns their names.

    ``startup``: the call right after MPI_Init, which the test hook :data:`KEEP_ENV` skips.
    """
    if startup and testhooks.shm_keep():
        return []
    names = mapped(transient=True)
    for name in names:
        _unlink(name)
    return names


def remember_job() -> None:
    """Note the job's world id for rank 0's watcher, which is told it with the result file
    (the segments this process maps tell it, unlinked or not)."""
    wid = world_id(mapped(unlinked=True))
    if wid is not None:
        os.environ[JOB_ENV] = wid


def _mapped_by_anyone(path: Path) -> bool:
    """Whether a live process maps ``path``. Processes whose maps cannot be read (another
    user's, or the container's init) are not ranks of this job: those are this user's."""
    target = str(path)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            with open(entry / "maps", encoding="utf-8", errors="replace") as fh:
                if any(target in line and not line.rstrip().endswith("(deleted)")
                       for line in fh):
                    return True
        except OSError:
            continue
    return False


def job_segments(wid: str) -> list[Path]:
    """The segments in /dev/shm named with world id ``wid``."""
    try:
        return sorted(p for p in SHM_DIR.iterdir()
                      if (m := NAME.fullmatch(p.name)) is not None and m.group(1) == wid)
    except OSError:
        return []


def sweep(wid: str, wait_s: float = SWEEP_WAIT_S, poll_s: float = 0.2) -> list[str]:
    """Remove the segments of world id ``wid`` once no live process maps them, waiting up to
    ``wait_s`` for the job's last ranks to be gone; returns the names removed."""
    removed: list[str] = []
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for path in job_segments(wid):
            if not _mapped_by_anyone(path) and _unlink(path.name):
                removed.append(path.name)
            elif path.exists():
                left.append(path)
        if not left or time.monotonic() >= deadline:
            return removed
        time.sleep(poll_s)


def sweep_after_job() -> list[str]:
    """The watcher's clean-up once rank 0 is gone: this job's segments, if rank 0 named its
    world id (:func:`remember_job`); nothing otherwise."""
    wid = os.environ.get(JOB_ENV, "")
    return sweep(wid) if re.fullmatch(r"[0-9a-f]+", wid) else []


def sweep_transient(since: float, settle: Callable[[], None] | None = None) -> list[str]:
    """Remove MPICH's transient segments (``mpich_shar_tmp*``) made since ``since`` (a
    time.time()) by this user that no live process maps: the one a rank killed inside the
    call that makes it leaves (MPICH unlinks it once every rank has attached, within that
    call). A live one is mapped by its maker from the start, but for the moment between
    mkstemp and mmap, in which another job's watcher may look: a segment unmapped at the
    first look goes only if it still is after ``settle`` (by default :data:`SETTLE_S`
    asleep). Returns the names removed."""
    try:
        candidates = [p for p in SHM_DIR.iterdir() if TRANSIENT.fullmatch(p.name)]
    except OSError:
        return []
    unmapped = []
    for path in candidates:
        try:
            st = path.stat()
        except OSError:
            continue
        if st.st_uid == os.getuid() and st.st_mtime >= since and not _mapped_by_anyone(path):
            unmapped.append(path)
    if not unmapped:
        return []
    (settle or (lambda: time.sleep(SETTLE_S)))()
    return [p.name for p in unmapped if not _mapped_by_anyone(p) and _unlink(p.name)]
