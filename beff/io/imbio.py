"""IMB-IO: the 37 MPI-IO benchmarks of IMB 2021.11 (``src_c/IMB_write.c``, ``IMB_read.c``,
``IMB_open_close.c``, ``IMB_init_file.c``), on beff's measuring core.

* **X** (``#bytes``) is one step's data of the whole group. P_ and C_ split it into
  contiguous pieces of 4-byte units, the first ``ceil(X/4) mod N`` ranks one unit more; rank
  r's piece starts at pos1 and is Locsize long. S_ runs on one process (the others wait).
* **Indv**: a shared file with a tiled view (the rank's piece, resized to extent X), the
  individual pointer (MPI_File_write/read; C_: _all). **Expl**: the same layout by explicit
  offsets pos1 + k*X (_at; C_: _at_all). **Shared**: the shared pointer, Locsize per call
  (_shared; C_: _ordered). **Priv** (P_ only): a file per rank, Locsize per step.
* **Timed region**: after two barriers, n transfers timed as one loop; writes end with the
  sync triplet MPI_File_sync, MPI_Barrier, MPI_File_sync, once (aggregate) or after every
  transfer (non-aggregate); t = seconds / n. Reads run in aggregate mode only.
* **I* benchmarks**: t_pure is the blocking pattern above; t_ovrl starts the n nonblocking
  transfers (C_: n split collectives), runs the CPU kernel (calibrated once per process to
  IMB's TARGET_CPU_SECS = 10 ms per call) n times, then waits (and syncs writes); t_CPU is the
  time spent in the kernel. overlap[%] = 100 max(0, min(1, (t_pure + t_CPU - t_ovrl) /
  min(t_pure, t_CPU))), as IMB-IO (IMB-NBC divides by the max).
* **Open_Close**: n times MPI_File_open on the group, a one-byte write, MPI_File_close.

Every run (calibration, timed) starts at the beginning of the file: pointers are reset
outside the timed region, so a file never grows beyond the largest n*X (at most
``-iter``'s overall volume), and reads never pass the end of the data written for them.
Files are made per benchmark, mode and process count, and deleted afterwards (``beff.io.run``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from beff.bench import check
from beff.bench.ctx import Ctx
from beff.bench.registry import (
    AGGREGATE,
    NON_AGGREGATE,
    Kind,
    Metric,
    Runner,
    benchmark,
)
from beff.core import capi, cpu
from beff.core import mpi as _mpi
from beff.core.errors import CollectiveFailure
from beff.io import loops, run
from beff.io.loops import EXPL, INDV, READ, SHARED, WRITE
from beff.results.columns import io_overlap_columns

SUITE = "io"
N_BARR = 2
TARGET_CPU_S = 0.01  # IMB's TARGET_CPU_SECS: one CPU kernel call in the overlap pass

T_OVRL = Metric("t_ovrl", "time per transfer with the CPU kernel between start and wait")
T_PURE = Metric("t_pure", "time per transfer of the blocking pattern")
T_CPU = Metric("t_cpu", "time per transfer spent in the CPU kernel")


@dataclass(frozen=True)
class Access:
    """What one IMB-IO benchmark does: class S/P/C, write or read, blocking or not, and how
    the file is positioned (Indv, Expl, Shared, Priv)."""

    cls: str
    rw: int
    nonblocking: bool
    pos: str

    @property
    def name(self) -> str:
        op = ("I" if self.nonblocking else "") + ("Write" if self.rw == WRITE else "Read")
        return f"{self.cls}_{op}_{self.pos}"

    @property
    def private(self) -> bool:
        """A file per rank (Priv)."""
        return self.pos == "Priv"

    @property
    def positioning(self) -> int:
        return {"Indv": INDV, "Priv": INDV, "Expl": EXPL, "Shared": SHARED}[self.pos]

    @property
    def collective(self) -> int:
        return int(self.cls == "C")


def portion(nbytes: int, nprocs: int, rank: int) -> tuple[int, int]:
    """(pos1, Locsize): rank's contiguous piece of X bytes split in 4-byte units among
    nprocs ranks, the first ``units mod nprocs`` ranks one unit more (IMB_get_rank_portion)."""
    units = (nbytes + 3) // 4
    base, extra = divmod(units, nprocs)
    start = rank * base + min(rank, extra)
    mine = base + (1 if rank < extra else 0)
    pos1 = min(4 * start, nbytes)
    return pos1, min(4 * (start + mine), nbytes) - pos1


def content(offset: int, nbytes: int) -> np.ndarray:
    """The bytes a read benchmark's file holds at ``offset`` (a function of the position)."""
    return ((np.arange(nbytes, dtype=np.int64) + offset) % 251 + 1).astype(np.uint8)


