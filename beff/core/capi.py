"""The MPI C functions that timed loops call, bound for numba (``jit``) or for Python.

A timed loop is written once, as a plain Python function decorated with :func:`loop`, that
calls MPI only as ``C.<Name>(...)`` (``C.Send``, ``C.Wtime`` ...) with numbers: buffer
addresses, counts, handles and flags are ints; parameters annotated ``float`` are doubles and
parameters annotated with an array type from :data:`ARRAYS` are numpy arrays. It returns plain
numbers. The active :class:`Backend` makes it callable:

* ``jit``: numba compiles it in nopython mode, and each ``C.<Name>`` is a
  ``numba.types.ExternalFunction`` resolving, by symbol, to the function of the very libmpi
  that mpi4py loaded. No Python runs inside the loop.
* ``python``: the same function runs in the interpreter, each ``C.<Name>`` being a ctypes
  function of that libmpi. Slower; used when numba is missing or fails its self-test.

Handles (communicators, datatypes, ops, requests) come from mpi4py at run time
(:func:`handle`), and so do the handle width and the size of ``MPI_Status``: MPICH and Open
MPI differ in both, as in the values of their constants, so none is written here. Status
arguments always point to real status storage (never ``MPI_STATUS_IGNORE``).

Compiled loops are cached on disk in a directory keyed by the MPI library (path, version
string, handle size), the numba, llvmlite and Python versions: code compiled against one MPI
crashes when loaded under another. Two caches live there: numba's own (``cache=True``), and
each loop's machine code as one object file (:mod:`beff.core.objcache`), which later
processes load without importing numba (0.5-0.7 s less per process).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import inspect
import os
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from beff.core import mpi as _mpi
from beff.core import testhooks

# Return type, then argument kinds: p = address, i = C int, h = MPI handle, d = double,
# a = MPI_Aint (displacements and window sizes), f = MPI_File (a pointer in MPICH too, unlike
# its int handles), o = MPI_Offset.
SIGNATURES: dict[str, str] = {
    "Wtime": "d:",
    "Barrier": "i:h",
    "Send": "i:pihiih",
    "Recv": "i:pihiihp",
    "Sendrecv": "i:pihiipihiihp",
    "Sendrecv_replace": "i:pihiiiihp",  # IMB-P2P's SendRecv_Replace
    "Isend": "i:pihiihp",
    "Irecv": "i:pihiihp",
    "Wait": "i:pp",
    "Waitall": "i:ipp",
    "Test": "i:ppp",  # beff map polls its sends and receives apart (mpiGraph's timing)
    "Testall": "i:ippp",
    "Bcast": "i:pihih",
    "Allreduce": "i:ppihhh",
    "Reduce": "i:ppihhih",
    "Reduce_local": "i:ppihh",
    "Reduce_scatter": "i:ppphhh",
    "Reduce_scatter_block": "i:ppihhh",
    "Allgather": "i:pihpihh",
    "Allgatherv": "i:pihppphh",
    "Gather": "i:pihpihih",
    "Gatherv": "i:pihppphih",
    "Scatter": "i:pihpihih",
    "Scatterv": "i:ppphpihih",
    "Alltoall": "i:pihpihh",
    "Alltoallv": "i:ppphppphh",
    "Request_free": "i:p",
    "Start": "i:p",
    # One-sided communication (MPI-2 active target, MPI-3 passive target).
    "Win_create": "i:paihhp",
    "Win_free": "i:p",
    "Win_fence": "i:ih",
    "Win_lock": "i:iiih",
    "Win_unlock": "i:ih",
    "Win_lock_all": "i:ih",
    "Win_unlock_all": "i:h",
    "Win_flush": "i:ih",
    "Win_flush_local": "i:ih",
    "Win_flush_all": "i:h",
    "Win_flush_local_all": "i:h",
    "Put": "i:pihiaihh",
    "Get": "i:pihiaihh",
    "Accumulate": "i:pihiaihhh",
    "Get_accumulate": "i:pihpihiaihhh",
    "Fetch_and_op": "i:pphiahh",
    "Compare_and_swap": "i:ppphiah",
    # MPI-IO: the calls IMB-IO times (the file is opened by mpi4py, except in Open_Close).
    "File_open": "i:hpihp",
    "File_close": "i:p",
    "File_sync": "i:f",
    "File_seek": "i:foi",
    "File_seek_shared": "i:foi",
    "File_set_view": "i:fohhph",  # b_eff_io sets its view inside the timed region
}
# Individual/shared-pointer, collective and ordered transfers: (fh, buf, count, type, status);
# explicit offsets put the offset after fh; nonblocking ones end with a request instead; the
# split collectives' begin has no status, their end takes (fh, buf, status).
for _rw in ("write", "read"):
    for _call in ("", "_all", "_shared", "_ordered"):
        SIGNATURES[f"File_{_rw}{_call}"] = "i:fpihp"
    for _call in ("_at", "_at_all"):
        SIGNATURES[f"File_{_rw}{_call}"] = "i:fopihp"
    SIGNATURES[f"File_i{_rw}"] = SIGNATURES[f"File_i{_rw}_shared"] = "i:fpihp"
    SIGNATURES[f"File_i{_rw}_at"] = "i:fopihp"
    for _call in ("_all", "_ordered"):
        SIGNATURES[f"File_{_rw}{_call}_begin"] = "i:fpih"
        SIGNATURES[f"File_{_rw}{_call}_end"] = "i:fpp"
    SIGNATURES[f"File_{_rw}_at_all_begin"] = "i:fopih"
    SIGNATURES[f"File_{_rw}_at_all_end"] = "i:fpp"
del _rw, _call
# Nonblocking collectives (MPI-3): the blocking arguments, then the request.
SIGNATURES.update({"I" + name.lower(): SIGNATURES[name] + "p" for name in (
    "Barrier", "Bcast", "Allreduce", "Reduce", "Reduce_scatter", "Allgather", "Allgatherv",
    "Gather", "Gatherv", "Scatter", "Scatterv", "Alltoall", "Alltoallv")})
# Persistent collectives (MPI-4.0): the blocking arguments, an MPI_Info, then the request.
# An older library lacks them; they are bound only where present (see :func:`has`).
PERSISTENT = {name + "_init": SIGNATURES[name] + "hp" for name in (
    "Barrier", "Bcast", "Allreduce", "Reduce", "Reduce_scatter", "Allgather", "Allgatherv",
    "Gather", "Gatherv", "Scatter", "Scatterv", "Alltoall", "Alltoallv")}
SIGNATURES.update(PERSISTENT)
# MPI-3.0 one-sided calls (passive-target flushes, lock_all, atomics): an MPI-2 library lacks
# them, and only IMB-RMA needs them.
RMA3 = ("Win_lock_all", "Win_unlock_all", "Win_flush", "Win_flush_local", "Win_flush_all",
        "Win_flush_local_all", "Get_accumulate", "Fetch_and_op", "Compare_and_swap")
OPTIONAL = frozenset(PERSISTENT) | frozenset(RMA3)
# Functions of the C library, not of MPI (bound under their own names, where present): the
# threads of IMB-MT meet at a pthread barrier where IMB-MT's meet at an OpenMP one.
LIBC = {"pthread_barrier_wait": "i:p", "sched_yield": "i:"}

# Array parameter annotations a loop may use, with their numba types (loop() reads them as
# text; at run time the names are plain ndarray: numpy.typing would cost a run an import).
if TYPE_CHECKING:
    import numpy.typing as npt

    U8Array = npt.NDArray[np.uint8]
    F32Array = npt.NDArray[np.float32]
    F64Array = npt.NDArray[np.float64]
    I32Array = npt.NDArray[np.int32]
    I64Array = npt.NDArray[np.int64]
    I64Array2 = npt.NDArray[np.int64]  # two-dimensional, C order
    # MPI handles (e.g. a window that a loop creates): int32 (MPICH) or int64 (Open MPI)
    # items, resolved when the loop is compiled; make one with :func:`handle_array`.
    HArray = npt.NDArray[np.int64]
else:
    U8Array = F32Array = F64Array = I32Array = I64Array = I64Array2 = HArray = np.ndarray
ARRAYS = {"U8Array": "uint8[::1]", "F32Array": "float32[::1]", "I32Array": "int32[::1]",
          "F64Array": "float64[::1]", "I64Array": "int64[::1]", "I64Array2": "int64[:, ::1]",
          "HArray": "handles"}

BACKENDS = ("auto", "jit", "python")
CACHE_FORMAT = "2"  # bumped when the compile options change (2: nogil)


def handle_size() -> int:
    return int(_mpi.mpi()._sizeof(_mpi.mpi().Comm))


def status_size() -> int:
    return int(_mpi.mpi()._sizeof(_mpi.mpi().Status))


def handle_array(n: int = 1) -> np.ndarray:
    """Room for ``n`` MPI handles that a loop fills (MPI_Win_create) and reads."""
    return np.zeros(n, dtype=np.int32 if handle_size() == 4 else np.int64)


def file_handle(fh: Any) -> int:
    """The C handle of an mpi4py File (a pointer under both MPICH and Open MPI)."""
    return ctypes.c_int64(int(_mpi.mpi()._handleof(fh))).value


def handle(obj: Any) -> int:
    """The C handle of an mpi4py object, as the signed integer a loop passes on.

    mpi4py gives it unsigned (MPICH's negative int handles come back as 2^64 - x).
    """
    value = int(_mpi.mpi()._handleof(obj))
    return ctypes.c_int32(value).value if handle_size() == 4 else ctypes.c_int64(value).value


def _library() -> ctypes.CDLL:
    # dlsym on mpi4py's extension module finds the symbols of the libmpi it links to.
    return ctypes.CDLL(_mpi.mpi().__file__)


def library_path() -> str:
    """The libmpi shared object this process uses (from /proc/self/maps; best effort)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as fh:
            for line in fh:
                path = line.rsplit(None, 1)[-1]
                if "/libmpi" in path and ".so" in path:
                    return path
    except OSError:
        pass
    return str(_mpi.mpi().__file__)


@dataclass
class LoopFunc:
    """A timed loop's source function, its parameter types, and its compiled forms."""

    func: Callable[..., Any]
    params: tuple[str, ...]  # numba type names, from the annotations
    compiled: dict[str, Callable[..., Any]] = field(default_factory=dict)
    # Its twin that also records single iterations (--per-iteration): the same calls, with
    # the parameters (..., times, stride, start) after this loop's own (per_iteration_of).
    per_iteration: LoopFunc | None = None
    # Its twin under the window start policy (--sync window): the same calls, each one
    # started at a common time, with (..., alpha, beta, t0, width, ends, late) after this
    # loop's own parameters (windowed_of).
    windowed: LoopFunc | None = None

    def __call__(self, *args: Any) -> Any:
        return active().run(self, args)


# Every timed loop of the modules imported so far (``beff prepare`` readies them all).
LOOPS: list[LoopFunc] = []


def loop(func: Callable[..., Any]) -> LoopFunc:
    """Register ``func`` as a timed loop (see the module docstring for the rules)."""
    params = []
    for p in inspect.signature(func).parameters.values():
        ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation,
                                                                          "__name__", "int")
        params.append("float64" if ann == "float" else ARRAYS.get(ann, "int64"))
    LOOPS.append(LoopFunc(func, tuple(params)))
    return LOOPS[-1]


