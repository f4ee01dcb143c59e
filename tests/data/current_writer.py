"""The content of the golden files, written with beff's CURRENT writer (for the tests).

The golden files of schema 2 were written once by the frozen ``golden_v2_writer.py`` (and
``golden_v2_beffio_writer.py``), those of schema 3 once by this module when schema 3 began
(``python tests/data/current_writer.py``); the tests compare what this module writes today
with the newest ones, group by group, so a change of the layout cannot pass unnoticed, and
check that every version's files give the same figures. (``golden-schema-v1.h5`` was written
by the schema-1 writer.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from beff.effbw.record import BeffRecord  # noqa: E402
from beff.io.record import BeffIORecord  # noqa: E402
from beff.results.archive import ResultFile  # noqa: E402
from beff.results.model import OK, TIME_OUT, Measurement  # noqa: E402
from tests.data import golden_v2_beffio_writer as frozen_io  # noqa: E402
from tests.data import golden_v2_writer as frozen  # noqa: E402

ATTRS = dict(frozen.ATTRS, derived={})  # schema 3: what a suite derived (nothing here)
RANKS = frozen.RANKS


def measurements() -> list[Measurement]:
    sizes = np.array([0, 1, 2, 4])
    pingpong = Measurement(
        suite="mpi1", benchmark="PingPong", kind="single_transfer", nprocs=2, ngroups=1,
        multi=None, idle=1, sizes=sizes, repetitions=np.array([1000, 1000, 1000, 1000]),
        status=[OK] * 4, times=np.array([[1e-6, 1.1e-6], [1.2e-6, 1.3e-6], [1.4e-6, 1.5e-6],
                                         [2e-6, 2.5e-6]]),
        group=np.array([0, 0]), world_ranks=np.array([0, 1]),
        samples=np.full((4, 2, 2), 1e-3), batch_iters=np.full((4, 2, 2), 500),
        time_scale=0.5, needed_gb=np.full(4, 0.001),
        attrs={"backend": "jit", "description": "golden"},
    )
    sendrecv = Measurement(
        suite="mpi1", benchmark="Sendrecv", kind="parallel_transfer", nprocs=3, ngroups=1,
        multi=None, idle=0, sizes=sizes, repetitions=np.array([100, 100, 0, 0]),
        status=[OK, OK, TIME_OUT, "skipped"],
        times=np.array([[3e-6, 4e-6, 5e-6], [3e-6, 4e-6, 6e-6], [np.nan] * 3, [np.nan] * 3]),
        group=np.zeros(3, dtype=int), world_ranks=np.arange(3),
        samples=np.full((4, 3, 1), 4e-4), batch_iters=np.full((4, 3, 1), 100), bw_scale=2.0,
        needed_gb=np.full(4, 0.001), attrs={"backend": "python"},
    )
    t = np.array([[5e-6, 6e-6], [5e-6, 6e-6], [7e-6, 8e-6], [9e-6, 1e-5]])
    s = np.full((4, 2, 1), 5e-3)
    overlap = Measurement(
        suite="golden", benchmark="Overlap", kind="collective", nprocs=2, ngroups=1,
        multi=None, idle=1, sizes=sizes, repetitions=np.full(4, 1000), status=[OK] * 4,
        times=t, group=np.zeros(2, dtype=int), world_ranks=np.arange(2), samples=s,
        batch_iters=np.full((4, 2, 1), 1000), needed_gb=np.full(4, 0.001),
        attrs={"backend": "jit"}, mode="aggregate",
        columns=("bytes", "repetitions", "t_ovrl", "t_pure", "t_CPU"), metric="t_ovrl",
        more_times={"t_pure": t / 2, "t_CPU": t / 2}, more_samples={"t_pure": s / 2,
                                                                   "t_CPU": s / 2},
        prepared={"cpu_loops": np.array([[10.0, 11.0], [10.0, 11.0], [20.0, 21.0],
                                         [40.0, 41.0]])},
    )
    return [pingpong, sendrecv, overlap]


def beff_record() -> BeffRecord:
    """The b_eff run of golden-schema-v2-beff.h5."""
    with h5py.File(Path(__file__).with_name("golden-schema-v2-beff.h5"), "r") as f:
        g = f["beff"]
        arrays = {k: g[k][()] for k in g if g[k].dtype.kind != "O"}
        names = {k: [v.decode() for v in g[k][()]] for k in g if g[k].dtype.kind == "O"}
    return BeffRecord(**frozen.BEFF_SCALARS, **names,
                      **{k: v for k, v in arrays.items() if k not in ("official", "dims2",
                                                                      "dims3")},
                      official=[bool(x) for x in arrays["official"]],
                      dims2=[int(x) for x in arrays["dims2"]],
                      dims3=[int(x) for x in arrays["dims3"]])


def write_beff(path: Path) -> None:
    out = ResultFile(path)
    out.create(dict(ATTRS, command_line=["beff", "run", "--quick"], benchmarks=["b_eff"],
                    nprocs=2), RANKS)
    out.add(beff_record())
    out.finish("complete")


def write(path: Path) -> None:
    out = ResultFile(path)
    out.create(ATTRS, RANKS)
    for m in measurements():
        out.add(m)
    out.finish("complete")




def beffio_record() -> BeffIORecord:
    """The b_eff_io run of golden-schema-v2-beffio.h5."""
    with h5py.File(Path(__file__).with_name("golden-schema-v2-beffio.h5"), "r") as f:
        g = f["beffio"]
        arrays = {k: g[k][()] for k in g if k != "uname"}
        uname = [v.decode() for v in g["uname"][()]]
        hints = json.loads(g.attrs["hints_used"])
    scalars = dict(frozen_io.SCALARS)
    return BeffIORecord(**scalars, uname=uname, hints_used=hints, **arrays)


def write_beffio(path: Path) -> None:
    out = ResultFile(path)
    out.create(dict(ATTRS, command_line=["beff", "io", "-T", "16"], benchmarks=["b_eff_io"],
                    nprocs=2), RANKS)
    out.add(beffio_record())
    out.finish("complete")


if __name__ == "__main__":  # the golden files of the current schema
    from beff.results.archive import SCHEMA_VERSION

    here = Path(__file__).resolve().parent
    for name, writer in (("imb", write), ("beff", write_beff), ("beffio", write_beffio)):
        target = here / f"golden-schema-v{SCHEMA_VERSION}-{name}.h5"
        target.unlink(missing_ok=True)
        writer(target)
        print(target)
