"""The HDF5 result archive: one self-describing, schema-versioned file per run.

Written by world rank 0 only. The file is re-opened and closed for every benchmark result,
so a run killed at any point between two benchmarks leaves a readable file holding every
completed one. The schema is documented in ``share/schema/``.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from beff.core.errors import BeffError
from beff.results import stats
from beff.results.model import Measurement, RunRecord

SCHEMA_VERSION = 1
FORMAT_NAME = "beff-results"
# Root attributes stored as JSON text.
JSON_ATTRS = ("command_line", "config", "config_sources", "versions", "mpi", "host", "env",
              "placement", "overhead")
RANK_COLUMNS = ("rank", "host", "cpus", "numa", "local_rank", "local_size", "node", "pid",
                "memory_bytes")

_STR = h5py.string_dtype()
FULL_DISK_BYTES = 1 << 20


def _reason(path: Path, exc: BaseException) -> str:
    """HDF5's message, led by the likely cause when the file system is (nearly) full.

    HDF5 does not always pass the errno through (its message may only say that a cache
    could not be flushed), so the free space is checked directly.
    """
    try:
        free = shutil.disk_usage(path.resolve().parent).free
    except OSError:
        return str(exc)
    if free < FULL_DISK_BYTES:
        return f"No space left on device ({free} bytes free); HDF5 said: {exc}"
    return str(exc)


def _attr(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list, tuple)) else value


class ResultFile:
    """Append-as-you-go writer; every call opens and closes the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.count = 0

    def create(self, attrs: dict[str, Any], ranks: list[dict[str, Any]]) -> None:
        try:
            self._create(attrs, ranks)
        except (OSError, RuntimeError) as exc:  # h5py raises both
            raise BeffError(f"cannot create result file {self.path}: "
                            f"{_reason(self.path, exc)}") from exc

    def _create(self, attrs: dict[str, Any], ranks: list[dict[str, Any]]) -> None:
        with h5py.File(self.path, "w") as f:
            f.attrs["format"] = FORMAT_NAME
            f.attrs["schema_version"] = SCHEMA_VERSION
            f.attrs["status"] = "running"
            for key, value in attrs.items():
                f.attrs[key] = json.dumps(value, sort_keys=True) if key in JSON_ATTRS else value
            g = f.create_group("ranks")
            for col in RANK_COLUMNS:
                values = [r.get(col, "") for r in ranks]
                if values and isinstance(values[0], str):
                    g.create_dataset(col, data=np.array(values, dtype=object), dtype=_STR)
                else:
                    g.create_dataset(col, data=np.asarray(values, dtype=np.int64))
            f.create_group("results")

    def set_attrs(self, **attrs: Any) -> None:
        with h5py.File(self.path, "a") as f:
            for key, value in attrs.items():
                f.attrs[key] = json.dumps(value, sort_keys=True) if key in JSON_ATTRS else value

    def add(self, m: Measurement) -> None:
        """Write one benchmark at one process count and flush it to disk."""
        try:
            with h5py.File(self.path, "a") as f:
                write_measurement(f.require_group("results"), m, self.count)
                f.attrs["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                f.flush()
        except (OSError, RuntimeError) as exc:  # h5py raises both
            raise BeffError(f"cannot write results to {self.path}: {_reason(self.path, exc)}") \
                from exc
        self.count += 1

    def add_group(self, name: str, attrs: dict[str, Any],
                  datasets: dict[str, tuple[np.ndarray, str]]) -> None:
        """Write a free-form group (e.g. b_eff's tables): datasets carry a ``units`` attribute."""
        with h5py.File(self.path, "a") as f:
            if name in f:
                del f[name]
            g = f.create_group(name)
            for key, value in attrs.items():
                g.attrs[key] = _attr(value)
            for key, (data, units) in datasets.items():
                d = g.create_dataset(key, data=data)
                d.attrs["units"] = units
            f.flush()

    def finish(self, status: str) -> None:
        self.set_attrs(status=status,
                       finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def _dataset(g: h5py.Group, name: str, data: Any, units: str, what: str) -> None:
    d = g.create_dataset(name, data=data)
    d.attrs["units"] = units
    d.attrs["description"] = what


def write_measurement(results: h5py.Group, m: Measurement, order: int) -> None:
    g = results.require_group(m.key)
    for name in list(g):
        del g[name]
    g.attrs.update({
        "order": order,
        "suite": m.suite,
        "benchmark": m.benchmark,
        "kind": m.kind,
        "nprocs": m.nprocs,
        "ngroups": m.ngroups,
        "multi": -1 if m.multi is None else m.multi,
        "idle": m.idle,
        "time_scale": m.time_scale,
        "bw_scale": m.bw_scale,
        "msgrate_factor": m.msgrate_factor,
        "checked": m.checked,
        "extra": json.dumps(m.attrs, sort_keys=True),
    })
    summary = stats.summarize(m)
    _dataset(g, "bytes", m.sizes, "B", "message length X")
    _dataset(g, "repetitions", m.repetitions, "1", "iterations timed per size (rank 0's group)")
    g.create_dataset("status", data=np.array(m.status, dtype=object), dtype=_STR)
    _dataset(g, "t_min", summary.t_min, "us", "min over ranks of the reported time")
    _dataset(g, "t_max", summary.t_max, "us", "max over ranks of the reported time")
    _dataset(g, "t_avg", summary.t_avg, "us", "mean over ranks of the reported time")
    _dataset(g, "bandwidth", summary.mbytes_per_sec, "MB/s (1 MB = 10^6 B)",
             "bw_scale * X / t_max (message-rate kinds: msg/s * X)")
    _dataset(g, "msg_rate", summary.msg_per_sec, "1/s", "messages per second (Uniband/Biband)")
    _dataset(g, "times", m.times, "s",
             "per size and rank: timed seconds / repetitions * time_scale")
    _dataset(g, "samples", m.samples, "s", "raw timed seconds per size, rank and batch")
    _dataset(g, "batch_iters", m.batch_iters, "1", "iterations in each batch")
    _dataset(g, "group_of_rank", m.group, "1", "group index of each participating rank")
    _dataset(g, "world_rank", m.world_ranks, "1", "MPI_COMM_WORLD rank of each column")
    if m.needed_gb is not None:
        _dataset(g, "needed_gb", m.needed_gb, "GiB", "buffer memory per rank (IMB -mem check)")
    if m.defects is not None:
        _dataset(g, "defects", m.defects, "B", "received bytes that differed (--check)")


def read_measurement(g: h5py.Group) -> Measurement:
    a = g.attrs
    multi = int(a["multi"])
    return Measurement(
        suite=str(a["suite"]),
        benchmark=str(a["benchmark"]),
        kind=str(a["kind"]),
        nprocs=int(a["nprocs"]),
        ngroups=int(a["ngroups"]),
        multi=None if multi < 0 else multi,
        idle=int(a["idle"]),
        sizes=g["bytes"][()],
        repetitions=g["repetitions"][()],
        status=[s.decode() if isinstance(s, bytes) else str(s) for s in g["status"][()]],
        times=g["times"][()],
        group=g["group_of_rank"][()],
        world_ranks=g["world_rank"][()],
        samples=g["samples"][()],
        batch_iters=g["batch_iters"][()],
        time_scale=float(a["time_scale"]),
        bw_scale=float(a["bw_scale"]),
        msgrate_factor=float(a["msgrate_factor"]),
        defects=g["defects"][()] if "defects" in g else None,
        needed_gb=g["needed_gb"][()] if "needed_gb" in g else None,
        checked=bool(a["checked"]),
        attrs=json.loads(a.get("extra", "{}")),
    )


def _decode(value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, np.generic):
        return value.item()
    return value


def load(path: str | Path) -> RunRecord:
    """Read a result file of any supported schema version."""
    with h5py.File(path, "r") as f:
        if f.attrs.get("format") != FORMAT_NAME:
            raise ValueError(f"{path} is not a beff result file")
        version = int(f.attrs["schema_version"])
        if version > SCHEMA_VERSION:
            raise ValueError(f"{path} has schema {version}; this beff reads up to "
                             f"{SCHEMA_VERSION}")
        attrs: dict[str, Any] = {}
        for key, value in f.attrs.items():
            value = _decode(value)
            attrs[key] = json.loads(value) if key in JSON_ATTRS and isinstance(value, str) \
                else value
        ranks: list[dict[str, Any]] = []
        if "ranks" in f:
            cols = {c: [_decode(v) for v in f["ranks"][c][()]] for c in f["ranks"]}
            n = len(next(iter(cols.values()), []))
            ranks = [{c: cols[c][i] for c in cols} for i in range(n)]
        found: list[tuple[int, Measurement]] = []

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Group) and "benchmark" in obj.attrs:
                found.append((int(obj.attrs["order"]), read_measurement(obj)))

        if "results" in f:
            f["results"].visititems(visit)
        record = RunRecord(attrs=attrs, ranks=ranks,
                           measurements=[m for _, m in sorted(found, key=lambda t: t[0])])
        if "beff" in f:
            record.beff = read_group(f["beff"])
    return record


def read_group(g: h5py.Group) -> dict[str, Any]:
    """A free-form group as nested dicts of attributes and numpy arrays."""
    out: dict[str, Any] = {k: _decode(v) for k, v in g.attrs.items()}
    for key, item in g.items():
        out[key] = read_group(item) if isinstance(item, h5py.Group) else item[()]
    return out
