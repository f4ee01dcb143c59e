"""The HDF5 result archive: one self-describing, schema-versioned file per run.

Written by world rank 0 only. Every update (a benchmark result, a status) is made on a copy
that then replaces the file (:mod:`beff.results.atomic`), so a run killed at any point, even
inside a write, leaves a readable file holding every completed result. The schema is
documented in ``share/schema/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from beff.core import suite as suites
from beff.core.errors import BeffError
from beff.results import atomic, watch
from beff.results.model import Measurement, Result, RunRecord, StoredSummary

# Format history (share/schema/CHANGES.md has the details):
#   1: IMB results per benchmark and process count; b_eff's figures as a JSON attribute.
#   2: modes, declared columns, further metrics and per-size preparation per measurement;
#      /beff holds typed data only, and b_eff's figures are derived on reading. (Additions
#      since, such as /beffio for ``beff io``, kept the number: share/schema/CHANGES.md.)
#   3: one policy for every family: what is measured and decided is stored, derived figures
#      are not (the measurements' t_min/t_max/t_avg/bandwidth/msg_rate are gone); root
#      attribute ``derived`` (what a suite derived from the config); config ``options``.
SCHEMA_VERSION = 3
FORMAT_NAME = "beff-results"
# Root attributes stored as JSON text.
JSON_ATTRS = ("command_line", "config", "config_sources", "versions", "mpi", "host", "env",
              "placement", "overhead", "warnings", "yield_settings", "workaround_settings",
              "benchmark_comments", "io", "derived")
RANK_COLUMNS = {  # per world rank: units and description
    "rank": ("1", "MPI_COMM_WORLD rank"),
    "host": ("", "host name (gethostname)"),
    "cpus": ("", "CPUs the rank may run on (its affinity mask, as a Linux cpulist)"),
    "numa": ("", "NUMA nodes of those CPUs"),
    "local_rank": ("1", "rank within its node (MPI_Comm_split_type SHARED)"),
    "local_size": ("1", "ranks on its node (MPI_Comm_split_type SHARED)"),
    "node": ("1", "node number: the nodes in the order of their lowest world rank"),
    "pid": ("1", "process id"),
    "memory_bytes": ("B", "physical memory of its host"),
}

_STR = h5py.string_dtype()
FULL_DISK_BYTES = 1 << 20
FILE_OVERHEAD_BYTES = 256 << 10  # HDF5 metadata of a group and its datasets, with room


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


class ResultFile:
    """Append-as-you-go writer; every call opens and closes the file.

    Before each write it checks that the file system has room for it (with a margin), so a
    full disk stops the run with a clear message before HDF5 could leave the file half
    written; every result written before stays readable. The file carries the run's id and
    each write checks it, so two runs can never mix their results in one file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.count = 0
        self.run_id = secrets.token_hex(8)
        self._watcher: subprocess.Popen[bytes] | None = None

    def create(self, attrs: dict[str, Any], ranks: list[dict[str, Any]],
               exclusive: bool = False) -> None:
        """Create the file (``exclusive``: fail if it exists, for generated names)."""
        try:
            self._room(FILE_OVERHEAD_BYTES)
            with h5py.File(self.path, "w-" if exclusive else "w") as f:
                self._create(f, attrs, ranks)
        except (OSError, RuntimeError) as exc:  # h5py raises both
            raise BeffError(f"cannot create result file {self.path}: "
                            f"{_reason(self.path, exc)}") from exc

    def _create(self, f: h5py.File, attrs: dict[str, Any], ranks: list[dict[str, Any]]) -> None:
        f.attrs["format"] = FORMAT_NAME
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["status"] = "running"
        f.attrs["run_id"] = self.run_id
        for key, value in attrs.items():
            f.attrs[key] = json.dumps(value, sort_keys=True) if key in JSON_ATTRS else value
        g = f.create_group("ranks")
        for col, (units, what) in RANK_COLUMNS.items():
            values = [r.get(col, "") for r in ranks]
            if values and isinstance(values[0], str):
                d = g.create_dataset(col, data=np.array(values, dtype=object), dtype=_STR)
            else:
                d = g.create_dataset(col, data=np.asarray(values, dtype=np.int64))
            d.attrs["units"] = units
            d.attrs["description"] = what
        f.create_group("results")

    def _room(self, nbytes: int) -> None:
        """Raise (disk full) unless the file system has ``nbytes`` and a margin free."""
        where = self.path.resolve().parent
        try:
            free = shutil.disk_usage(where).free
        except OSError:
            return
        if free < 2 * nbytes + FILE_OVERHEAD_BYTES // 4:
            raise BeffError(f"disk full: {free:,} bytes free in {where}, the next update "
                            f"needs about {nbytes:,} (with a working copy of the file); the "
                            f"results written so far stay readable in {self.path}")

    @contextlib.contextmanager
    def _update(self, nbytes: int) -> Iterator[h5py.File]:
        """The file, open for one update that is all or nothing (:mod:`atomic`): a run
        killed at any moment leaves the file as it was before the update or after it."""
        try:
            self._room(nbytes + self.path.stat().st_size)  # the working copy, then the update
            with atomic.updated(self.path) as copy, h5py.File(copy, "a") as f:
                owner = _decode(f.attrs.get("run_id", ""))
                if owner != self.run_id:
                    raise BeffError(f"{self.path} now belongs to another run (id {owner}); this "
                                    "run stops writing there (use a file of its own with -o)")
                yield f
                f.attrs["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        except (OSError, RuntimeError) as exc:  # h5py raises both
            raise BeffError(f"cannot write results to {self.path}: {_reason(self.path, exc)}") \
                from exc

    def set_attrs(self, **attrs: Any) -> None:
        with self._update(0) as f:  # a few bytes: allowed down to the last margin
            for key, value in attrs.items():
                f.attrs[key] = json.dumps(value, sort_keys=True) if key in JSON_ATTRS else value

    def add(self, result: Result) -> None:
        """Write one result and flush it to disk: a Measurement (one benchmark at one process
        count) under /results, or a suite's typed record in the group named after its suite
        (rewritten when the suite emits it again, e.g. after each b_eff repetition)."""
        if isinstance(result, Measurement):
            m = result
            size = sum(a.nbytes for a in (m.times, m.samples, m.batch_iters,
                                          *m.more_times.values(), *m.more_samples.values(),
                                          *m.prepared.values()))
            with self._update(size + FILE_OVERHEAD_BYTES) as f:
                write_measurement(f.require_group("results"), m, self.count)
            self.count += 1
            return
        layout = layout_of(result.suite)
        size = sum(v.nbytes for v in vars(result).values() if isinstance(v, np.ndarray))
        with self._update(size + FILE_OVERHEAD_BYTES) as f:
            if layout.group in f:
                del f[layout.group]
            write_record(f.create_group(layout.group), result, layout)

    def finish(self, status: str) -> None:
        self.set_attrs(status=status,
                       finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def guard(self) -> None:
        """Rank 0, once the file exists: an exception here or a signal marks it aborted (the
        abort hook), and so does a watcher process when this process is killed (a rank
        failing on another host, or a killed job)."""
        from beff.core import mpi as _mpi

        _mpi.on_abort(lambda: self.finish("aborted"))
        self._watcher = watch.start(self.path, self.run_id)


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
        "mode": m.mode,
        "columns": json.dumps(list(m.columns)),
        "metrics": json.dumps(list(m.metrics)),
    })
    _dataset(g, "bytes", m.sizes, "B", "message length X")
    _dataset(g, "repetitions", m.repetitions, "1", "iterations timed per size (rank 0's group)")
    d = g.create_dataset("status", data=np.array(m.status, dtype=object), dtype=_STR)
    d.attrs["units"] = ""
    d.attrs["description"] = "ok, time-out, out-of-mem or skipped, per size"
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
    for name in m.more_times:
        _dataset(g, f"times_{name}", m.more_times[name], "s",
                 f"metric {name}: per size and rank, timed seconds / repetitions * time_scale")
        _dataset(g, f"samples_{name}", m.more_samples[name], "s",
                 f"metric {name}: raw timed seconds per size, rank and batch")
    for name, values in m.prepared.items():
        _dataset(g, f"prepared_{name}", values, "1",
                 f"per size and rank: {name}, recorded by the kernel's per-size preparation")