def per_iteration_of(timed: LoopFunc) -> Callable[[Callable[..., Any]], LoopFunc]:
    """Register the decorated function as ``timed``'s twin for ``--per-iteration``: it takes
    ``timed``'s parameters and then ``times: F64Array, stride: int, start: int``, makes the
    same MPI calls, and writes the seconds of iteration ``start + i`` (of the size's timed
    ones) to ``times[(start + i) // stride]`` when ``stride`` divides ``start + i``."""

    def register(func: Callable[..., Any]) -> LoopFunc:
        twin = loop(func)
        timed.per_iteration = twin
        return twin

    return register


def windowed_of(timed: LoopFunc) -> Callable[[Callable[..., Any]], LoopFunc]:
    """Register the decorated function as ``timed``'s twin for ``--sync window``: it takes
    ``timed``'s parameters and then ``alpha: float, beta: float, t0: float, width: float,
    ends: F64Array, late: I64Array, share: int``; call i waits for the local time at which
    this rank's clock model (reference = alpha + beta * local) shows ``t0 + i * width``
    (``late[i] = 1`` if it was already past), spinning (with sched_yield where ``share``: an
    oversubscribed node), and ``ends[i]`` gets its end on the reference clock less that
    start."""

    def register(func: Callable[..., Any]) -> LoopFunc:
        twin = loop(func)
        timed.windowed = twin
        return twin

    return register


