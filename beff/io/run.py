"""The I/O run's MPI side of the file-system layer: where the files go, the hints, and how a
failure on one rank becomes one collective failure of the benchmark.

:func:`start` (collective, after MPI_Init) checks ``--io-dir``, removes the files of earlier
runs that were killed, names this run's files (``beff.io.fs.RunFiles``, unique per run) and
registers their removal on every exit path: normal end, a benchmark's failure, an exception
on any rank (the abort hook), Ctrl-C and the watchdog. Only SIGKILL leaves files; the next
run in the directory removes them and says so.
"""

from __future__ import annotations

import atexit
import errno
import os
import secrets
import socket
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beff.core import capi, cpu, testhooks
from beff.core import mpi as _mpi
from beff.core.config import RunConfig
from beff.core.errors import CollectiveFailure
from beff.io import fs, loops

if TYPE_CHECKING:
    from mpi4py.MPI import Comm, File, Info

    from beff.bench.ctx import Ctx

CHUNK = 1 << 20  # the data of read benchmarks is written in 1 MiB pieces (as IMB)


@dataclass
class IORun:
    """This run's files and hints (the same on every rank)."""

    files: fs.RunFiles
    hints: dict[str, str]
    info: Any = None  # the MPI_Info of the hints (MPI.INFO_NULL without hints)
    keep: bool = False  # --keep-files


_RUN: IORun | None = None


def current() -> fs.RunFiles:
    if _RUN is None:
        raise RuntimeError("beff.io.run.start() has not run")
    return _RUN.files


def requested_hints(cfg: RunConfig) -> dict[str, str]:
    """``--hints FILE`` merged with the ``--hint key=value`` flags (the flags win); raises
    UsageError for a bad hint or file."""
    from_file = fs.read_hints_file(cfg.options.hints_file) if cfg.options.hints_file else {}
    return fs.merge_hints(from_file, dict(fs.parse_hint(h) for h in cfg.options.hints))


def validate(cfg: RunConfig) -> Path:
    """Rank 0, before the run: the directory (exit 2 when unusable) and the hints."""
    directory = fs.check_io_dir(cfg.options.io_dir or os.getcwd())
    requested_hints(cfg)
    return directory


def start(MPI: types.ModuleType, cfg: RunConfig,
          precompile: Callable[[], None] = loops.precompile) -> dict[str, Any]:
    """Collective: set up this run's files and hints; rank 0 returns what the result file
    records about the file system (``io`` attribute), the others an empty dict."""
    global _RUN
    precompile()
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    record: dict[str, Any] = {}
    directory = Path(cfg.options.io_dir or os.getcwd()).resolve()
    ident = None
    if rank == 0:
        removed, foreign = fs.remove_stale(directory)
        record = {
            "directory": str(directory),
            "file_system": fs.fs_info(directory).as_dict(),
            "mpiio": fs.mpiio_implementation(MPI.Get_library_version(), os.environ),
            "hints_requested": requested_hints(cfg),
            "drop_cache": cfg.options.drop_cache,
            "keep_files": cfg.options.keep_files,
            "stale_removed": [p.name for p in removed],
            "foreign_files": len(foreign),
            # The CPU kernel's speed (IMB-IO's header): 20 flops per unit (10 multiply-adds).
            "cpu_mflops": cpu.rate(capi.active().name) * 20 / 1e6,
        }
        ident = (socket.gethostname(), os.getpid(), secrets.token_hex(4))
    host, pid, token = world.bcast(ident, root=0)
    files = fs.RunFiles(directory, token, host=host, pid=pid)
    hints = world.bcast(record.get("hints_requested"), root=0) or {}
    info = MPI.INFO_NULL
    if hints:
        info = MPI.Info.Create()
        for key, value in hints.items():
            info.Set(key, value)
    _RUN = IORun(files, hints, info, cfg.options.keep_files)
    if not cfg.options.keep_files:
        # Every rank removes what it can see (node-local directories included); missing
        # files are fine.
        _mpi.on_abort(remove_files, again=True)
        atexit.register(remove_files)
    return record


# A rank's clean-up may run on another thread (rank 0's signal thread) while the main thread
# is opening a benchmark file: a file created after the removal would be left behind. So a
# file is created only under this lock, and never once the run's files were removed.
_create_lock = threading.Lock()
_removed = False
LOCK_WAIT_S = 2.0  # an open stuck in a collective with a failed rank holds the lock


@contextmanager
def creating() -> Iterator[None]:
    """Held while this rank may create a file of the run; after :func:`remove_files` the
    rank creates none: it waits to be ended (it is going down with the job)."""
    with _create_lock:
        if _removed:
            threading.Event().wait(60)
            raise RuntimeError("the run's files were removed: no new file is created")
        yield


def remove_files() -> None:
    """Delete this run's files (every exit path but SIGKILL)."""
    global _removed
    if _RUN is None:
        return
    locked = _create_lock.acquire(timeout=LOCK_WAIT_S)
    _removed = True
    try:
        _RUN.files.remove_all()
    except OSError:
        pass  # going down anyway: never mask the reason with a cleanup error
    finally:
        if locked:
            _create_lock.release()


def info() -> Info:
    assert _RUN is not None
    return _RUN.info  # type: ignore[no-any-return]


def keeps_files() -> bool:
    return _RUN is not None and _RUN.keep


def hints() -> dict[str, str]:
    return dict(_RUN.hints) if _RUN is not None else {}


def hints_of(fh: File) -> dict[str, str]:
    """The hints in effect for an open file (MPI_File_get_info)."""
    got = fh.Get_info()
    try:
        return {key: got.Get(key) or "" for key in got.keys()}
    finally:
        got.Free()


def unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def check_space(bench: str, volume: int) -> None:
    """Raise when ``volume`` bytes would not fit (with a reserve for the result file)."""
    assert _RUN is not None
    directory = _RUN.files.directory
    if testhooks.no_space_check():
        return  # test hook: let a small file system fill up during the run
    ok, free = fs.fits(volume, directory)
    if not ok:
        kept = fs.reserve(directory)
        raise NoSpace(f"{bench} skipped: it needs {fs.human_bytes(volume)} in {directory}, "
                      f"and {fs.human_bytes(kept)} are kept free there for the result file: "
                      f"{fs.human_bytes(volume + kept)}, which has {fs.human_bytes(free)} free")


class NoSpace(Exception):
    """A benchmark's files would not fit."""


def write_content(path: Path, nbytes: int) -> None:
    """Write ``nbytes`` of the read benchmarks' content (see imbio.content) and sync."""
    from beff.io.imbio import content

    with creating(), open(path, "wb") as fd:
        for offset in range(0, nbytes, CHUNK):
            fd.write(content(offset, min(CHUNK, nbytes - offset)).tobytes())
        fd.flush()
        os.fsync(fd.fileno())


def drop_cache(path: Path) -> None:
    failed = fs.drop_cache([path])
    if failed:
        raise OSError(failed[0])


def describe(exc: BaseException) -> str:
    """One line for a failure, saying plainly when the disk is full."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        where = _RUN.files.directory if _RUN is not None else "the I/O directory"
        return f"disk full: {exc.strerror} in {where}"
    MPI = _mpi.mpi()
    if isinstance(exc, MPI.Exception):
        text = short_error(exc.Get_error_string())
        if exc.Get_error_class() in (MPI.ERR_NO_SPACE, MPI.ERR_QUOTA) \
                or "No space left" in text or _nearly_full():
            return _disk_full("MPI-IO")
        return text
    return str(exc) or type(exc).__name__


def collective(comm: Comm, step: Callable[[], Any] | None, what: str) -> None:
    """Run ``step`` on the ranks that pass one (None: nothing to do here), then agree: if it
    failed anywhere, every rank of ``comm`` raises the same CollectiveFailure."""
    MPI = _mpi.mpi()
    message = ""
    try:
        if step is not None:
            step()
    except NoSpace as exc:
        message = str(exc)
    except (OSError, MPI.Exception) as exc:
        message = f"{what}: {describe(exc)} (rank {comm.Get_rank()})"
    failed = [m for m in comm.allgather(message) if m]
    if failed:
        raise CollectiveFailure(failed[0])


def open_file(group: Comm, fcomm: Comm, path: Path, amode: int, what: str) -> File:
    """MPI_File_open on ``fcomm`` (the group, or MPI_COMM_SELF for a private file), failing
    collectively over ``group``."""
    MPI = _mpi.mpi()
    box: list[File] = []

    def open_() -> None:
        with creating():
            box.append(MPI.File.Open(fcomm, str(path), amode, info()))

    collective(group, open_, f"{what}: MPI_File_open {path.name}")
    return box[0]


def agree(ctx: Ctx, err: int, what: str) -> None:
    """After a compiled loop: if any rank's MPI call failed, every rank raises one
    CollectiveFailure naming the first failing rank and the MPI error (disk full plainly)."""
    agree_on(ctx.comm, err, what)


def agree_on(comm: Comm, err: int, what: str) -> None:
    """:func:`agree` over ``comm``."""
    codes = comm.allgather(int(err))
    bad = [(r, c) for r, c in enumerate(codes) if c]
    if not bad:
        return
    MPI = _mpi.mpi()
    rank, code = bad[0]
    try:
        cls = MPI.Get_error_class(code)
        text = MPI.Get_error_string(code).strip()
    except MPI.Exception:
        cls, text = -1, f"error code {code}"
    if cls in (MPI.ERR_NO_SPACE, MPI.ERR_QUOTA) or "No space left" in text or _nearly_full():
        raise CollectiveFailure(_disk_full(f"{what} on rank {rank}"))
    raise CollectiveFailure(f"{what}: MPI-IO error on rank {rank}: {short_error(text)}")


def _disk_full(what: str) -> str:
    where = _RUN.files.directory if _RUN is not None else "the I/O directory"
    return (f"disk full: no space left in {where} ({what}); free space there, or choose "
            "another directory with --io-dir")


def short_error(text: str) -> str:
    """An MPI error string on one line: MPICH's error stack ("Other I/O error, error stack:
    ADIOI_...(123): ...: No space left on device") cut to its class and its last cause."""
    text = " ".join(text.split())
    head, sep, stack = text.partition(", error stack:")
    if not sep:
        return text
    head = head.strip()
    cause = stack.rsplit(":", 1)[-1].strip() if ":" in stack else ""
    cause = cause.removeprefix(head).strip()
    return f"{head}: {cause}" if cause and cause not in head else head


def _nearly_full() -> bool:
    """Whether the I/O directory's file system is (nearly) full: ROMIO reports ENOSPC as
    'Other I/O error' (MPI_ERR_IO), so after an error the free space decides."""
    if _RUN is None:
        return False
    try:
        info = fs.fs_info(_RUN.files.directory)
    except Exception:  # noqa: BLE001 - a best-effort diagnosis
        return False
    return info.free_bytes < max(CHUNK, info.capacity_bytes // 1000)


def stale_note(record: dict[str, Any]) -> str:
    """The line that reports removed leftovers of killed runs ("" when there were none)."""
    removed = record.get("stale_removed") or []
    if not removed:
        return ""
    return (f"removed {len(removed)} file{'s' if len(removed) != 1 else ''} left in "
            f"{record.get('directory')} by an earlier beff run that was killed")