# A suite's typed record (b_eff's /beff, b_eff_io's /beffio): scalar inputs as attributes,
# lists of names as string datasets, arrays as datasets with units and a description, dicts as
# JSON attributes. Each suite declares its record's Layout (core.suite.Suite.layout).
@dataclass(frozen=True)
class Layout:
    group: str
    cls: type
    scalars: tuple[str, ...]
    names: dict[str, str]
    arrays: dict[str, tuple[str, str]]
    bools: tuple[str, ...] = ()
    int_lists: tuple[str, ...] = ()
    json: tuple[str, ...] = ()


def layout_of(suite: str) -> Layout:
    """The Layout of ``suite``'s typed record."""
    layout: Layout = suites.get(suite).load("layout")
    return layout


def write_record(g: h5py.Group, rec: Any, layout: Layout) -> None:
    for key in layout.scalars:
        g.attrs[key] = getattr(rec, key)
    for key in layout.json:
        g.attrs[key] = json.dumps(getattr(rec, key), sort_keys=True)
    for key, what in layout.names.items():
        d = g.create_dataset(key, data=np.array(getattr(rec, key), dtype=object), dtype=_STR)
        d.attrs["units"] = ""
        d.attrs["description"] = what
    for key, (units, what) in layout.arrays.items():
        value = getattr(rec, key)
        if value is not None:
            _dataset(g, key, np.asarray(value, dtype=np.int64) if key == "official" else
                     np.asarray(value), units, what)