HELPERS: dict[str, Callable[..., Any]] = {}


def helper(func: Callable[..., Any]) -> Callable[..., Any]:
    """Register ``func`` (numbers and arrays only, like a loop) as ``C.<its name>`` for timed
    loops: compiled with them under ``jit``, plain Python under ``python``."""
    HELPERS[func.__name__] = func
    return func


def has(name: str) -> bool:
    """Whether the active backend bound the C function MPI_<name> (optional ones may be
    missing: e.g. the MPI-4.0 persistent collectives from an MPI-3 library)."""
    return hasattr(active().ns, name)


def _rebind(func: Callable[..., Any], ns: types.ModuleType) -> Callable[..., Any]:
    """A copy of ``func`` whose global ``C`` is the backend's bindings ``ns``."""
    glb = dict(func.__globals__)
    glb["C"] = ns
    copy = types.FunctionType(func.__code__, glb, func.__name__, func.__defaults__,
                              func.__closure__)
    copy.__qualname__ = func.__qualname__
    copy.__module__ = func.__module__
    return copy


# A loop not ready after this long is being compiled, not loaded from the cache: say so
# (BEFF_COMPILE_NOTICE_S overrides it, for tests).
COMPILE_NOTICE_S = 2.0
_told = False


def quiet_notices() -> None:
    """Say nothing of compiling the timed loops (the Python API prints nothing unless
    asked)."""
    global _told
    _told = True


