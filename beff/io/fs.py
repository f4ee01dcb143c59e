"""File-system layer of beff's I/O benchmarks, in pure Python (no MPI).

It answers the questions the I/O benchmarks ask before and after touching the disk:

* which file system a directory lives on (:func:`fs_info`), and whether it is a known
  parallel or network file system;
* whether the ``--io-dir`` is usable (:func:`check_io_dir`) and has room for the planned
  files (:func:`free_bytes`, :func:`fits`);
* how the benchmark files of one run are named, so that they can be found and removed again,
  also after a crash (:class:`RunFiles`, :func:`parse_name`, :func:`stale_files`,
  :func:`remove_stale`);
* how to drop this node's page cache for those files (:func:`drop_cache`);
* how MPI-IO hints are read from the command line and from a ROMIO-style hints file
  (:func:`parse_hint`, :func:`read_hints_file`, :func:`merge_hints`);
* which MPI-IO implementation an MPI library uses (:func:`mpiio_implementation`).

Mistakes a user can fix raise :class:`~beff.core.errors.UsageError` with one line that names
the path and the reason.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import stat
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from beff.core.errors import UsageError

MOUNTINFO = "/proc/self/mountinfo"
UNKNOWN = "unknown"

# File systems whose files other nodes can see: the benchmark's numbers on them mean
# something different from a node-local disk. fuse.* is deliberately absent: the daemon
# behind it could be anything.
PARALLEL_FSTYPES = frozenset({
    "lustre", "gpfs", "beegfs", "nfs", "nfs4", "cifs", "smb3", "pvfs2", "orangefs",
    "ceph", "cephfs",
})

FILE_PREFIX = "beff-io"
MiB = 1 << 20
MIN_RESERVE = 64 * MiB

_COMPONENT = r"[A-Za-z0-9_-]+"
_COMPONENT_RE = re.compile(_COMPONENT)
# beff-io.<host>.<pid>.<run_id>.<name>; pid 0 is excluded because os.kill(0, ...) would
# address our own process group rather than a process.
_NAME_RE = re.compile(
    rf"{re.escape(FILE_PREFIX)}\.({_COMPONENT})\.([1-9][0-9]*)\.({_COMPONENT})\.({_COMPONENT})"
)
_OCTAL_ESCAPE = re.compile(rb"\\([0-7]{3})")
_HINT_LINE = re.compile(r"([^\s=]+)\s*(?:=|\s)\s*(\S.*)")


# --------------------------------------------------------------------------- file system


@dataclass(frozen=True)
class FsInfo:
    """The file system a directory lives on, and its size.

    ``free_bytes`` counts what an unprivileged user may allocate (``f_bavail``), not the
    blocks reserved for root. ``parallel`` is true only for known parallel or network file
    systems (:data:`PARALLEL_FSTYPES`); unknown ones, including any ``fuse.*``, count as
    local.
    """

    path: Path
    mount_point: Path
    fstype: str
    source: str
    capacity_bytes: int
    free_bytes: int
    parallel: bool

    def as_dict(self) -> dict[str, Any]:
        """The fields as plain JSON-able data (paths as strings)."""
        return {
            "path": str(self.path),
            "mount_point": str(self.mount_point),
            "fstype": self.fstype,
            "source": self.source,
            "capacity_bytes": self.capacity_bytes,
            "free_bytes": self.free_bytes,
            "parallel": self.parallel,
        }


def _unescape(field: bytes) -> str:
    """Decode the kernel's octal escapes (``\\040`` for a space, ``\\134`` for a backslash)."""
    raw = _OCTAL_ESCAPE.sub(lambda m: bytes([int(m.group(1), 8) & 0xFF]), field)
    return os.fsdecode(raw)


def _read_mountinfo(mountinfo: str | os.PathLike[str]) -> list[tuple[str, str, str]]:
    """(mount point, fstype, source) for every well-formed line of a mountinfo file.

    Line format (proc(5)): ``id parent major:minor root mount-point options [optional...]
    - fstype source super-options``. Raises OSError when the file cannot be read.
    """
    with open(mountinfo, "rb") as f:
        data = f.read()
    mounts = []
    for line in data.splitlines():
        fields = line.split()
        # The optional fields vary in number, so the separator has to be searched for;
        # it cannot come before field 7.
        try:
            sep = fields.index(b"-", 6)
        except ValueError:
            continue
        if len(fields) < sep + 3:
            continue
        mounts.append((_unescape(fields[4]), _unescape(fields[sep + 1]),
                       _unescape(fields[sep + 2])))
    return mounts


