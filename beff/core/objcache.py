"""Compiled timed loops kept as machine code, and loaded again without numba.

numba reads its own cache back only through its compiler: importing numba and readying its
target costs a process 0.5-0.7 s, more than many a whole benchmark. So, beside numba's
cache, each loop is also kept as one object file: a C-callable function (a numba ``cfunc``)
that calls the compiled loop and stores its results through pointers. A later process loads
that object with llvmlite alone (MCJIT links it against libmpi's symbols, registered by
:mod:`beff.core.capi`) and calls it through ctypes, which drops the interpreter lock for the
call, as ``nogil`` did. The loop's machine code is numba's, compiled once: only the loading
differs, never what runs between the two MPI_Wtime calls.

An object depends on the loop's source file and those of the helpers it may call, on the CPU
(name and features: a shared cache serves unlike nodes), numba's and llvmlite's versions and
:data:`FORMAT`; its file name holds a hash of all of these, and the directory is already
keyed by the MPI library (:func:`beff.core.capi.cache_key`). numba's runtime helpers that
compiled code may call on an error path (raising ZeroDivisionError, say) come from numba's C
extension modules, loaded without numba's Python package.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import fcntl
import glob
import hashlib
import importlib.machinery
import importlib.util
import os
import pickle
import re
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from beff.core import testhooks

FORMAT = "1"
# How long a process waits for another that compiles the same loop before it compiles the
# loop itself (one loop takes 1-3 s to compile on a quiet node).
LOCK_WAIT_S = 10.0
ARRAY_DTYPES = {"uint8": np.uint8, "float32": np.float32, "float64": np.float64,
                "int32": np.int32, "int64": np.int64}


class ObjectLoadError(RuntimeError):
    """A kept object cannot be used here (it is then compiled again)."""


# ----------------------------------------------------------------------------- signatures
def arg_kinds(params: Sequence[str], handle_bytes: int) -> list[tuple[str, Any, int]]:
    """Each loop parameter as (kind, numpy dtype, dimensions): ``i`` int64, ``d`` double,
    ``a`` a C-contiguous array (passed as its address and its shape)."""
    out: list[tuple[str, Any, int]] = []
    for p in params:
        if p == "int64":
            out.append(("i", None, 0))
        elif p == "float64":
            out.append(("d", None, 0))
        elif p == "handles":
            out.append(("a", np.int32 if handle_bytes == 4 else np.int64, 1))
        else:
            m = re.fullmatch(r"(\w+)\[(.*)\]", p)
            if m is None or m.group(1) not in ARRAY_DTYPES:
                raise ValueError(f"unsupported loop parameter type {p!r}")
            out.append(("a", ARRAY_DTYPES[m.group(1)], m.group(2).count(",") + 1))
    return out


def result_kinds(func: Callable[..., Any]) -> tuple[list[str], bool]:
    """The loop's results, each ``float`` or ``int``, from its return annotation, and
    whether it returns a tuple."""
    ann = func.__annotations__.get("return", "int")
    ann = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
    m = re.fullmatch(r"\s*tuple\[(.*)\]\s*", ann)
    names = [s.strip() for s in (m.group(1) if m else ann).split(",")]
    if not names or any(n not in ("float", "int") for n in names):
        raise ValueError(f"unsupported loop return annotation {ann!r}")
    return names, m is not None


def object_name(func: Callable[..., Any], helper_files: Sequence[str], params: Sequence[str],
                host: str, versions: str) -> str:
    """The kept object's file name: the loop's name and a hash of all it depends on."""
    h = hashlib.sha256()
    files = sorted({func.__code__.co_filename, *helper_files})
    for f in files:
        try:
            st = os.stat(f)
            h.update(f"{f}\0{st.st_mtime_ns}\0{st.st_size}\0".encode())
        except OSError:
            h.update(f"{f}\0?\0".encode())
    h.update("\0".join([func.__module__, func.__qualname__, *params, host, versions,
                        FORMAT]).encode())
    return f"{func.__module__}.{func.__qualname__}-{h.hexdigest()[:20]}.obj"


# ----------------------------------------------------------------------------- building
def wrapper_source(params: Sequence[str], results: list[str], is_tuple: bool,
                   handle_bytes: int) -> str:
    """Python source of the cfunc that calls the loop ``f``: arrays come as (address, shape),
    results go to ``fout`` (floats) and ``iout`` (ints); ``iout[n]`` stays 1 when the loop
    raised (numba's cfunc then only prints the exception)."""
    kinds = arg_kinds(params, handle_bytes)
    cargs: list[str] = []
    call: list[str] = []
    for k, (kind, _, dims) in enumerate(kinds):
        if kind == "a":
            shape = [f"a{k}_{d}" for d in range(dims)]
            cargs += [f"a{k}", *shape]
            call.append(f"carray(a{k}, ({', '.join(shape)},))")
        else:
            cargs.append(f"a{k}")
            call.append(f"a{k}")
    n_int = results.count("int")
    lines = [f"def wrapper({', '.join([*cargs, 'fout', 'iout'])}):",
             f"    iout[{n_int}] = 1",
             f"    r = f({', '.join(call)})"]
    fi = ii = 0
    for j, kind in enumerate(results):
        value = f"r[{j}]" if is_tuple else "r"
        if kind == "float":
            lines.append(f"    fout[{fi}] = {value}")
            fi += 1
        else:
            lines.append(f"    iout[{ii}] = {value}")
            ii += 1
    lines += [f"    iout[{n_int}] = 0", "    return 0"]
    return "\n".join(lines) + "\n"


def build(numba: types.ModuleType, jitted: Any, func: Callable[..., Any],
          params: Sequence[str], handle_bytes: int) -> tuple[int, dict[str, Any], Any]:
    """Compile the cfunc around the compiled loop ``jitted``; return its address, the object
    to keep (see :func:`save`) and the cfunc (to keep alive)."""
    from numba import types as nt

    ptr: Callable[[Any], Any] = nt.CPointer
    results, is_tuple = result_kinds(func)
    kinds = arg_kinds(params, handle_bytes)
    sig: list[Any] = []
    for kind, dtype, dims in kinds:
        if kind == "a":
            sig += [ptr(numba.from_dtype(np.dtype(dtype)))] + [nt.intp] * dims
        else:
            sig.append(nt.int64 if kind == "i" else nt.float64)
    sig += [ptr(nt.float64), ptr(nt.int64)]
    src = wrapper_source(params, results, is_tuple, handle_bytes)
    ns: dict[str, Any] = {"f": jitted, "carray": numba.carray}
    exec(compile(src, f"<beff wrapper of {func.__qualname__}>", "exec"), ns)  # noqa: S102
    cf = numba.cfunc(nt.int32(*sig), nogil=True)(ns["wrapper"])
    lib = cf._library
    module = lib._final_module
    undefined = sorted({f.name for f in module.functions if f.is_declaration
                        and not f.name.startswith("llvm.")}
                       | {g.name for g in module.global_variables if g.is_declaration})
    blob = {"format": FORMAT, "symbol": cf.native_name, "undefined": undefined,
            "results": results, "tuple": is_tuple, "params": list(params),
            "object": lib.serialize_using_object_code()[2][0]}
    return int(cf.address), blob, cf


@contextlib.contextmanager
def exclusive(path: Path, wait_s: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path``'s lock file (``<path>.lock``, kept): the one
    process that gets it first compiles, the others wait here and then load what it kept.

    The wait is bounded (``wait_s``): a holder that takes longer (a stopped rank, a very
    loaded node) only costs a compile of one's own, and a stopped rank is then caught by the
    watchdog of the next MPI call, not waited for here. Where the file system has no locks
    (some network mounts), nothing is held: every rank compiles, as without a lock, and
    :func:`save` stays atomic."""
    if wait_s is None:
        wait_s = testhooks.lock_wait() or LOCK_WAIT_S
    fd = -1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait_s
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break  # compile without it
                time.sleep(delay)
                delay = min(0.1, 2 * delay)
    except OSError:
        pass
    try:
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # releases the lock, if it was held


def save(path: Path, blob: dict[str, Any]) -> None:
    """Write atomically: every rank of a job may compile the same loop at once."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(blob, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written only costs the next run a compile


# ----------------------------------------------------------------------------- loading
_llvm: Any = None
_target: Any = None
_providers: list[dict[str, int]] | None = None


def llvm() -> Any:
    """llvmlite's binding layer, its native target readied (once)."""
    global _llvm, _target
    if _llvm is None:
        import llvmlite.binding as binding

        binding.initialize_native_target()
        binding.initialize_native_asmprinter()
        _target = binding.Target.from_default_triple().create_target_machine(jit=True)
        _llvm = binding
    return _llvm


def host() -> str:
    """The CPU the objects are compiled for (numba compiles for the host's own)."""
    binding = llvm()
    return f"{binding.get_host_cpu_name()}:{binding.get_host_cpu_features().flatten()}"


def _numba_extension(numba_dir: str, name: str) -> types.ModuleType:
    """One of numba's C extension modules, loaded without running numba/__init__.py (and
    registered under its name, so that a later ``import numba`` uses this very one)."""
    if name in sys.modules:
        return sys.modules[name]
    rel = name.split(".", 1)[1].replace(".", os.sep)
    found = glob.glob(os.path.join(numba_dir, rel + ".*.so")) + glob.glob(
        os.path.join(numba_dir, rel + ".*.pyd"))
    if not found:
        raise ObjectLoadError(f"{name} not found in {numba_dir}")
    loader = importlib.machinery.ExtensionFileLoader(name, found[0])
    spec = importlib.util.spec_from_file_location(name, found[0], loader=loader)
    if spec is None:
        raise ObjectLoadError(f"{name} cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def _symbol_providers() -> list[dict[str, int]]:
    """Addresses of the symbols numba's compiled code may use besides libmpi's, as numba
    registers them: its C helpers (``numba_*``), its runtime (``NRT_*``), exception types
    (``PyExc_*``) and None."""
    global _providers
    if _providers is None:
        spec = importlib.util.find_spec("numba")
        if spec is None or not spec.submodule_search_locations:
            raise ObjectLoadError("numba is not installed")
        where = list(spec.submodule_search_locations)[0]
        table: dict[str, int] = {"_Py_NoneStruct": id(None)}
        helperlib = _numba_extension(where, "numba._helperlib")
        for mod in (helperlib, _numba_extension(where, "numba._dynfunc")):
            table.update({"numba_" + k: v for k, v in mod.c_helpers.items()})
        table.update(helperlib.c_helpers)  # the C math functions, under their own names
        nrt = _numba_extension(where, "numba.core.runtime._nrt_python")
        table.update({(k if k.startswith("_") else "NRT_" + k): v
                      for k, v in nrt.c_helpers.items()})
        for obj in vars(builtins).values():
            if isinstance(obj, type) and issubclass(obj, BaseException):
                table[f"PyExc_{obj.__name__}"] = id(obj)
        _providers = [table]
    return _providers


def _resolve(name: str) -> None:
    binding = llvm()
    if binding.address_of_symbol(name):
        return
    for table in _symbol_providers():
        if name in table:
            binding.add_symbol(name, table[name])
            return
    for lib in (ctypes.pythonapi, ctypes.CDLL(None)):
        try:
            address = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except AttributeError:
            continue
        if address:
            binding.add_symbol(name, address)
            return
    raise ObjectLoadError(f"symbol {name} unresolved")


def load(path: Path, params: Sequence[str]) -> tuple[int, dict[str, Any], Any] | None:
    """The kept object at ``path`` linked into this process: (the wrapper's address, the
    blob, the engine to keep alive); None when there is none. Raises ObjectLoadError when it
    cannot be used."""
    try:
        with open(path, "rb") as fh:
            blob = pickle.load(fh)  # noqa: S301 - this user's own cache
    except FileNotFoundError:
        return None
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError) as exc:
        raise ObjectLoadError(f"unreadable {path.name}: {exc}") from exc
    if not isinstance(blob, dict) or blob.get("format") != FORMAT or \
            blob.get("params") != list(params):
        raise ObjectLoadError(f"{path.name} is of another format")
    binding = llvm()
    for name in blob["undefined"]:
        _resolve(name)
    engine = binding.create_mcjit_compiler(binding.parse_assembly(""), _target)
    engine.add_object_file(binding.ObjectFileRef.from_data(blob["object"]))
    engine.finalize_object()
    address = engine.get_function_address(blob["symbol"])
    if not address:
        raise ObjectLoadError(f"{blob['symbol']} not found in {path.name}")
    return int(address), blob, engine


# ----------------------------------------------------------------------------- calling
def caller(address: int, params: Sequence[str], results: list[str], is_tuple: bool,
           handle_bytes: int, keep: Any, name: str) -> Callable[..., Any]:
    """A Python callable for the wrapper at ``address``, taking and returning what the loop
    does (numbers and numpy arrays; arrays are checked as numba checked them)."""
    kinds = arg_kinds(params, handle_bytes)
    n_float, n_int = results.count("float"), results.count("int")
    floats = ctypes.c_double * max(1, n_float)
    ints = ctypes.c_int64 * (n_int + 1)
    argtypes: list[Any] = []
    for kind, _, dims in kinds:
        if kind == "a":
            argtypes += [ctypes.c_void_p] + [ctypes.c_ssize_t] * dims
        else:
            argtypes.append(ctypes.c_int64 if kind == "i" else ctypes.c_double)
    argtypes += [ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int64)]
    fn = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
    order = [(kind == "float", results[:j].count(kind)) for j, kind in enumerate(results)]
    arrays = [(k, dtype, dims) for k, (kind, dtype, dims) in enumerate(kinds) if kind == "a"]
    nargs = len(kinds)

    def call(*args: Any) -> Any:
        if len(args) != nargs:
            raise TypeError(f"{name}() takes {nargs} arguments, {len(args)} given")
        cargs: Sequence[Any] = args
        if arrays:
            cargs = list(args)
            for k, dtype, dims in reversed(arrays):  # from the end: positions stay valid
                a = args[k]
                if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.ndim == dims
                        and a.flags.c_contiguous):
                    raise TypeError(f"{name}(): an argument is not a C-contiguous "
                                    f"{np.dtype(dtype).name} array of {dims} dimension(s)")
                cargs[k : k + 1] = [a.__array_interface__["data"][0], *a.shape]
        fout, iout = floats(), ints()  # per call: threads may run one loop at once
        fn(*cargs, fout, iout)
        if iout[n_int]:
            raise RuntimeError(f"the timed loop {name} raised an exception (printed above)")
        values = [fout[k] if is_float else iout[k] for is_float, k in order]
        return tuple(values) if is_tuple else values[0]

    setattr(call, "keep", (fn, keep))  # noqa: B010 - the engine holding the code
    return call