class Backend:
    """Binds the C functions of libmpi and makes timed loops callable."""

    name = "python"

    def __init__(self) -> None:
        self.ns = types.ModuleType(f"beff_mpi_{self.name}")
        self.compile_seconds = 0.0

    def run(self, lf: LoopFunc, args: tuple[Any, ...]) -> Any:
        return self.ready(lf)(*args)

    def ready(self, lf: LoopFunc) -> Callable[..., Any]:
        """The loop's compiled form (compiled, or loaded from the cache, on first use)."""
        fn = lf.compiled.get(self.name)
        if fn is None:
            with _mpi.unguarded():  # local work, however long it takes: not a stall
                t0 = time.perf_counter()
                fn = lf.compiled[self.name] = self.compile(lf)
                time.sleep(testhooks.slow_ready())  # 0 unless a test asks
                self.compile_seconds += time.perf_counter() - t0
        return fn

    @contextlib.contextmanager
    def noticed(self) -> Iterator[None]:
        """A compile: named on rank 0 when it has not ended after COMPILE_NOTICE_S."""
        after = float(os.environ.get("BEFF_COMPILE_NOTICE_S", COMPILE_NOTICE_S))
        notice = threading.Timer(after, self.compiling_notice)
        notice.daemon = True
        notice.start()
        try:
            yield
        finally:
            notice.cancel()
            notice.join()  # at once (cancelled): no timer thread outlives the compile

    def compiling_notice(self) -> None:
        """Said once, on rank 0, when a loop takes long to be ready: it is being compiled."""

    def compile(self, lf: LoopFunc) -> Callable[..., Any]:
        self.bind_helpers()
        return _rebind(lf.func, self.ns)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name}

    def bind(self, kinds: dict[str, Any], make: Callable[[str, Any, list[Any]], Any]) -> None:
        """Set ``C.<Name>`` to ``make(symbol, return type, argument types)`` for every function
        of :data:`SIGNATURES` (and :data:`LIBC`), with the types of ``kinds``; an optional
        one that ``make`` cannot find (raises LookupError) stays unbound (as one the test
        hook :func:`beff.core.testhooks.hidden_mpi` names)."""
        hidden = testhooks.hidden_mpi()
        for name, sig in {**SIGNATURES, **LIBC}.items():
            ret, args = sig.split(":")
            try:
                if name in hidden:
                    raise LookupError(name)
                fn = make(name if name in LIBC else "MPI_" + name, kinds[ret],
                          [kinds[a] for a in args])
            except LookupError:
                if name not in OPTIONAL and name not in LIBC:
                    raise
                continue
            setattr(self.ns, name, fn)

    def bind_helpers(self) -> None:
        """Make every registered :func:`helper` callable as ``C.<name>`` (before a compile)."""
        for name, func in HELPERS.items():
            if not hasattr(self.ns, name):
                setattr(self.ns, name, self.helper(_rebind(func, self.ns)))

    def helper(self, func: Callable[..., Any]) -> Callable[..., Any]:
        return func