def _walk_to_mount(path: Path) -> Path:
    """The nearest ancestor of ``path`` (or itself) that is a mount point."""
    for candidate in (path, *path.parents):
        if os.path.ismount(candidate):
            return candidate
    return Path(path.anchor or "/")


def _statvfs(directory: Path) -> os.statvfs_result:
    """os.statvfs, with a failure (typically a missing directory) as a UsageError."""
    try:
        return os.statvfs(directory)
    except OSError as exc:
        raise UsageError(
            f"--io-dir {directory}: cannot read file-system statistics ({exc.strerror})"
        ) from None


def fs_info(directory: str | os.PathLike[str],
            mountinfo: str | os.PathLike[str] = MOUNTINFO) -> FsInfo:
    """Describe the file system that holds ``directory``.

    The mount is the entry of ``mountinfo`` whose mount point is the longest path prefix
    of the resolved directory (whole components: ``/data`` does not hold ``/database``).
    Of several entries on the same mount point the last one wins, since it is mounted on
    top of the others. If ``mountinfo`` cannot be read, the mount point is found by
    walking up with :func:`os.path.ismount` and the type and source are ``"unknown"``.
    """
    path = Path(directory).resolve()
    st = _statvfs(path)
    pure = PurePosixPath(path)
    best: tuple[str, str, str] | None = None
    try:
        mounts = _read_mountinfo(mountinfo)
    except OSError:
        mounts = []
    for entry in mounts:
        if pure.is_relative_to(entry[0]) and (
                best is None or len(PurePosixPath(entry[0]).parts)
                >= len(PurePosixPath(best[0]).parts)):
            best = entry
    if best is None:
        mount_point, fstype, source = _walk_to_mount(path), UNKNOWN, UNKNOWN
    else:
        mount_point, fstype, source = Path(best[0]), best[1], best[2]
    return FsInfo(
        path=path,
        mount_point=mount_point,
        fstype=fstype,
        source=source,
        capacity_bytes=st.f_blocks * st.f_frsize,
        free_bytes=st.f_bavail * st.f_frsize,
        parallel=fstype in PARALLEL_FSTYPES,
    )


def check_io_dir(directory: str | os.PathLike[str]) -> Path:
    """Return the resolved ``directory`` after proving that this process can write there.

    Permission bits and ACLs do not tell the whole story (read-only mounts, quotas,
    root squash on NFS), so a probe file is created with O_CREAT|O_EXCL and removed again.
    The probe is named like a run's file, so :func:`remove_stale` cleans it up should this
    process die in between.
    """
    path = Path(directory).expanduser().resolve()
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UsageError(f"--io-dir {path}: does not exist") from None
    except OSError as exc:
        raise UsageError(f"--io-dir {path}: cannot be accessed ({exc.strerror})") from None
    if not stat.S_ISDIR(mode):
        raise UsageError(f"--io-dir {path}: is not a directory")
    probe = RunFiles(path, "probe").path(uuid.uuid4().hex)
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise UsageError(f"--io-dir {path}: is not writable ({exc.strerror})") from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError as exc:
        # Creating but not deleting (e.g. a sticky directory owned by someone else changing
        # under us) would leave every benchmark file behind.
        raise UsageError(
            f"--io-dir {path}: files cannot be removed there ({exc.strerror})"
        ) from None
    return path


# --------------------------------------------------------------------------- file names


def _safe_host(host: str) -> str:
    """The host name as one file-name component: dots and anything unusual become '-'."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", host) or UNKNOWN


def _check_component(what: str, value: str) -> None:
    if not _COMPONENT_RE.fullmatch(value):
        raise ValueError(f"{what} {value!r}: only letters, digits, '_' and '-' are allowed")


class RunFiles:
    """Names of the benchmark files of one run: ``beff-io.<host>.<pid>.<run_id>.<name>``.

    Host and pid make the names unique among concurrent runs sharing a directory (also
    across nodes of a parallel file system) and let :func:`stale_files` tell whether the
    owner is still alive.
    """

    def __init__(self, directory: str | os.PathLike[str], run_id: str,
                 host: str | None = None, pid: int | None = None) -> None:
        _check_component("run id", run_id)
        self.directory = Path(directory)
        self.run_id = run_id
        self.host = _safe_host(socket.gethostname() if host is None else host)
        self.pid = os.getpid() if pid is None else pid
        if self.pid <= 0:
            raise ValueError(f"pid {self.pid}: must be positive")
        self.prefix = f"{FILE_PREFIX}.{self.host}.{self.pid}.{self.run_id}."

    def __repr__(self) -> str:
        return f"RunFiles({str(self.directory)!r}, prefix={self.prefix!r})"

    def path(self, name: str) -> Path:
        """The path of this run's file ``name`` (letters, digits, '_' and '-' only)."""
        _check_component("file name", name)
        return self.directory / f"{self.prefix}{name}"

    def remove_all(self) -> list[Path]:
        """Delete every file of this run in the directory and return those removed.

        Files that vanish meanwhile, or a missing directory, are not errors; other
        failures (e.g. EACCES) raise OSError, since they would leave large files behind.
        """
        removed = []
        for path in _candidates(self.directory):
            if path.name.startswith(self.prefix) and parse_name(path.name) is not None:
                if _unlink(path):
                    removed.append(path)
        return removed


