"""FROZEN writer of the schema-2 golden files. Never change it; schema 3 gets a writer of its own.

    python tests/data/golden_v2_writer.py

It writes golden-schema-v2-imb.h5 (IMB results, one with a mode, three metrics and a
per-size preparation) and golden-schema-v2-beff.h5 (a b_eff run) with plain h5py calls,
independently of beff's own writer, so the tests can prove that beff's current reader loads
them and that its current writer still produces their layout.
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent
STR = h5py.string_dtype()
JSON_ATTRS = ("command_line", "config", "config_sources", "versions", "mpi", "host", "env",
              "placement", "overhead")
RANK_UNITS = {"rank": "1", "host": "", "cpus": "", "numa": "", "local_rank": "1",
              "local_size": "1", "node": "1", "pid": "1", "memory_bytes": "B"}

ATTRS = {
    "created": "2026-11-22T00:00:00Z",
    "command_line": ["beff", "imb", "mpi1", "PingPong", "Sendrecv"],
    "config": {"suite": "mpi1", "msglog_min": 0, "msglog_max": 2, "zero_size": True,
               "data_type": "byte", "red_data_type": "float", "msglen": None},
    "config_sources": {"msglog_max": "cli"},
    "versions": {"beff": "0.1.0", "numpy": "2", "h5py": "3", "mpi4py": "4", "numba": "0.6"},
    "mpi": {"library_version": "Golden MPI 1.0", "standard_version": "4.1",
            "thread_level": "single"},
    "host": {"machine": "x86_64", "system": "Linux", "release": "6", "version": "#1"},
    "env": {},
    "nprocs": 3,
    "placement": {"nodes": 2, "hosts": ["hostA", "hostB"], "oversubscribed": False},
    "overhead": {"backend": "jit", "wtime": 3e-8, "send_proc_null": 8e-9, "wtick": 1e-9,
                 "compile": 0.5},
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
SIZES = np.array([0, 1, 2, 4])


def _ds(g: h5py.Group, name: str, data: object, units: str, what: str) -> None:
    d = g.create_dataset(name, data=data)
    d.attrs["units"] = units
    d.attrs["description"] = what


def _root(f: h5py.File, attrs: dict[str, object]) -> None:
    f.attrs["format"] = "beff-results"
    f.attrs["schema_version"] = 2
    f.attrs["status"] = "complete"
    f.attrs["run_id"] = "0123456789abcdef"
    for key, value in attrs.items():
        f.attrs[key] = json.dumps(value, sort_keys=True) if key in JSON_ATTRS else value
    f.attrs["updated"] = "2026-11-22T00:00:01Z"
    f.attrs["finished"] = "2026-11-22T00:00:02Z"
    g = f.create_group("ranks")
    for col, units in RANK_UNITS.items():
        values = [r[col] for r in RANKS]
        if isinstance(values[0], str):
            d = g.create_dataset(col, data=np.array(values, dtype=object), dtype=STR)
        else:
            d = g.create_dataset(col, data=np.asarray(values, dtype=np.int64))
        d.attrs["units"] = units
    f.create_group("results")


def _measurement(results: h5py.Group, key: str, order: int, attrs: dict[str, object],
                 times: np.ndarray, samples: np.ndarray, iters: np.ndarray, status: list[str],
                 reps: list[int], bw_scale: float, time_scale: float,
                 more: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
                 prepared: dict[str, np.ndarray] | None = None) -> None:
    g = results.require_group(key)
    metrics = ["t" if not more else attrs.pop("first_metric"), *(more or {})]
    g.attrs.update({"order": order, "multi": -1, "ngroups": 1, "msgrate_factor": 0.0,
                    "checked": False, "bw_scale": bw_scale, "time_scale": time_scale,
                    "metrics": json.dumps(metrics), **attrs})
    with np.errstate(all="ignore"):
        t_min = np.nanmin(times, axis=1) * 1e6 if times.shape[1] else times[:, 0]
        t_max = np.nanmax(times, axis=1) * 1e6
        t_avg = np.nanmean(times, axis=1) * 1e6
        bw = np.where(t_max > 0, bw_scale * SIZES / t_max, 0.0)
    _ds(g, "bytes", SIZES, "B", "message length X")
    _ds(g, "repetitions", np.array(reps), "1", "iterations timed per size (rank 0's group)")
    d = g.create_dataset("status", data=np.array(status, dtype=object), dtype=STR)
    d.attrs["units"] = ""
    d.attrs["description"] = "ok, time-out, out-of-mem or skipped, per size"
    _ds(g, "t_min", t_min, "us", "min over ranks of the reported time")
    _ds(g, "t_max", t_max, "us", "max over ranks of the reported time")
    _ds(g, "t_avg", t_avg, "us", "mean over ranks of the reported time")
    _ds(g, "bandwidth", np.where(np.isfinite(t_max), bw, np.nan), "MB/s (1 MB = 10^6 B)",
        "bw_scale * X / t_max (message-rate kinds: msg/s * X)")
    _ds(g, "msg_rate", np.where(np.isfinite(t_max), 0.0, np.nan), "1/s",
        "messages per second (Uniband/Biband)")
    _ds(g, "times", times, "s", "per size and rank: timed seconds / repetitions * time_scale")
    _ds(g, "samples", samples, "s", "raw timed seconds per size, rank and batch")
    _ds(g, "batch_iters", iters, "1", "iterations in each batch")
    n = times.shape[1]
    _ds(g, "group_of_rank", np.zeros(n, dtype=np.int64), "1",
        "group index of each participating rank")
    _ds(g, "world_rank", np.arange(n, dtype=np.int64), "1", "MPI_COMM_WORLD rank of each column")
    _ds(g, "needed_gb", np.full(4, 0.001), "GiB", "buffer memory per rank (IMB -mem check)")
    for name, (t, s) in (more or {}).items():
        _ds(g, f"times_{name}", t, "s",
            f"metric {name}: per size and rank, timed seconds / repetitions * time_scale")
        _ds(g, f"samples_{name}", s, "s", f"metric {name}: raw timed seconds per size, rank "
            "and batch")
    for name, values in (prepared or {}).items():
        _ds(g, f"prepared_{name}", values, "1",
            f"per size and rank: {name}, recorded by the kernel's per-size preparation")


def write_imb(path: Path) -> None:
    with h5py.File(path, "w") as f:
        _root(f, ATTRS)
        results = f["results"]
        _measurement(
            results, "mpi1/PingPong/np2", 0,
            {"suite": "mpi1", "benchmark": "PingPong", "kind": "single_transfer", "nprocs": 2,
             "idle": 1, "mode": "",
             "columns": json.dumps(["bytes", "repetitions", "t", "mbytes_per_sec"]),
             "extra": json.dumps({"backend": "jit", "description": "golden"}, sort_keys=True)},
            np.array([[1e-6, 1.1e-6], [1.2e-6, 1.3e-6], [1.4e-6, 1.5e-6], [2e-6, 2.5e-6]]),
            np.full((4, 2, 2), 1e-3), np.full((4, 2, 2), 500), ["ok"] * 4, [1000] * 4,
            1.0, 0.5)
        _measurement(
            results, "mpi1/Sendrecv/np3", 1,
            {"suite": "mpi1", "benchmark": "Sendrecv", "kind": "parallel_transfer",
             "nprocs": 3, "idle": 0, "mode": "",
             "columns": json.dumps(["bytes", "repetitions", "t_min", "t_max", "t_avg",
                                    "mbytes_per_sec"]),
             "extra": json.dumps({"backend": "python"}, sort_keys=True)},
            np.array([[3e-6, 4e-6, 5e-6], [3e-6, 4e-6, 6e-6], [np.nan] * 3, [np.nan] * 3]),
            np.full((4, 3, 1), 4e-4), np.full((4, 3, 1), 100),
            ["ok", "ok", "time-out", "skipped"], [100, 100, 0, 0], 2.0, 1.0)
        t = np.array([[5e-6, 6e-6], [5e-6, 6e-6], [7e-6, 8e-6], [9e-6, 1e-5]])
        s = np.full((4, 2, 1), 5e-3)
        _measurement(
            results, "golden/Overlap/aggregate/np2", 2,
            {"suite": "golden", "benchmark": "Overlap", "kind": "collective", "nprocs": 2,
             "idle": 1, "mode": "aggregate", "first_metric": "t_ovrl",
             "columns": json.dumps(["bytes", "repetitions", "t_ovrl", "t_pure", "t_CPU"]),
             "extra": json.dumps({"backend": "jit"}, sort_keys=True)},
            t, s, np.full((4, 2, 1), 1000), ["ok"] * 4, [1000] * 4, 1.0, 1.0,
            more={"t_pure": (t / 2, s / 2), "t_CPU": (t / 2, s / 2)},
            prepared={"cpu_loops": np.array([[10.0, 11.0], [10.0, 11.0], [20.0, 21.0],
                                             [40.0, 41.0]])})


BEFF_SCALARS = {"nprocs": 2, "memory_per_proc": 16 << 20, "memory_source": "--memory-per-proc",
                "lmax": 1 << 17, "seed": 7, "repetitions": 2, "repetitions_done": 2,
                "time_per_loop": 0.05, "short": True, "hugepages": False, "pingpong_index": 2,
                "runtime_s": 9.5}


def write_beff(path: Path) -> None:
    attrs = dict(ATTRS, command_line=["beff", "run", "--quick"], benchmarks=["b_eff"],
                 nprocs=2)
    R, L, P, M = 2, 3, 3, 2
    with h5py.File(path, "w") as f:
        _root(f, attrs)
        g = f.create_group("beff")
        for key, value in BEFF_SCALARS.items():
            g.attrs[key] = value
        names = {
            "methods": (["sendrecv", "alltoallv"], "method names, in measuring order"),
            "method_labels": (["Sndrcv", "Alltoal"], "method labels of b_eff 3.6's tables"),
            "labels": (["ring-1*2fix", "random-cyc-1dim", "one PingPong Pair"],
                       "pattern labels"),
            "kinds": (["ring", "random", "info"], "pattern kind: ring, random or info"),
            "uname": (["Linux", "golden", "6", "#1", "x86_64"],
                      "sysname, nodename, release, version, machine of rank 0"),
        }
        for key, (values, what) in names.items():
            d = g.create_dataset(key, data=np.array(values, dtype=object), dtype=STR)
            d.attrs["units"] = ""
            d.attrs["description"] = what
        lengths = np.array([1, 1024, 1 << 17])
        # bandwidth grows with the length; repetition 1 a little faster than repetition 0
        bw = (lengths[None, :, None, None] * 1e3 + 1e6) * np.array([1.0, 1.1])[:, None, None,
                                                                                None]
        bw = np.broadcast_to(bw, (R, L, P, M)).copy()
        arrays = {
            "official": (np.array([1, 1]), "1", "per method: 1 if it enters b_eff"),
            "lengths": (lengths, "B", "message lengths L"),
            "bw_min": (bw, "B/s", "[rep, L, pattern, method] min over ranks of "
                       "L*looplng*sr_count/time"),
            "bw_avg": (bw * 1.01, "B/s", "[rep, L, pattern, method] mean over participating "
                       "ranks"),
            "bw_max": (bw * 1.02, "B/s", "[rep, L, pattern, method] max over ranks"),
            "scale": (np.array([2.0, 2.0, 1.0]), "1", "[pattern] all_msg_cnt / sr_count of "
                      "rank 0"),
            "all_msg_cnt": (np.array([4, 4, 1]), "1", "[pattern] messages per iteration over "
                            "all ranks"),
            "sr_count": (np.array([2, 2, 1]), "1", "[pattern] messages rank 0 sends per "
                         "iteration"),
            "participate_cnt": (np.array([2, 2, 2]), "1", "[pattern] participating ranks"),
            "looplng": (np.full((R, L, M), 10), "1", "[rep, L, method] iterations per loop"),
            "loop_time": (np.full((R, L, M), 0.01), "s", "[rep, L, method] rank 0's loop time "
                          "summed over patterns"),
            "loop_min": (np.full((R, L, M), 0.003), "s", "[rep, L, method] rank 0's shortest "
                         "pattern loop"),
            "loop_max": (np.full((R, L, M), 0.004), "s", "[rep, L, method] rank 0's longest "
                         "pattern loop"),
            "shortened": (np.array([False, False]), "1", "[rep] the 60-second rule shortened "
                          "the two largest lengths"),
            "best_method": (np.full((R, P), -1), "1", "[rep, pattern] method used at the "
                            "shortened lengths (-1: all)"),
            "cross_node": (np.array([[4.0, 0.0], [4.0, 2.0], [1.0, 0.0]]), "1",
                           "[pattern, 2] messages per iteration over all ranks, and those "
                           "crossing nodes"),
            "dims2": (np.array([2, 1]), "1", "2-d process grid"),
            "dims3": (np.array([2, 1, 1]), "1", "3-d process grid"),
            "random_perm": (np.array([[1, 0]]), "1", "[random pattern, rank] the random "
                            "permutations"),
        }
        for key, (data, units, what) in arrays.items():
            _ds(g, key, data, units, what)


if __name__ == "__main__":
    write_imb(HERE / "golden-schema-v2-imb.h5")
    write_beff(HERE / "golden-schema-v2-beff.h5")
