"""Regenerate the golden result file of the current schema version (run by hand, not in CI).

    python tests/data/make_golden.py

Each schema version keeps its own golden file; older ones are never regenerated, so the
tests prove that today's reader still loads them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from beff.results.archive import SCHEMA_VERSION, ResultFile  # noqa: E402
from beff.results.model import OK, TIME_OUT, Measurement  # noqa: E402

ATTRS = {
    "created": "2026-11-22T00:00:00Z",
    "command_line": ["beff", "imb", "mpi1", "PingPong", "Sendrecv"],
    "config": {"suite": "mpi1", "msglog_min": 0, "msglog_max": 2, "zero_size": True,
               "data_type": "byte", "red_data_type": "float", "msglen": None},
    "config_sources": {"msglog_max": "cli"},
    "versions": {"beff": "0.1.0", "numpy": "2", "h5py": "3", "mpi4py": "4"},
    "mpi": {"library_version": "Golden MPI 1.0", "standard_version": "4.1",
            "thread_level": "single"},
    "host": {"machine": "x86_64", "system": "Linux", "release": "6", "version": "#1"},
    "env": {},
    "nprocs": 3,
    "placement": {"nodes": 2, "hosts": ["hostA", "hostB"], "oversubscribed": False},
    "overhead": {"wtime": 5e-8, "empty_loop": 1e-8, "persistent_proc_null": 3e-7,
                 "send_proc_null": 1e-7, "wtick": 1e-9},
    "benchmarks": ["PingPong", "Sendrecv"],
}
RANKS = [
    {"rank": 0, "host": "hostA", "cpus": "0", "numa": "0", "local_rank": 0, "local_size": 2,
     "node": 0, "pid": 100, "memory_bytes": 1 << 34},
    {"rank": 1, "host": "hostA", "cpus": "1", "numa": "0", "local_rank": 1, "local_size": 2,
     "node": 0, "pid": 101, "memory_bytes": 1 << 34},
    {"rank": 2, "host": "hostB", "cpus": "0", "numa": "0", "local_rank": 0, "local_size": 1,
     "node": 1, "pid": 200, "memory_bytes": 1 << 34},
]


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
        attrs={"description": "golden", "placement": "ranks 0,1 on hostA (intra-node)"},
    )
    sendrecv = Measurement(
        suite="mpi1", benchmark="Sendrecv", kind="parallel_transfer", nprocs=3, ngroups=1,
        multi=None, idle=0, sizes=sizes, repetitions=np.array([100, 100, 0, 0]),
        status=[OK, OK, TIME_OUT, "skipped"],
        times=np.array([[3e-6, 4e-6, 5e-6], [3e-6, 4e-6, 6e-6], [np.nan] * 3, [np.nan] * 3]),
        group=np.zeros(3, dtype=int), world_ranks=np.arange(3),
        samples=np.full((4, 3, 1), 4e-4), batch_iters=np.full((4, 3, 1), 100), bw_scale=2.0,
        needed_gb=np.full(4, 0.001),
    )
    return [pingpong, sendrecv]


def write(path: Path) -> None:
    out = ResultFile(path)
    out.create(ATTRS, RANKS)
    for m in measurements():
        out.add(m)
    out.finish("complete")


if __name__ == "__main__":
    write(Path(__file__).with_name(f"golden-schema-v{SCHEMA_VERSION}.h5"))