class PythonBackend(Backend):
    """Loops run in the interpreter; each C call goes through ctypes."""

    name = "python"

    def __init__(self) -> None:
        super().__init__()
        lib = _library()
        # Pointers and Open MPI's pointer handles as ssize_t: ctypes converts numpy ints to it.
        hw = ctypes.c_int if handle_size() == 4 else ctypes.c_ssize_t
        kinds = {"p": ctypes.c_ssize_t, "i": ctypes.c_int, "h": hw, "d": ctypes.c_double,
                 "a": ctypes.c_ssize_t, "f": ctypes.c_ssize_t, "o": ctypes.c_int64}

        def make(symbol: str, ret: Any, args: list[Any]) -> Any:
            try:
                fn = getattr(lib, symbol)
            except AttributeError:
                raise LookupError(symbol) from None
            fn.restype, fn.argtypes = ret, args
            return fn

        self.bind(kinds, make)


def numba_versions() -> str:
    """numba's and llvmlite's versions, from their installed metadata (numba itself is not
    imported); ImportError when numba is not installed."""
    from beff.core.versions import dist_version

    numba, llvmlite = dist_version("numba"), dist_version("llvmlite")
    if numba is None or llvmlite is None:
        raise ImportError(f"{'numba' if numba is None else 'llvmlite'} is not installed")
    return f"{numba} llvmlite-{llvmlite}"


