# mypy: disable-error-code="no-any-return"
"""The compiled loops of the MPI-IO benchmarks: every timed ``MPI_File_*`` call runs here.

A loop keeps going after a failed call (it keeps the first error code and makes every call
its peers make, collective ones included), so that a full disk on one rank never leaves the
others waiting in a collective; the kernel then agrees on the failure with the whole group.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from beff.core.capi import F32Array, F64Array, I64Array, U8Array, compile_only, helper, loop

C: Any = None  # the C bindings, substituted by the backend

WRITE, READ = 0, 1
# File positioning: individual pointer (over a tiled view), explicit offsets, shared pointer.
INDV, EXPL, SHARED = 0, 1, 2


@helper
def first_error(err: int, rc: int) -> int:
    """The first non-zero of two MPI error codes."""
    return err if err != 0 else rc


@helper
def io_call(rw: int, pos: int, coll: int, fh: int, off: int, buf: int, count: int, dtype: int,
            st: int) -> int:
    """One blocking transfer: MPI_File_{write,read}[_at][_all], _shared or _ordered."""
    if rw == WRITE:
        if pos == EXPL:
            if coll:
                return C.File_write_at_all(fh, off, buf, count, dtype, st)
            return C.File_write_at(fh, off, buf, count, dtype, st)
        if pos == SHARED:
            if coll:
                return C.File_write_ordered(fh, buf, count, dtype, st)
            return C.File_write_shared(fh, buf, count, dtype, st)
        if coll:
            return C.File_write_all(fh, buf, count, dtype, st)
        return C.File_write(fh, buf, count, dtype, st)
    if pos == EXPL:
        if coll:
            return C.File_read_at_all(fh, off, buf, count, dtype, st)
        return C.File_read_at(fh, off, buf, count, dtype, st)
    if pos == SHARED:
        if coll:
            return C.File_read_ordered(fh, buf, count, dtype, st)
        return C.File_read_shared(fh, buf, count, dtype, st)
    if coll:
        return C.File_read_all(fh, buf, count, dtype, st)
    return C.File_read(fh, buf, count, dtype, st)


@helper
def io_post(rw: int, pos: int, fh: int, off: int, buf: int, count: int, dtype: int,
            req: int) -> int:
    """Start one nonblocking transfer: MPI_File_i{write,read}[_at|_shared]."""
    if rw == WRITE:
        if pos == EXPL:
            return C.File_iwrite_at(fh, off, buf, count, dtype, req)
        if pos == SHARED:
            return C.File_iwrite_shared(fh, buf, count, dtype, req)
        return C.File_iwrite(fh, buf, count, dtype, req)
    if pos == EXPL:
        return C.File_iread_at(fh, off, buf, count, dtype, req)
    if pos == SHARED:
        return C.File_iread_shared(fh, buf, count, dtype, req)
    return C.File_iread(fh, buf, count, dtype, req)


@helper
def io_begin(rw: int, pos: int, fh: int, off: int, buf: int, count: int, dtype: int) -> int:
    """Begin one split collective: MPI_File_{write,read}{_all,_at_all,_ordered}_begin."""
    if rw == WRITE:
        if pos == EXPL:
            return C.File_write_at_all_begin(fh, off, buf, count, dtype)
        if pos == SHARED:
            return C.File_write_ordered_begin(fh, buf, count, dtype)
        return C.File_write_all_begin(fh, buf, count, dtype)
    if pos == EXPL:
        return C.File_read_at_all_begin(fh, off, buf, count, dtype)
    if pos == SHARED:
        return C.File_read_ordered_begin(fh, buf, count, dtype)
    return C.File_read_all_begin(fh, buf, count, dtype)


@helper
def io_end(rw: int, pos: int, fh: int, buf: int, st: int) -> int:
    """End the split collective that :func:`io_begin` began."""
    if rw == WRITE:
        if pos == EXPL:
            return C.File_write_at_all_end(fh, buf, st)
        if pos == SHARED:
            return C.File_write_ordered_end(fh, buf, st)
        return C.File_write_all_end(fh, buf, st)
    if pos == EXPL:
        return C.File_read_at_all_end(fh, buf, st)
    if pos == SHARED:
        return C.File_read_ordered_end(fh, buf, st)
    return C.File_read_all_end(fh, buf, st)


@helper
def sync_triplet(fh: int, comm: int) -> int:
    """IMB's write completion: MPI_File_sync, MPI_Barrier of the file's group, MPI_File_sync."""
    err = C.File_sync(fh)
    err = C.first_error(err, C.Barrier(comm))
    return C.first_error(err, C.File_sync(fh))


@loop
def io_loop(n: int, rw: int, pos: int, coll: int, nonaggr: int, fh: int, buf: int, count: int,
            dtype: int, off0: int, stride: int, comm: int, st: int) -> tuple[float, int]:
    """n transfers of ``count`` bytes (step i at ``off0 + i*stride`` for explicit offsets),
    timed as one loop. Writes complete with the sync triplet: after every transfer in
    non-aggregate mode, once after the n in aggregate mode. Returns (seconds, first error)."""
    err = 0
    t0 = C.Wtime()
    for i in range(n):
        err = C.first_error(err, C.io_call(rw, pos, coll, fh, off0 + i * stride, buf, count, dtype,
                                       st))
        if rw == WRITE and nonaggr:
            err = C.first_error(err, C.sync_triplet(fh, comm))
    if rw == WRITE and not nonaggr:
        err = C.first_error(err, C.sync_triplet(fh, comm))
    return C.Wtime() - t0, err


@loop
def overlap_loop(n: int, rw: int, pos: int, coll: int, units: int, work: F32Array, fh: int,
                 buf: int, count: int, dtype: int, off0: int, stride: int, comm: int, st: int,
                 reqs: int, hsize: int, nbarr: int) -> tuple[float, float, int]:
    """IMB-IO's overlap pass of n transfers, after ``nbarr`` barriers, timed as one loop.

    Non-collective: start the n nonblocking transfers (``reqs``: room for n requests of
    ``hsize`` bytes), run the CPU kernel n times, MPI_Waitall. Collective: n times the split
    collective's begin, the CPU kernel, its end. Writes then run the sync triplet once.
    Returns (seconds, seconds in the CPU kernel, first error).
    """
    err = 0
    for _ in range(nbarr):
        err = C.first_error(err, C.Barrier(comm))
    cpu = 0.0
    t0 = C.Wtime()
    if coll:
        for i in range(n):
            err = C.first_error(err, C.io_begin(rw, pos, fh, off0 + i * stride, buf, count, dtype))
            tc = C.Wtime()
            C.cpu_exploit(units, work)
            cpu += C.Wtime() - tc
            err = C.first_error(err, C.io_end(rw, pos, fh, buf, st))
    else:
        for i in range(n):
            err = C.first_error(err, C.io_post(rw, pos, fh, off0 + i * stride, buf, count, dtype,
                                           reqs + i * hsize))
        for _ in range(n):
            tc = C.Wtime()
            C.cpu_exploit(units, work)
            cpu += C.Wtime() - tc
        err = C.first_error(err, C.Waitall(n, reqs, st))
    if rw == WRITE:
        err = C.first_error(err, C.sync_triplet(fh, comm))
    return C.Wtime() - t0, cpu, err


@loop
def open_close_loop(n: int, comm: int, name: int, amode: int, info: int, fh: I64Array,
                    buf: int, dtype: int, st: int) -> tuple[float, int]:
    """n times MPI_File_open on the group, a one-byte MPI_File_write, MPI_File_close, timed as
    one loop (``fh``: room for the file handle, a pointer in every MPI)."""
    err = 0
    where = fh.ctypes.data
    t0 = C.Wtime()
    for _ in range(n):
        err = C.first_error(err, C.File_open(comm, name, amode, info, where))
        err = C.first_error(err, C.File_write(fh[0], buf, 1, dtype, st))
        err = C.first_error(err, C.File_close(where))
    return C.Wtime() - t0, err


# b_eff_io's per-pattern timing parts (:func:`beffio_pattern`'s ``out``).
PARTS = ("t_pat", "barrier", "bcast", "sync", "last_io", "last_barrier_bcast")
NPARTS = len(PARTS)
OUT_REPS, OUT_ERRORS, OUT_DEFECTS = NPARTS, NPARTS + 1, NPARTS + 2


@helper
def stamp(r: int, i: int, p: int, a: int) -> float:
    """b_eff_io's stamp of a chunk's first element (its last one gets +5)."""
    return 1e7 * r + 1000.0 * i + 10.0 * p + a + 1


@loop
def beffio_pattern(a: int, rw: int, pos: int, coll: int, fh: int, comm: int, wbuf: F64Array,
                   rbuf: F64Array, L: int, l: int,  # noqa: E741 - the original's names
                   p: int, r_max: int, tp: float, timed: int,
                   a_old: int, check: int, corrupt: int, view: int, disp: int, etype: int,
                   ftype: int, datarep: int, info: int, st: int, flag: U8Array, byte: int,
                   out: F64Array) -> int:
    """One b_eff_io pattern, timed as the original: MPI_Barrier, start the clock, set the view
    (``view``), then calls of ``L`` doubles in chunks of ``l``: writes stamp each chunk's
    first and last double, reads compare them (``a_old``: the access that wrote them) and
    with ``check`` every other double too. Time-driven (``timed``, types 0-2 writing): after
    each call MPI_Barrier, and rank 0 decides whether one more fits into ``tp`` seconds and
    broadcasts it; otherwise exactly ``r_max`` calls. Writes end with MPI_Barrier and
    MPI_File_sync; then MPI_Barrier and stop the clock. ``out`` receives the parts (PARTS),
    the repetitions, stamp errors and check defects; returns the first MPI error."""
    err = C.Barrier(comm)
    t_pat = -C.Wtime()
    t_barrier = 0.0
    t_bcast = 0.0
    t_sync = 0.0
    t_last_io = 0.0
    t_lbb = 0.0
    errors = 0
    defects = 0
    if view:
        err = C.first_error(err, C.File_set_view(fh, disp, etype, ftype, datarep, info))
    wp = wbuf.ctypes.data
    rp = rbuf.ctypes.data
    step = max(l, 1)
    r = 0
    conti = 1
    while True:
        t_last_io = -C.Wtime()
        if rw == WRITE:
            for i in range(0, L, step):
                v = C.stamp(r, i, p, a)
                wbuf[i] = v
                wbuf[i + l - 1] = v + 5
            if corrupt and l > 2:
                wbuf[1] = 0.5  # the test hook's defect: not a stamp, so only --check sees it
            rc = C.io_call(WRITE, pos, coll, fh, 0, wp, L, etype, st)
            if corrupt and l > 2:
                wbuf[1] = -2.0
        else:
            rc = C.io_call(READ, pos, coll, fh, 0, rp, L, etype, st)
            for i in range(0, L, step):
                v = C.stamp(r, i, p, a_old)
                if rbuf[i] != v or rbuf[i + l - 1] != v + 5:
                    errors += 1
            if check:
                for j in range(L):
                    k = j % step
                    if k != 0 and k != l - 1 and rbuf[j] != -2.0 * j:
                        defects += 1
        err = C.first_error(err, rc)
        r += 1
        t = C.Wtime()
        t_last_io += t
        t_lbb = -t
        if timed:
            t_barrier -= t
            err = C.first_error(err, C.Barrier(comm))
            t = C.Wtime()
            t_barrier += t
            t_bcast -= t
            flag[0] = 1 if (t + t_pat) * (r + 1) / r <= tp else 0  # rank 0's decides
            err = C.first_error(err, C.Bcast(flag.ctypes.data, 1, byte, 0, comm))
            t = C.Wtime()
            t_bcast += t
            conti = flag[0]
        t_lbb += t
        if (timed and conti == 0) or (not timed and r >= r_max):
            break
    if rw == WRITE:
        t_barrier -= C.Wtime()
        err = C.first_error(err, C.Barrier(comm))
        t = C.Wtime()
        t_barrier += t
        t_sync -= t
        err = C.first_error(err, C.File_sync(fh))
        t_sync += C.Wtime()
    t_barrier -= C.Wtime()
    err = C.first_error(err, C.Barrier(comm))
    t = C.Wtime()
    t_barrier += t
    t_pat += t
    if rw == WRITE:  # the buffer's plain content back, for the next pattern's --check
        for i in range(0, L, step):
            wbuf[i] = -2.0 * i
            wbuf[i + l - 1] = -2.0 * (i + l - 1)
    out[0] = t_pat
    out[1] = t_barrier
    out[2] = t_bcast
    out[3] = t_sync
    out[4] = t_last_io
    out[5] = t_lbb
    out[OUT_REPS] = r
    out[OUT_ERRORS] = errors
    out[OUT_DEFECTS] = defects
    return err


@loop
def beffio_open(comm: int, fcomm: int, name: int, amode: int, info: int,
                fh: I64Array) -> tuple[float, int]:
    """MPI_File_open between two barriers of the partition, timed (b_eff_io's t_op)."""
    err = C.Barrier(comm)
    t = -C.Wtime()
    err = C.first_error(err, C.File_open(fcomm, name, amode, info, fh.ctypes.data))
    err = C.first_error(err, C.Barrier(comm))
    return t + C.Wtime(), err


@loop
def beffio_close(comm: int, fh: I64Array) -> tuple[float, int]:
    """MPI_File_close and a barrier of the partition, timed (b_eff_io's t_cl)."""
    t = -C.Wtime()
    err = C.File_close(fh.ctypes.data)
    err = C.first_error(err, C.Barrier(comm))
    return t + C.Wtime(), err


def precompile() -> None:
    """Compile (or load from the cache) every loop now, with zero iterations and no MPI call,
    so that compiling is not charged to the first benchmark's -time budget."""
    work = np.zeros(120, np.float32)
    io_loop(0, READ, INDV, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    overlap_loop(0, READ, INDV, 1, 0, work, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0)
    open_close_loop(0, 0, 0, 0, 0, np.zeros(1, np.int64), 0, 0, 0)


def precompile_beffio() -> None:
    """The same for b_eff_io's loops (they cannot run without MPI calls: compile only)."""
    compile_only(beffio_pattern, beffio_open, beffio_close)
