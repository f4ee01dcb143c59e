"""The kept machine code of timed loops (beff.core.objcache): signatures, names, and a
round trip compile -> keep -> load -> call, with numba but without MPI."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import numpy as np
import pytest

from beff.core import objcache

HB = 4  # MPICH's handle width


def test_parameter_kinds_follow_the_numba_types() -> None:
    kinds = objcache.arg_kinds(["int64", "float64", "uint8[::1]", "int64[:, ::1]", "handles"],
                               HB)
    assert kinds == [("i", None, 0), ("d", None, 0), ("a", np.uint8, 1), ("a", np.int64, 2),
                     ("a", np.int32, 1)]
    assert objcache.arg_kinds(["handles"], 8) == [("a", np.int64, 1)]
    with pytest.raises(ValueError, match="complex128"):
        objcache.arg_kinds(["complex128[::1]"], HB)


def _two(n: int) -> tuple[float, int]:
    return float(n), n


def _one(n: int) -> int:
    return n


def _unit(n: int) -> tuple[int]:
    return (n,)


def test_result_kinds_come_from_the_return_annotation() -> None:
    assert objcache.result_kinds(_two) == (["float", "int"], True)
    assert objcache.result_kinds(_one) == (["int"], False)
    assert objcache.result_kinds(_unit) == (["int"], True)


def test_wrapper_passes_arrays_as_address_and_shape() -> None:
    src = objcache.wrapper_source(["int64", "int64[:, ::1]"], ["float", "int"], True, HB)
    assert "def wrapper(a0, a1, a1_0, a1_1, fout, iout):" in src
    assert "r = f(a0, carray(a1, (a1_0, a1_1,)))" in src
    assert "fout[0] = r[0]" in src and "iout[0] = r[1]" in src
    # the raised-exception flag is set before the call and cleared only after it
    assert src.index("iout[1] = 1") < src.index("r = f(") < src.index("iout[1] = 0")


def test_object_name_changes_with_the_source_file_and_the_host(tmp_path: Path) -> None:
    helper = tmp_path / "helper.py"
    helper.write_text("x = 1\n")
    a = objcache.object_name(_two, [str(helper)], ["int64"], "cpu-a", "v1")
    assert a == objcache.object_name(_two, [str(helper)], ["int64"], "cpu-a", "v1")
    assert a.startswith(f"{__name__}._two-")
    assert a != objcache.object_name(_two, [str(helper)], ["int64"], "cpu-b", "v1")
    assert a != objcache.object_name(_two, [str(helper)], ["int64"], "cpu-a", "v2")
    st = helper.stat()
    os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert a != objcache.object_name(_two, [str(helper)], ["int64"], "cpu-a", "v1")


def _sum_rows(n: int, rows: np.ndarray) -> tuple[float, int]:
    total = 0.0
    for i in range(n):
        total += rows[i % rows.shape[0], 1]
    return total, rows.shape[1]


def _modulo(n: int, d: int) -> int:
    return n % d


def test_kept_object_loads_and_gives_the_same_results(tmp_path: Path) -> None:
    numba = pytest.importorskip("numba")
    params = ["int64", "int64[:, ::1]"]
    jitted = numba.njit("(int64, int64[:, ::1])")(_sum_rows)
    address, blob, keep = objcache.build(numba, jitted, _sum_rows, params, HB)
    rows = np.arange(6, dtype=np.int64).reshape(3, 2)
    built = objcache.caller(address, params, blob["results"], blob["tuple"], HB, keep, "s")
    assert built(4, rows) == (1.0 + 3.0 + 5.0 + 1.0, 2)
    path = tmp_path / "objects" / "s.obj"
    objcache.save(path, blob)
    loaded = objcache.load(path, params)
    assert loaded is not None
    address2, blob2, engine = loaded
    again = objcache.caller(address2, params, blob2["results"], blob2["tuple"], HB, engine,
                            "s")
    assert again(4, rows) == built(4, rows)
    with pytest.raises(TypeError, match="int64 array of 2"):
        again(4, rows.astype(np.int32))
    assert objcache.load(tmp_path / "none.obj", params) is None
    with pytest.raises(objcache.ObjectLoadError):
        objcache.load(path, ["int64"])  # kept for other parameters


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_loop_that_raises_is_an_error_not_a_result() -> None:
    numba = pytest.importorskip("numba")
    jitted = numba.njit("(int64, int64)")(_modulo)
    address, blob, keep = objcache.build(numba, jitted, _modulo, ["int64", "int64"], HB)
    call = objcache.caller(address, ["int64", "int64"], blob["results"], blob["tuple"], HB,
                           keep, "modulo")
    assert call(7, 4) == 3
    with pytest.raises(RuntimeError, match="modulo raised"):
        call(7, 0)


def _held_elsewhere(path: Path) -> bool:
    """Whether another open file holds ``path``'s compile lock (flock: per open file)."""
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_one_compiler_holds_the_lock_and_a_stuck_holder_is_not_waited_for(
        tmp_path: Path) -> None:
    """Inside ``exclusive`` the loop's lock is held (another process waits); when another
    holds it past the bounded wait (a stopped rank), ``exclusive`` goes on without it."""
    path = tmp_path / "objects" / "loop.obj"
    with objcache.exclusive(path):
        assert _held_elsewhere(path)
    assert not _held_elsewhere(path)  # released
    holder = os.open(f"{path}.lock", os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        entered = False
        with objcache.exclusive(path, wait_s=0.2):
            entered = True
            assert _held_elsewhere(path)  # still the holder's, not this one's
        assert entered
    finally:
        os.close(holder)