def read_record(g: h5py.Group, layout: Layout) -> Any:
    kwargs: dict[str, Any] = {k: _decode(g.attrs[k]) for k in layout.scalars}
    for key in layout.json:
        kwargs[key] = json.loads(_decode(g.attrs[key]))
    for key in layout.names:
        kwargs[key] = [_decode(v) for v in g[key][()]]
    for key in layout.arrays:
        kwargs[key] = g[key][()] if key in g else None
    for key in layout.bools:
        kwargs[key] = bool(kwargs[key])
    for key in layout.int_lists:
        kwargs[key] = [int(x) for x in kwargs[key]]
    if "official" in kwargs:
        kwargs["official"] = [bool(x) for x in kwargs["official"]]
    return layout.cls(**kwargs)


def read_measurement(g: h5py.Group) -> Measurement:
    a = g.attrs
    multi = int(a["multi"])
    metrics = json.loads(a["metrics"]) if "metrics" in a else ["t"]
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
        # Schema 1 had neither modes nor declared columns nor further metrics.
        mode=str(a.get("mode", "")),
        columns=tuple(json.loads(a["columns"])) if "columns" in a else (),
        metric=metrics[0],
        more_times={n: g[f"times_{n}"][()] for n in metrics[1:]},
        more_samples={n: g[f"samples_{n}"][()] for n in metrics[1:]},
        prepared={k[len("prepared_"):]: g[k][()] for k in g if k.startswith("prepared_")},
    )


def _decode(value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, np.generic):
        return value.item()
    return value


def load(path: str | Path) -> RunRecord:
    """Read a result file of any supported schema version."""
    # Without HDF5's file lock: a reader must never make a running writer fail.
    with h5py.File(path, "r", locking=False) as f:
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
                           results=[m for _, m in sorted(found, key=lambda t: t[0])])
        for name in f:
            if name in ("ranks", "results"):
                continue
            if version == 1 and "summary" in f[name].attrs:
                # Schema 1 stored b_eff's derived figures as JSON; they are read as they were.
                record.results.append(StoredSummary(
                    name, name, json.loads(_decode(f[name].attrs["summary"]))))
            elif suites.find(name) is not None and suites.get(name).layout:
                record.results.append(read_record(f[name], layout_of(name)))
    if record.attrs.get("status") == "running" and writer_gone(record.ranks):
        record.attrs["status"] = "aborted"
        record.attrs["status_note"] = watch.NOTE  # and its watcher was killed too
    return record


def writer_gone(ranks: list[dict[str, Any]]) -> bool:
    """Whether rank 0, which writes the file, is known to have ended: it ran on this host
    and its process is gone. From another host this cannot be told."""
    if not ranks or ranks[0].get("host") != socket.gethostname():
        return False
    pid = int(ranks[0].get("pid") or 0)
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False
