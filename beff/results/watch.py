"""A result file's watcher: marks the file ``aborted`` when its writer dies without closing it.

Rank 0 writes the result file. When a rank on another host fails, or the job is killed,
MPI_Abort or the launcher ends rank 0 with SIGKILL, so rank 0 itself cannot record that its
run ended. A small process, started by rank 0 in a session of its own, waits for the end of
a pipe that only rank 0 holds; when rank 0 is gone, by any means, it reads the file's
status, and a file still ``running`` that belongs to this run becomes ``aborted``. It also
merges the results still in parts of their own into the file, as rank 0 would have at the
end (:mod:`beff.results.parts`), so a killed run too ends as one file, and removes a working
copy that rank 0 left, killed in an update (:mod:`beff.results.atomic`). The watcher holds
no output of the job and nothing of MPI, and uses no CPU while it waits.

Run as ``python -m beff.results.watch`` (by :func:`spawn` and :func:`start` only), told the
file on its standard input.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

from beff.core import early, shm
from beff.results import atomic

NOTE = ("the run ended without closing the file (it was killed, or a rank failed on another "
        "host, which MPI_Abort answers with SIGKILL)")


READY_S = 10.0
DONE = b"D"  # the writer finished the file itself
_spawned: subprocess.Popen[bytes] | None = None  # started ahead (spawn), not yet given a file


def spawn() -> None:
    """Start a watcher ahead, before MPI starts: its own start-up, some tens of milliseconds
    of CPU, then overlaps the job's (:func:`start` hands it the file). A watcher never told
    a file ends when its writer does."""
    global _spawned
    if _spawned is None:
        _spawned = _launch()


def _launch() -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen([sys.executable, "-m", "beff.results.watch"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, close_fds=True,
                                start_new_session=True)
    except OSError:
        return None  # no watcher: a killed run's file then stays "running"


def start(path: Path, run_id: str) -> subprocess.Popen[bytes] | None:
    """The watcher of ``path`` (the one :func:`spawn` started, else a new one); keep the
    returned object alive as long as the run.

    Returns once the watcher is waiting (it says so on its own pipe): its start-up must not
    overlap the first measurement.
    """
    global _spawned
    proc, _spawned = _spawned or _launch(), None
    if proc is None or proc.stdin is None or proc.stdout is None:
        return None
    try:
        # any file name; the MPI job's id too, known since MPI_Init (shm.remember_job)
        job = os.environ.get(shm.JOB_ENV) or "-"
        proc.stdin.write(f"{run_id} {os.fsencode(path).hex()} {job}\n".encode())
        proc.stdin.flush()
    except OSError:
        return None  # it ended (killed): as without a watcher
    if select.select([proc.stdout], [], [], READY_S)[0]:
        proc.stdout.read(1)
    proc.stdout.close()
    return proc


def mark_if_running(path: Path, run_id: str) -> bool:
    """Mark the file aborted if it is still ``running`` under ``run_id``; True if it did.

    Either way, results of the run still in parts are merged into the file and the parts
    removed (without room for the merge, the file is only marked: the parts stay, and
    :func:`beff.results.archive.load` reads them). Parts of a run whose file now belongs to
    another run are removed: nothing reads them."""
    import shutil

    import h5py

    from beff.results import parts

    where = parts.directory(path, run_id)
    try:
        with h5py.File(path, "r", locking=False) as f:  # never disturb another reader
            owner, status = _text(f.attrs.get("run_id")), _text(f.attrs.get("status"))
        if owner != run_id:
            parts.remove(where)
            return False
        running = status == "running"
        merge = bool(parts.listing(where))
        need = path.stat().st_size + parts.total_size(where) + (1 << 20)
        if merge and shutil.disk_usage(path.resolve().parent).free < need:
            merge = False  # no room to merge: mark only
        if merge or running:
            try:
                _rewrite(path, where if merge else None, running)
            except (OSError, RuntimeError):
                if not (merge and running):
                    raise
                merge = False  # the merge failed (the disk filled up meanwhile): mark only
                _rewrite(path, None, running)
        if merge or not parts.listing(where):
            parts.remove(where)  # merged, or only a part that a killed writer left unfinished
        return running
    except (OSError, RuntimeError):
        return False  # gone, or damaged beyond an attribute: leave it as it is


def _rewrite(path: Path, merge: Path | None, mark: bool) -> None:
    """One update of the file (a copy renamed over it): the parts in ``merge`` merged into it,
    and ``mark``: marked aborted."""
    import h5py

    from beff.results import parts

    with atomic.updated(path) as copy, h5py.File(copy, "a") as f:
        if merge is not None:
            parts.merge_into(f, merge)
        if mark:
            f.attrs["status"] = "aborted"
            f.attrs["status_note"] = NOTE
            f.attrs["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def finished(proc: subprocess.Popen[bytes] | None) -> None:
    """Tell the watcher that the writer finished the file (complete, or aborted and merged):
    when the writer is gone it then leaves the file alone, and does not load h5py just
    after the job, when the next one (a benchmark, say) may already run."""
    if proc is None or proc.stdin is None:
        return
    try:
        proc.stdin.write(DONE)
        proc.stdin.flush()
    except OSError:
        pass  # a watcher gone: nothing to tell


LOOK_S = 0.2  # until it is told a file, how often the watcher looks at the writer's maps


def _first_line(writer: int) -> tuple[bytes, bytes, str]:
    """The line that tells the file, or what came before the end of input; what came after
    it already (the writer's DONE, if that soon); and the MPI
    job's world id as seen meanwhile in the segments that the writer maps (MPICH's, made
    in MPI_Init: a job that never gets past it leaves them otherwise)."""
    fd = sys.stdin.buffer.fileno()
    data = b""
    job = ""
    launcher = launcher_of(writer)
    while b"\n" not in data:
        if not job:
            job = _job_seen(writer, launcher)
        if not select.select([fd], [], [], LOOK_S if not job else None)[0]:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    head, newline, rest = data.partition(b"\n")
    return head + newline, rest, job


def launcher_of(writer: int) -> int | None:
    """The process that started ``writer`` when that is an MPI launcher (the launcher's
    variables are the writer's, which this process inherited), else None: the writer's
    siblings are the job's other ranks only under a launcher. A writer started by a shell or
    a test process has siblings of other jobs, and the clean-up waited 30 s for the
    segments that one of them mapped."""
    return _parent_of(writer) if early.under_launcher() else None


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _job_seen(writer: int, launcher: int | None) -> str:
    """The MPICH world id in the segments that the writer maps, or else one of its sibling
    processes (the launcher's other ranks on this node: the node's first rank to reach
    MPI_Init makes the segment, which need not be the writer); "" if none yet."""
    names = shm.mapped(writer, unlinked=True)
    if not names and launcher is not None and launcher > 1:
        try:
            with open(f"/proc/{launcher}/task/{launcher}/children") as fh:
                siblings = [int(p) for p in fh.read().split()]
        except (OSError, ValueError):
            siblings = []
        for pid in siblings:
            if pid != writer and (names := shm.mapped(pid, unlinked=True)):
                break
    return shm.world_id(names) or ""


def main() -> int:
    """The run id, the file and the MPI job come as one line: RUN_ID, the file name's bytes
    in hex, and the job's world id ("-": none). The end of input before it: the writer
    ended before it made a file."""
    writer = os.getppid()  # started by the writer itself
    started = time.time()
    line, told, job_seen = _first_line(writer)
    if not line.endswith(b"\n"):  # the writer ended before it made a file: in MPI_Init,
        if job_seen:  # say, where MPICH made the node's segment; once its ranks are gone
            os.environ[shm.JOB_ENV] = job_seen
            shm.sweep_after_job()
        shm.sweep_transient(started)
        return 0
    run_id, name, job = line.decode().split()
    path = Path(os.fsdecode(bytes.fromhex(name)))
    if job != "-":
        os.environ[shm.JOB_ENV] = job  # for the sweep of the job's segments at the end
    sys.stdout.buffer.write(b"R")  # ready: the writer may go on measuring
    sys.stdout.buffer.flush()
    # end of file: the writer is gone, however it ended
    while chunk := os.read(sys.stdin.buffer.fileno(), 4096):
        told += chunk
    atomic.remove_copies(path, writer)  # a writer killed in an update leaves its copy
    if DONE not in told:
        mark_if_running(path, run_id)
    shm.sweep_after_job()  # the job's MPICH segments, once its ranks are gone
    shm.sweep_transient(started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
