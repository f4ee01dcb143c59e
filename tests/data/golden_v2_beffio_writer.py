"""FROZEN writer of the schema-2 golden file of a b_eff_io run (the /beffio group, an
addition to schema 2). Never change it; schema 3 gets a writer of its own.

    python -m tests.data.golden_v2_beffio_writer   (from the repository root)

It writes golden-schema-v2-beffio.h5 with plain h5py calls, independently of beff's own
writer: 2 processes, partitions 1 and 2, every pattern of every access moving 1 MiB per
process in 0.01 s (so every average, and b_eff_io, is 104.8576 MB/s per process at work).
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from tests.data.golden_v2_writer import ATTRS, HERE, STR, _root

SCALARS = {"nprocs": 2, "memory_per_proc": 64 << 20, "memory_source": "--memory-per-proc",
           "total_memory": 256 << 20, "total_memory_source": "--total-memory",
           "lmax": 2 << 20, "scheduled_time": 16.0, "quick": False, "rewrite_all": False,
           "shared": True, "unique": True, "checked": False, "runtime_s": 17.5, "failure": ""}
# b_eff_io 2.1's 43 patterns: U (time share), type, row of the summary table
WEIGHT = [0, 4, 4, 4, 2, 2, 2, 2, 2, 0, 4, 2, 1, 1, 1, 1, 2, 0, 2, 2, 1, 1, 1, 1, 2, 0, 2, 2, 1,
          1, 1, 1, 2, 0, 0, 2, 2, 1, 1, 1, 1, 2, 0]
PTYPE = [0] * 9 + [1] * 8 + [2] * 8 + [3] * 9 + [4] * 9
ROW = [0, 7, 8, 5, 3, 1, 4, 2, 6, 0, 7, 5, 3, 1, 4, 2, 6, 0, 7, 5, 3, 1, 4, 2, 6, 0, 7, 5, 3, 1,
       4, 2, 6, 0, 0, 7, 5, 3, 1, 4, 2, 6, 0]
CHUNK = [1048576, 2097152, 1048576, 1048576, 32768, 1024, 32776, 1032, 1048584] + \
    [1048576, 2097152, 1048576, 32768, 1024, 32776, 1032, 1048584] * 3 + [0] + \
    [1048576, 2097152, 1048576, 32768, 1024, 32776, 1032, 1048584, 0]
A, P, N, R, K, T = 3, 2, 43, 2, 6, 5  # accesses, partitions, patterns, ranks, parts, types


def _ds(g: h5py.Group, name: str, data: object, units: str, what: str) -> None:
    d = g.create_dataset(name, data=data)
    d.attrs["units"] = units
    d.attrs["description"] = what


def write_beffio(path: Path) -> None:
    attrs = dict(ATTRS, command_line=["beff", "io", "-T", "16"], benchmarks=["b_eff_io"],
                 nprocs=2)
    with h5py.File(path, "w") as f:
        _root(f, attrs)
        g = f.create_group("beffio")
        for key, value in SCALARS.items():
            g.attrs[key] = value
        g.attrs["hints_used"] = json.dumps({"write/n1/scatter": {"cb_nodes": "1"}},
                                           sort_keys=True)
        d = g.create_dataset("uname", data=np.array(["Linux", "golden", "6", "#1", "x86_64"],
                                                    dtype=object), dtype=STR)
        d.attrs["units"] = ""
        d.attrs["description"] = "sysname, nodename, release, version, machine of rank 0"
        parts = np.full((A, P, N, R, K), np.nan)
        parts[:, 0, :, 0, :] = 0.001  # partition n=1: rank 0 alone
        parts[:, 1, :, :, :] = 0.001
        arrays = {
            "partitions": (np.array([1, 2]), "1", "[partition] processes doing I/O"),
            "chunk": (np.tile(np.array(CHUNK), (P, 1)), "B",
                      "[partition, pattern] l: contiguous bytes per process on disk"),
            "call": (np.full((P, N), 1 << 20), "B",
                     "[partition, pattern] L: bytes per process per call"),
            "weight": (np.array(WEIGHT), "1", "[pattern] U: share of the scheduled time"),
            "ptype": (np.array(PTYPE), "1", "[pattern] type: 0 scatter, 1 shared, "
                      "2 separated, 3 segmented, 4 seg_coll"),
            "row": (np.array(ROW), "1", "[pattern] row of the summary table (1..7; 0 none; "
                    "8 shown apart)"),
            "segment": (np.zeros(P, dtype=np.int64), "B",
                        "[partition] per-process segment of types 3 and 4"),
            "repetitions": (np.ones((A, P, N), dtype=np.int64), "1",
                            "[access, partition, pattern] calls per process (-1: not run)"),
            "t_pattern": (np.full((A, P, N), 0.01), "s", "[access, partition, pattern] rank "
                          "0's pattern time (barrier to barrier)"),
            "parts": (parts, "s", "[access, partition, pattern, rank, part] per-rank parts: "
                      "t_pat, barrier, bcast, sync, last_io, last_barrier_bcast (NaN: not a "
                      "member)"),
            "t_open": (np.zeros((A, P, T)), "s",
                       "[access, partition, type] rank 0's open, between two barriers"),
            "t_close": (np.zeros((A, P, T)), "s",
                        "[access, partition, type] rank 0's close and barrier"),
            "errors": (np.zeros((A, P, N), dtype=np.int64), "1",
                       "[access, partition, pattern] stamp mismatches over ranks"),
            "defects": (np.zeros((A, P, N), dtype=np.int64), "1",
                        "[access, partition, pattern] --check: doubles read back wrong"),
            "done": (np.ones((A, P), dtype=np.int64), "1",
                     "[access, partition] 1 when the phase completed"),
        }
        for key, (data, units, what) in arrays.items():
            _ds(g, key, data, units, what)


if __name__ == "__main__":
    write_beffio(HERE / "golden-schema-v2-beffio.h5")