def parse_name(filename: str | os.PathLike[str]) -> tuple[str, int, str, str] | None:
    """(host, pid, run_id, name) of a benchmark file name, or None for any other file.

    Only the last path component is looked at.
    """
    m = _NAME_RE.fullmatch(os.path.basename(os.fspath(filename)))
    if m is None:
        return None
    return m.group(1), int(m.group(2)), m.group(3), m.group(4)


def _candidates(directory: Path) -> list[Path]:
    """The regular (non-symlink) files of ``directory`` that look like benchmark files."""
    try:
        with os.scandir(directory) as it:
            entries = [e for e in it if e.name.startswith(FILE_PREFIX + ".")]
    except FileNotFoundError:
        return []
    return sorted(Path(e.path) for e in entries if e.is_file(follow_symlinks=False))


def _unlink(path: Path) -> bool:
    """Remove ``path``; False if it was already gone (another process may clean up too)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this node (signal 0 checks without signalling)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def stale_files(directory: str | os.PathLike[str],
                host: str | None = None) -> tuple[list[Path], list[Path]]:
    """Sort leftover benchmark files in ``directory`` into (removable, foreign).

    Removable: files of runs on this host (same host component as :class:`RunFiles` would
    write) whose process no longer exists. Foreign: files written on other hosts, whose
    processes cannot be checked from here. Files of live processes on this host are in
    neither list. A recycled pid makes a dead run look alive, which errs on the safe side.
    """
    own = _safe_host(socket.gethostname() if host is None else host)
    removable: list[Path] = []
    foreign: list[Path] = []
    alive: dict[int, bool] = {}
    for path in _candidates(Path(directory)):
        parsed = parse_name(path.name)
        if parsed is None:
            continue
        file_host, pid = parsed[0], parsed[1]
        if file_host != own:
            foreign.append(path)
            continue
        if pid not in alive:
            alive[pid] = _alive(pid)
        if not alive[pid]:
            removable.append(path)
    return removable, foreign


def remove_stale(directory: str | os.PathLike[str]) -> tuple[list[Path], list[Path]]:
    """Remove the removable files of :func:`stale_files`; return (removed, foreign)."""
    removable, foreign = stale_files(directory)
    removed = [path for path in removable if _unlink(path)]
    return removed, foreign


# --------------------------------------------------------------------------- space


def free_bytes(directory: str | os.PathLike[str]) -> int:
    """Bytes an unprivileged user may still write on the file system of ``directory``."""
    st = _statvfs(Path(directory))
    return st.f_bavail * st.f_frsize


def fits(planned_bytes: int, directory: str | os.PathLike[str],
         reserve_fraction: float = 0.02) -> tuple[bool, int]:
    """Whether ``planned_bytes`` fit on the file system of ``directory``; also the free bytes.

    A reserve of max(64 MiB, ``reserve_fraction`` of the capacity) is kept free on top, so
    that the result file, which may live on the same file system, can still be written
    after the benchmark files have filled it.
    """
    if planned_bytes < 0:
        raise ValueError(f"planned_bytes {planned_bytes}: must not be negative")
    if not 0.0 <= reserve_fraction < 1.0:
        raise ValueError(f"reserve_fraction {reserve_fraction}: must be in [0, 1)")
    st = _statvfs(Path(directory))
    free = st.f_bavail * st.f_frsize
    return planned_bytes + reserve(directory, reserve_fraction) <= free, free


def reserve(directory: str | os.PathLike[str], reserve_fraction: float = 0.02) -> int:
    """The bytes :func:`fits` keeps free on the file system of ``directory``."""
    st = _statvfs(Path(directory))
    return max(MIN_RESERVE, int(reserve_fraction * st.f_blocks * st.f_frsize))


def human_bytes(n: int) -> str:
    """``n`` bytes for messages: ``"512 B"``, ``"1.5 GiB"``, ``"64 MiB"`` (binary units)."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < 1024:
        return f"{sign}{n} B"
    units = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    value, index = n / 1024, 0
    # Move on while rounding would print 1024.0 of this unit.
    while round(value, 1) >= 1024 and index < len(units) - 1:
        value, index = value / 1024, index + 1
    text = f"{value:.1f}".removesuffix(".0")
    return f"{sign}{text} {units[index]}"