def cache_key(versions: str) -> str:
    """What a compiled loop depends on besides its source."""
    MPI = _mpi.mpi()
    parts = [library_path(), MPI.Get_library_version(), str(handle_size()), versions,
             sys.version.split()[0], CACHE_FORMAT]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def cache_dir(versions: str) -> Path | None:
    """The per-library cache directory, or None when it cannot be used (nothing is cached).

    ``BEFF_CACHE_DIR`` overrides the root (default: ``$XDG_CACHE_HOME/beff`` or ~/.cache/beff).
    """
    root = os.environ.get("BEFF_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "beff")
    path = Path(root) / "numba" / cache_key(versions)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


def _skip_blas_probe() -> None:
    """Load numba's array registry without its probe for scipy's BLAS.

    numba imports ``numba.np.arraymath`` before the first loop is compiled or loaded from
    the cache, and that module imports scipy.linalg (0.25 s) to learn whether np.dot can
    compile. The loops use no BLAS; scipy stays importable for everything else.
    """
    if "scipy" in sys.modules or "numba.np.arraymath" in sys.modules:
        return
    sys.modules["scipy"] = None  # type: ignore[assignment]  # import scipy raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules["scipy"]


class JitBackend(Backend):
    """Loops compiled by numba; C calls are direct calls into libmpi.

    A loop compiled once is kept as machine code (:mod:`beff.core.objcache`) and later
    processes load it without importing numba; numba is imported only to compile.
    """

    name = "jit"

    def __init__(self) -> None:
        super().__init__()
        from beff.core import objcache

        self.versions = numba_versions()
        binding = objcache.llvm()
        lib = _library()

        def make(symbol: str, ret: str, args: list[str]) -> tuple[str, str, list[str]]:
            try:
                address = ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value
            except AttributeError:
                address = None
            if address is None:
                raise LookupError(f"{symbol} not found in {library_path()}")
            binding.add_symbol(symbol, address)  # resolved by name, so kept code links too
            return symbol, ret, args

        self.bind({k: k for k in "pihdafo"}, make)
        self.cache = cache_dir(self.versions)
        self.host = objcache.host()
        self.numba: Any = None  # imported when a loop must be compiled
        self.nns = types.ModuleType("beff_mpi_numba")  # the bindings numba compiles against
        self.compiled_now = 0

    def _numba(self) -> Any:
        """numba, imported and readied to compile (once)."""
        if self.numba is None:
            import numba
            import numba.core.config
            from numba import types as nt

            _skip_blas_probe()
            hw = nt.int32 if handle_size() == 4 else nt.intp
            kinds: dict[str, Any] = {"p": nt.intp, "i": nt.int32, "h": hw, "d": nt.float64,
                                     "a": nt.intp, "f": nt.intp, "o": nt.int64}
            for name, bound in vars(self.ns).items():
                if isinstance(bound, tuple):
                    symbol, ret, args = bound
                    setattr(self.nns, name, nt.ExternalFunction(
                        symbol, kinds[ret](*[kinds[a] for a in args])))
            if self.cache is not None:
                # Read when a dispatcher is created, so before any loop is compiled.
                setattr(numba.core.config, "CACHE_DIR", str(self.cache))  # noqa: B010
            self.numba = numba
        return self.numba

    def compiling_notice(self) -> None:
        global _told
        if _told or _mpi.mpi().COMM_WORLD.Get_rank() != 0:
            return
        _told = True
        where = f"; later runs load them from {self.cache}" if self.cache else ""
        sys.stderr.write("beff: compiling this suite's timed loops with numba, the first "
                         f"time it runs with this MPI library and numba version{where}\n")
        sys.stderr.flush()

    def compile(self, lf: LoopFunc) -> Callable[..., Any]:
        from beff.core import objcache

        path = None
        if self.cache is not None:
            path = self.cache / "objects" / objcache.object_name(
                lf.func, _helper_files(lf.func), lf.params, self.host, self.versions)
            found = self._load(lf, path)
            if found is not None:
                return found
            # One process compiles a loop; the others (ranks of this job, other jobs on the
            # node or on a shared cache) wait for it and load what it kept.
            with self.noticed(), objcache.exclusive(path):  # rank 0 may wait for another
                found = self._load(lf, path)  # kept while this process waited
                return found if found is not None else self._build(lf, path)
        return self._build(lf, None)

    def _load(self, lf: LoopFunc, path: Path) -> Callable[..., Any] | None:
        """The loop's kept machine code from ``path``, or None (absent or unusable)."""
        from beff.core import objcache

        try:
            loaded = objcache.load(path, lf.params)
        except Exception:  # noqa: BLE001 - any unusable object is compiled again
            loaded = None
        if loaded is None:
            return None
        address, blob, engine = loaded
        return objcache.caller(address, lf.params, blob["results"], blob["tuple"],
                               handle_size(), engine, lf.func.__name__)

    def _build(self, lf: LoopFunc, path: Path | None) -> Callable[..., Any]:
        """Compile the loop with numba, and keep its machine code at ``path``."""
        from beff.core import objcache

        hb = handle_size()
        name = lf.func.__name__
        with self.noticed():
            jitted = self._compile(lf, hb)
            self.compiled_now += 1
            try:
                address, blob, keep = objcache.build(self.numba, jitted, lf.func, lf.params, hb)
            except Exception:  # noqa: BLE001 - numba internals it uses moved: numba's own call
                return jitted  # type: ignore[no-any-return]
        if path is not None:
            objcache.save(path, blob)
        return objcache.caller(address, lf.params, blob["results"], blob["tuple"], hb, keep,
                               name)

    def _compile(self, lf: LoopFunc, hb: int) -> Any:
        """numba's compiled loop (its dispatcher), for the loop's parameter types."""
        numba = self._numba()
        for hname, func in HELPERS.items():
            if not hasattr(self.nns, hname):
                setattr(self.nns, hname, numba.njit(cache=self.cache is not None,
                                                    nogil=True)(_rebind(func, self.nns)))
        handles = "int32[::1]" if hb == 4 else "int64[::1]"
        sig = "(" + ", ".join(handles if p == "handles" else p for p in lf.params) + ",)"
        # nogil: a loop may wait in MPI for long (for a stopped rank, forever); the watchdog
        # thread must still run.
        return numba.njit(sig, cache=self.cache is not None, nogil=True)(
            _rebind(lf.func, self.nns))

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "numba": self.versions.split()[0],
                "cache_dir": str(self.cache) if self.cache else "",
                "compiled_now": self.compiled_now}