def steps_volume(ctx: Ctx, sizes: list[int], private: bool = False) -> int:
    """The largest n*X of the sizes (IMB's n0 rule): the bytes one file needs in one mode;
    for a private file, n times rank 0's share of X."""
    cfg = ctx.cfg
    per = cfg.options.msgs_nonaggr if ctx.mode == NON_AGGREGATE else cfg.options.msgspersample
    overall = cfg.options.overall_vol_mib << 20

    def step(x: int) -> int:
        return portion(x, ctx.size, 0)[1] if private else x

    return int(max([min(per, max(1, overall // x)) * step(x) for x in sizes if x > 0] or [0]))


@dataclass
class BenchFile:
    """The benchmark's file for one mode and process count, as this rank opens it."""

    path: Path
    private: bool
    cached: bool


def _file_setup(bench: str, rw: int, private: bool = False,
                volume: Callable[[Ctx, list[int], bool], int] = steps_volume,
                ) -> Callable[[Ctx, list[int]], Any]:
    @contextmanager
    def setup(ctx: Ctx, sizes: list[int]) -> Iterator[BenchFile]:
        """Delete the old file, check the space, and for reads write the data to read."""
        mode = {AGGREGATE: "agg", NON_AGGREGATE: "nonagg"}.get(ctx.mode, "x")
        name = f"{bench}_{mode}_np{ctx.size}_g{ctx.group_index}"
        if private:
            name += f"_r{ctx.MPI.COMM_WORLD.Get_rank()}"
        path = run.current().path(name)
        writer = private or ctx.rank == 0
        share = volume(ctx, sizes, private)  # of this rank's file
        total = share * ctx.size if private else share

        def prepare() -> None:
            run.unlink(path)
            if ctx.rank == 0:
                run.check_space(bench, total)
            if rw == READ:
                run.write_content(path, share)

        run.collective(ctx.comm, prepare if writer else None, f"{bench}: preparing the file")
        _mpi.injected_fault(f"{bench}/file", ctx.MPI.COMM_WORLD.Get_rank())
        cached = rw == READ
        if rw == READ and ctx.cfg.options.drop_cache:
            run.collective(ctx.comm, (lambda: run.drop_cache(path)) if writer else None,
                           f"{bench}: dropping the page cache of its file")
            cached = False
        try:
            yield BenchFile(path, private, cached)
        finally:
            if writer and not ctx.cfg.options.keep_files:
                run.unlink(path)

    return setup


@contextmanager
def _transfer(ctx: Ctx, nbytes: int, access: Access) -> Iterator[Runner]:
    """Open the file, set the view, and yield run(n) (module docstring)."""
    MPI = ctx.MPI
    bf: BenchFile = ctx.state
    nprocs = 1 if bf.private else ctx.size
    # Priv: every rank writes rank 0's share of X into its own file (as IMB).
    pos1, loc = portion(nbytes, ctx.size, 0 if bf.private else ctx.rank)
    if bf.private:
        pos1 = 0
    stride = loc if bf.private else nbytes
    fcomm = MPI.COMM_SELF if bf.private else ctx.comm
    amode = MPI.MODE_CREATE | MPI.MODE_RDWR | (MPI.MODE_UNIQUE_OPEN if bf.private else 0)
    fh = run.open_file(ctx.comm, fcomm, bf.path, amode, access.name)
    ctx.hold(lambda: fh.Close() if fh != MPI.FILE_NULL else None)
    tiled = access.pos == "Indv" and nprocs > 1 and nbytes > 0
    if tiled:  # the rank's piece, resized to extent X: each write advances X in the file
        ft = MPI.Datatype.Create_struct([max(loc, 1)], [pos1], [MPI.BYTE]).Create_resized(
            0, nbytes).Commit()
        ctx.hold(ft.Free)
        run.collective(ctx.comm, lambda: fh.Set_view(0, MPI.BYTE, ft, "native", run.info()),
                       f"{access.name}: MPI_File_set_view")
    if "hints" not in ctx.attrs and ctx.rank == 0:
        ctx.attrs["hints"] = run.hints_of(fh)
        ctx.attrs["page_cache"] = "cached" if bf.cached else (
            "dropped" if access.rw == READ else "")
    buf = (content(0, loc) if access.rw == WRITE else np.zeros(loc, np.uint8)) if loc else \
        np.zeros(1, np.uint8)
    if access.rw == WRITE and check.corrupting(ctx) and ctx.cfg.check and loc:
        buf[-1] ^= 0xFF  # test hook: the data written differ from what the check expects
    # Room for the overlap pass's n requests and statuses (n <= n0).
    room = max(1, ctx.n0) if access.nonblocking else 1
    statuses, _ = ctx.scratch(statuses=room)
    requests = np.zeros(room * capi.handle_size(), np.uint8)
    work = cpu.workspace()
    units = 0
    if access.nonblocking:
        units = cpu.units_for(TARGET_CPU_S, cpu.rate(capi.active().name))
        ctx.prepare("cpu_units", units)
    ctx.keep(buf, requests, work)
    args = (access.rw, access.positioning, access.collective)
    # The sync triplet's barrier is over the file's processes (MPI_COMM_SELF for Priv).
    common = (capi.file_handle(fh), int(buf.ctypes.data), loc, ctx.handle(MPI.BYTE),
              pos1 if access.pos == "Expl" else 0, stride, ctx.handle(fcomm))
    last = [0]

    def rewind() -> None:
        if access.positioning == SHARED:
            run.collective(ctx.comm, lambda: fh.Seek_shared(0, MPI.SEEK_SET),
                           f"{access.name}: MPI_File_seek_shared")
        elif access.positioning == INDV:
            fh.Seek(0, MPI.SEEK_SET)

    def blocking(n: int, nonaggr: int) -> float:
        rewind()
        seconds, err = loops.io_loop(n, *args, nonaggr, *common, statuses)
        run.agree(ctx, err, access.name)
        return float(seconds)

    def timed(n: int) -> float | tuple[float, ...]:
        last[0] = n
        t_pure = blocking(n, int(ctx.mode == NON_AGGREGATE))
        if not access.nonblocking:
            return t_pure
        if n > len(requests) // capi.handle_size():
            raise CollectiveFailure(f"{access.name}: {n} requests exceed the room for "
                                    f"{len(requests) // capi.handle_size()}")
        rewind()
        t_ovrl, t_cpu, err = loops.overlap_loop(n, *args, units, work, *common, statuses,
                                                int(requests.ctypes.data), capi.handle_size(),
                                                N_BARR)
        run.agree(ctx, err, access.name)
        return float(t_ovrl), t_pure, float(t_cpu)

    yield timed
    if ctx.cfg.check and last[0] and loc and not (access.pos == "Shared" and access.cls == "P"):
        _check(ctx, access, bf, fh, buf, last[0] - 1, nbytes, pos1, loc)


def _check(ctx: Ctx, access: Access, bf: BenchFile, fh: Any, buf: np.ndarray, step: int,
           nbytes: int, pos1: int, loc: int) -> None:
    """``--check``: the last step's data. Writes: read back from the file (after the sync)
    and compare with what was written; reads: compare what arrived with the file's content.
    P_*_Shared is not checked: the shared pointer gives no rank a known position."""
    where = step * loc if bf.private else step * nbytes + pos1
    if access.rw == WRITE:
        with open(bf.path, "rb") as fd:
            fd.seek(where)
            got = np.frombuffer(fd.read(loc), np.uint8)
        expected = content(0, loc)
        if got.size != loc:
            ctx.defects += loc
            return
        check.expect_bytes(ctx, got, expected)
        return
    got = buf.copy()
    if check.corrupting(ctx):
        got[-1] ^= 0xFF
    check.expect_bytes(ctx, got, content(where, loc))


@contextmanager
def _open_close(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Time n cycles of MPI_File_open (collective), a one-byte write and MPI_File_close."""
    MPI = ctx.MPI
    bf: BenchFile = ctx.state
    name = np.frombuffer(os.fsencode(str(bf.path)) + b"\0", np.uint8).copy()
    box = np.zeros(1, np.int64)
    one = np.zeros(1, np.uint8)
    st, _ = ctx.scratch()
    info = run.info()
    ctx.keep(name, box, one, info)
    if "hints" not in ctx.attrs and ctx.rank == 0:
        ctx.attrs["hints"] = run.hints()

    def timed(n: int) -> float:
        seconds, err = loops.open_close_loop(
            n, ctx.handle(ctx.comm), int(name.ctypes.data), MPI.MODE_CREATE | MPI.MODE_RDWR,
            ctx.handle(info), box, int(one.ctypes.data), ctx.handle(MPI.BYTE), st)
        run.agree(ctx, err, "Open_Close")
        return float(seconds)

    yield timed


def _register(access: Access) -> None:
    single = access.cls == "S"
    modes = (AGGREGATE, NON_AGGREGATE) if (
        access.rw == WRITE and not access.nonblocking) else (AGGREGATE,)
    fields: dict[str, Any] = {
        "suite": SUITE, "modes": modes, "single_batch": True, "warm_up": False,
        "default_npmin": 1, "size_unit": 1,
        "setup": _file_setup(access.name, access.rw, access.private),
        "procs": 1 if single else None,
        "bytes_counted": "X bytes per step for the whole group (S_: the one process); "
                         "Mbytes/sec = X / t_max, 1 MB = 10^6 B",
    }
    if access.nonblocking:
        fields.update(kind=Kind.COLLECTIVE, metrics=(T_OVRL, T_PURE, T_CPU),
                      columns=io_overlap_columns())
    else:
        fields["kind"] = Kind.SINGLE_TRANSFER if single else Kind.PARALLEL_TRANSFER

    def kernel(ctx: Ctx, nbytes: int) -> Any:
        return _transfer(ctx, nbytes, access)

    calls = _calls(access)
    kernel.__doc__ = (f"{calls} of X bytes per step ({access.pos} positioning), timed as "
                      "one loop of n steps after two barriers" + (
                          "; writes end with MPI_File_sync, MPI_Barrier, MPI_File_sync "
                          "(once, or after every step in non-aggregate mode)"
                          if access.rw == WRITE else "") + (
                          ". Overlap pass: the nonblocking calls, the 10 ms CPU kernel per "
                          "call, then the wait" if access.nonblocking else "") + ".")
    benchmark(access.name, **fields)(kernel)


def _calls(access: Access) -> str:
    rw = "write" if access.rw == WRITE else "read"
    if access.cls == "C":
        suffix = {"Indv": "_all", "Expl": "_at_all", "Shared": "_ordered"}[access.pos]
    else:
        suffix = {"Indv": "", "Priv": "", "Expl": "_at", "Shared": "_shared"}[access.pos]
    return f"MPI_File_{rw}{suffix}"


def accesses() -> list[Access]:
    """The 36 transfer benchmarks in IMB's run order: writes, then reads; per class S, P, C;
    per positioning; each blocking benchmark followed by its nonblocking one."""
    out = []
    for rw in (WRITE, READ):
        for cls, positions in (("S", ("Indv", "Expl")), ("P", ("Indv", "Shared", "Priv", "Expl")),
                               ("C", ("Indv", "Shared", "Expl"))):
            for pos in positions:
                out += [Access(cls, rw, False, pos), Access(cls, rw, True, pos)]
    return out


for _access in accesses():
    _register(_access)

benchmark("Open_Close", suite=SUITE, kind=Kind.SYNC, nonaggr=True, single_batch=True,
          warm_up=False, default_npmin=1, size_unit=1,
          setup=_file_setup("Open_Close", WRITE, volume=lambda ctx, sizes, private: 1),
          bytes_counted="one byte written per cycle; no bandwidth")(_open_close)