# --------------------------------------------------------------------------- page cache


def _failure(path: str | os.PathLike[str], exc: OSError) -> str:
    """``"path: [Errno N] reason"``, without the file name OSError appends itself."""
    if exc.errno is None:
        return f"{os.fspath(path)}: {exc}"
    return f"{os.fspath(path)}: [Errno {exc.errno}] {exc.strerror}"


def drop_cache(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Ask the kernel to drop this node's cached pages of ``paths``; return the failures.

    Each existing file is fsync'ed first, because POSIX_FADV_DONTNEED drops only clean
    pages, then advised DONTNEED. That needs no root, but it acts on this node's page cache
    only: other nodes (and the servers of a parallel file system) keep theirs. Missing files
    are skipped; any other failure is returned as ``"path: [Errno N] reason"`` and never
    raised, since a warm cache spoils a measurement but should not abort the run.
    """
    failures = []
    advise = getattr(os, "posix_fadvise", None)
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        except OSError as exc:
            failures.append(_failure(path, exc))
            continue
        try:
            os.fsync(fd)
            if advise is None:
                raise OSError(errno.ENOSYS, "posix_fadvise is not available")
            advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError as exc:
            failures.append(_failure(path, exc))
        finally:
            os.close(fd)
    return failures


# --------------------------------------------------------------------------- hints


def parse_hint(text: str) -> tuple[str, str]:
    """Split a ``--hint key=value`` into (key, value), both stripped and non-empty."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key or not value or any(c.isspace() for c in key):
        raise UsageError(f"--hint {text!r}: expected key=value")
    return key, value


def read_hints_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read MPI-IO hints, one per line as ``key=value`` or ``key value`` (ROMIO style).

    Blank lines and lines starting with '#' are ignored; a later line overrides an earlier
    one with the same key.
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise UsageError(f"hints file {os.fspath(path)}: cannot be read ({reason})") from None
    hints = {}
    for lineno, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _HINT_LINE.fullmatch(stripped)
        if m is None:
            raise UsageError(f"hints file {os.fspath(path)}, line {lineno}: {stripped!r}: "
                             "expected 'key=value' or 'key value'")
        hints[m.group(1)] = m.group(2)
    return hints


def merge_hints(file_hints: Mapping[str, str], cli_hints: Mapping[str, str]) -> dict[str, str]:
    """Hints from a file overridden by those given on the command line."""
    return {**file_hints, **cli_hints}


# --------------------------------------------------------------------------- MPI-IO


def mpiio_implementation(library_version: str, env: Mapping[str, str] | None = None) -> str:
    """Name the MPI-IO layer behind an ``MPI_Get_library_version`` string.

    "ROMIO" for the MPICH family (MPICH, Intel MPI, MVAPICH, Cray MPICH); for Open MPI
    "OMPIO", unless ``OMPI_MCA_io`` in ``env`` (default: this process's environment)
    selects a romio component (e.g. ``romio341``) without ompio, or excludes ompio
    (``^ompio``); with both allowed, ompio wins on priority. MCA settings made in parameter
    files are not seen. "unknown" for anything else.
    """
    text = library_version.lower()
    if "open mpi" in text:
        selection = (os.environ if env is None else env).get("OMPI_MCA_io", "").strip()
        # MCA syntax: "a,b" allows only a and b, "^a,b" allows all but a and b.
        excluding = selection.startswith("^")
        components = {c.strip() for c in selection.lstrip("^").split(",") if c.strip()}
        if excluding and "ompio" in components:
            return "ROMIO"
        if (not excluding and "ompio" not in components
                and any(c.startswith("romio") for c in components)):
            return "ROMIO"
        return "OMPIO"
    if any(s in text for s in ("mpich", "intel(r) mpi", "mvapich")):
        return "ROMIO"
    return UNKNOWN