def _helper_files(func: Callable[..., Any]) -> list[str]:
    """The source files of the helpers a loop calls (as ``C.<name>``), directly or not."""
    seen: dict[str, Callable[..., Any]] = {}
    todo = [func.__code__]
    while todo:
        code = todo.pop()
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        for n in code.co_names:
            if n in HELPERS and n not in seen:
                seen[n] = HELPERS[n]
                todo.append(HELPERS[n].__code__)
    return [f.__code__.co_filename for f in seen.values()]


C: Any = None  # each backend substitutes its bindings (see _rebind)


@loop
def barrier_loop(n: int, comm: int) -> tuple[float, int]:
    """n MPI_Barrier calls timed as one loop (also the backend's self-test)."""
    err = 0
    t0 = C.Wtime()
    for _ in range(n):
        err |= C.Barrier(comm)
    return C.Wtime() - t0, err


@helper
def window_wait(start: float, share: int) -> int:
    """--sync window, before a call: 1 if this rank is already past ``start`` (the local time
    of the call's common start: the call is late), else 0 once MPI_Wtime has reached it,
    spinning (with sched_yield where ``share``: more ranks than CPUs on the node)."""
    if C.Wtime() > start:
        return 1
    while C.Wtime() < start:
        if share:
            C.sched_yield()
    return 0


@windowed_of(barrier_loop)
def barrier_window_loop(n: int, comm: int, alpha: float, beta: float, t0: float,
                        width: float, ends: F64Array, late: I64Array,
                        share: int) -> tuple[float, int]:
    """barrier_loop under the window start policy: each MPI_Barrier at its common start."""
    err = 0
    for i in range(n):
        late[i] = C.window_wait((t0 + i * width - alpha) / beta, share)
        err |= C.Barrier(comm)
        ends[i] = alpha + beta * C.Wtime() - (t0 + i * width)
    return 0.0, err


@per_iteration_of(barrier_loop)
def barrier_iter_loop(n: int, comm: int, times: F64Array, stride: int,
                      start: int) -> tuple[float, int]:
    """barrier_loop, each barrier's time recorded (every stride-th; --per-iteration)."""
    err = 0
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        err |= C.Barrier(comm)
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    return C.Wtime() - t0, err


_ACTIVE: Backend | None = None


def compile_only(*loops: LoopFunc) -> None:
    """Compile (or load from the cache) loops now, without running them."""
    for lf in loops:
        active().ready(lf)


def active() -> Backend:
    """The selected backend (python until :func:`select` has run)."""
    global _ACTIVE
    if _ACTIVE is None:
        _ACTIVE = PythonBackend()
    return _ACTIVE


def select(choice: str = "auto") -> tuple[Backend, str | None]:
    """Activate a backend; ``auto`` tries jit and falls back to python with a one-line reason.

    The jit backend must pass a self-test first: compile and run a barrier loop on
    MPI_COMM_SELF.
    """
    global _ACTIVE
    if choice not in BACKENDS:
        raise ValueError(f"unknown backend {choice!r}")
    warning = None
    if choice == "python":
        _ACTIVE = PythonBackend()
        return _ACTIVE, None
    try:
        backend: Backend = JitBackend()
        elapsed, err = backend.run(barrier_loop, (3, handle(_mpi.mpi().COMM_SELF)))
        if err != 0 or not 0.0 <= elapsed < 60.0:
            raise RuntimeError(f"self-test returned ({elapsed}, {err})")
    except Exception as exc:  # noqa: BLE001 - any failure means: no compiled loops
        if choice == "jit":
            raise
        warning = (f"compiled loops unavailable ({type(exc).__name__}: {exc}); "
                   "running the python backend, whose small-message times are larger")
        backend = PythonBackend()
    _ACTIVE = backend
    return backend, warning


class MPICallError(RuntimeError):
    """A C call inside a timed loop returned an error code."""


def check(err: int, where: str) -> None:
    """Raise if a timed loop reported a failed MPI call (codes are OR-ed together)."""
    if err:
        raise MPICallError(f"MPI call failed in {where} (error code {err})")


@loop
def wtime_loop(n: int) -> tuple[float, int]:
    """n MPI_Wtime calls."""
    t0 = C.Wtime()
    for _ in range(n):
        C.Wtime()
    return C.Wtime() - t0, 0


@loop
def send_null_loop(n: int, buf: int, dtype: int, dest: int, comm: int) -> tuple[float, int]:
    """n blocking 1-byte MPI_Send calls to MPI_PROC_NULL (the cost of a call that moves no
    data)."""
    err = 0
    t0 = C.Wtime()
    for _ in range(n):
        err |= C.Send(buf, 1, dtype, dest, 1, comm)
    return C.Wtime() - t0, err


def measure_overhead(loops: int = 20000) -> dict[str, Any]:
    """The timed loops' own cost per call, in seconds, on this rank, with the active backend.

    * ``wtime``: one MPI_Wtime call from a timed loop;
    * ``send_proc_null``: a blocking 1-byte MPI_Send to MPI_PROC_NULL from a timed loop;
    * ``compile``: seconds spent compiling or loading loops so far.
    """
    MPI = _mpi.mpi()
    backend = active()
    buf = bytearray(1)
    address = ctypes.addressof((ctypes.c_char * 1).from_buffer(buf))
    n = loops if backend.name == "jit" else loops // 10
    t_wtime, _ = wtime_loop(n)
    t_send, err = send_null_loop(n, address, handle(MPI.BYTE), int(MPI.PROC_NULL),
                                 handle(MPI.COMM_SELF))
    check(err, "the overhead measurement")
    return {"backend": backend.name, "wtime": t_wtime / n, "send_proc_null": t_send / n,
            "wtick": float(MPI.Wtick()), "compile": backend.compile_seconds}


def overhead_summary(per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over ranks of each numeric overhead figure (the backend name is kept)."""
    import statistics  # np.median would import numpy.ma: 9 ms of a run's start

    return {k: (float(statistics.median([d[k] for d in per_rank]))
                if isinstance(v, (int, float)) else v) for k, v in per_rank[0].items()}


def start(choice: str) -> tuple[dict[str, Any] | None, str | None]:
    """Select the backend on every rank (the same one everywhere), measure its overhead.

    Collective over MPI_COMM_WORLD. Returns, on rank 0, the overhead summary and the warning
    to print when ``auto`` fell back to python; None elsewhere.
    """
    world = _mpi.mpi().COMM_WORLD
    with _mpi.unguarded():  # importing numba, loading or compiling: local work
        backend, warning = select(choice)
    _mpi.injected_stop("backend")
    # a buffer reduction: an object one would keep the watchdogs from running while it waits
    if not _mpi.allreduce_number(world, backend.name == "jit", _mpi.mpi().LAND) and \
            backend.name == "jit":
        backend, _ = select("python")
    warnings = world.gather(warning, root=0)
    with _mpi.unguarded():
        overhead = measure_overhead()
    overheads = world.gather(overhead, root=0)
    if overheads is None or warnings is None:
        return None, None
    first = next((w for w in warnings if w), None)
    return overhead_summary(overheads), first
