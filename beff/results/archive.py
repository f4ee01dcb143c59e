"""The HDF5 result archive: one self-describing, schema-versioned file per run.

Written by world rank 0 only, so that a run killed at any point, even inside a write, leaves
every completed result readable, and a reader never sees a half-written file:

* the file is built under a temporary name and appears complete (:func:`atomic.created`);
* while the run measures, the file holds the header (root attributes, ``/ranks``) and each
  result is written as a small file of its own in a hidden directory beside it,
  ``.NAME.RUN_ID.parts/`` (:mod:`beff.results.parts`), complete or absent: each update
  writes in proportion to its result, not to the file;
* a change of the header is made on a copy of the (small) file renamed over it
  (:func:`atomic.updated`);
* at the end (:meth:`ResultFile.finish`, or the watcher when rank 0 died) the parts are
  merged into a copy of the file that replaces it in one rename, and the directory is
  removed: one self-contained file. :func:`load` reads the file and any parts not merged yet.

The schema is documented in ``share/schema/``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from beff.core import suite as suites
from beff.core import testhooks
from beff.core.errors import BeffError
from beff.results import atomic, build, parts, watch
from beff.results.layout import Layout
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
              "batch", "placement", "overhead", "warnings", "yield_settings", "workaround_settings",
              "benchmark_comments", "io", "derived", "imported", "loops_compiled",
              "launches", "disturbance")
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
    "startup_imports_s": ("s", "start-up: from the process's start to MPI_Init (the "
                          "interpreter, imports, parsing)"),
    "startup_mpi_init_s": ("s", "start-up: MPI_Init"),
    "startup_setup_s": ("s", "start-up: from MPI_Init to the timed loops ready (validation, "
                        "facts, compiling or loading the loops)"),
    "startup_barrier_s": ("s", "start-up: the wait in the first barrier after that (for the "
                          "slowest rank)"),
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
    """Append-as-you-go writer; every call opens and closes what it writes.

    Before each write it checks that the file system has room for it (with a margin, and
    room to merge every result into the file at the end), so a full disk stops the run with
    a clear message before HDF5 could leave anything half written; every result written
    before stays readable. The file carries the run's id and each write checks it, so two
    runs can never mix their results in one file (the parts directory is named by it too).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.count = 0
        self.run_id = os.urandom(8).hex()  # as secrets.token_hex, without its import
        self._watcher: subprocess.Popen[bytes] | None = None
        self._parts: dict[str, int] = {}  # key -> bytes of its part, not merged yet
        self.finished = False
        self._checked: tuple[int, ...] | None = None  # the file as last found to be ours
        self._finishing = threading.RLock()
        self.launches: list[dict[str, Any]] = []  # a resumed file's launches, this one last

    def create(self, attrs: dict[str, Any], ranks: list[dict[str, Any]],
               exclusive: bool = False) -> None:
        """Create the file (``exclusive``: fail if it exists, for generated names). It is
        built aside and appears complete, so a reader never finds it half written."""
        try:
            self._room(FILE_OVERHEAD_BYTES)
            with atomic.created(self.path, exclusive) as new:
                with h5py.File(new, "w") as f:
                    self._create(f, attrs, ranks)
                _test_pause(testhooks.slow_create(), "creating the result file")
        except FileExistsError:
            raise BeffError(f"cannot create result file {self.path}: another run is writing "
                            f"{self.path}") from None
        except (OSError, RuntimeError) as exc:  # h5py raises both
            raise BeffError(f"cannot create result file {self.path}: "
                            f"{_reason(self.path, exc)}") from exc
        if not exclusive:
            parts.remove_others(self.path, self.run_id)  # the replaced file's run's results

    def resume(self, record: RunRecord, ranks: list[dict[str, Any]],
               launch: dict[str, Any]) -> None:
        """Make the file of an earlier run of the same configuration (``record``, as
        :func:`load` read it) this run's, to append what that run did not measure
        (``--resume``), in one update that is all or nothing: the earlier run's results
        still in parts are merged in, the file takes this run's id, status ``running`` and
        ranks table, and ``launches`` gains ``launch`` (the first resume also records the
        earlier run's own launch). New results are numbered after the ones there."""
        old = str(record.attrs.get("run_id") or "")
        a = record.attrs
        launches = list(a.get("launches") or [{
            "run_id": old, "started": a.get("created"), "command_line": a.get("command_line"),
            "nprocs": a.get("nprocs"),
            "hosts": (a.get("placement") or {}).get("hosts", []), "batch": a.get("batch", {}),
            "status": a.get("status"), "results": [r.key for r in record.results]}])
        if launches[-1].get("run_id") == old:
            launches[-1]["status"] = a.get("status")
        self.launches = [*launches, {**launch, "run_id": self.run_id, "results": []}]
        try:
            self._room(FILE_OVERHEAD_BYTES + self.path.stat().st_size)
            with atomic.updated(self.path) as copy, h5py.File(copy, "a") as f:
                if str(_decode(f.attrs.get("run_id", ""))) != old:
                    raise BeffError(f"cannot resume {self.path}: another run wrote it since "
                                    "it was read")
                if old:
                    parts.merge_into(f, parts.directory(self.path, old))
                del f["ranks"]
                self._ranks(f, ranks)
                self._set(f, {"run_id": self.run_id, "status": "running",
                              "launches": self.launches})
                for key in ("finished", "status_note"):
                    if key in f.attrs:
                        del f.attrs[key]
                f.attrs["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        except (OSError, RuntimeError) as exc:  # h5py raises both
            raise BeffError(f"cannot resume {self.path}: {_reason(self.path, exc)}") from exc
        self.count = sum(1 for r in record.results if isinstance(r, Measurement))
        parts.remove_others(self.path, self.run_id)  # the earlier run's, merged now

    def _create(self, f: h5py.File, attrs: dict[str, Any], ranks: list[dict[str, Any]]) -> None:
        f.attrs["format"] = FORMAT_NAME
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["status"] = "running"
        f.attrs["run_id"] = self.run_id
        for key, value in attrs.items():
            if key in ("format", "schema_version", "status", "run_id"):
                continue  # this file's own (a record read from another file carries its)
            f.attrs[key] = json.dumps(value, sort_keys=True) if key in JSON_ATTRS else value
        self._ranks(f, ranks)
        f.create_group("results")

    @staticmethod
    def _ranks(f: h5py.File, ranks: list[dict[str, Any]]) -> None:
        g = f.create_group("ranks")
        for col, (units, what) in RANK_COLUMNS.items():
            values = [r.get(col, "") for r in ranks]
            if col.startswith("startup_") and not all(col in r for r in ranks):
                continue  # not measured (an imported log, the Python API's ranks)
            if values and isinstance(values[0], str):
                d = g.create_dataset(col, data=np.array(values, dtype=object), dtype=_STR)
            elif values and isinstance(values[0], float):
                d = g.create_dataset(col, data=np.asarray(values, dtype=np.float64))
            else:
                d = g.create_dataset(col, data=np.asarray(values, dtype=np.int64))
            d.attrs["units"] = units
            d.attrs["description"] = what

    def _room(self, nbytes: int, factor: int = 2) -> None:
        """Raise (disk full) unless the file system has ``factor`` times ``nbytes`` and a
        margin free."""
        where = self.path.resolve().parent
        try:
            free = shutil.disk_usage(where).free
        except OSError:
            return
        need = factor * nbytes + FILE_OVERHEAD_BYTES // 4
        if free < need:
            if not self.path.exists():
                raise BeffError(f"disk full: {free:,} bytes free in {where}, the result file "
                                f"needs {need:,} to start; nothing was measured (free space "
                                "there, or name another place with -o)")
            raise BeffError(f"disk full: {free:,} bytes free in {where}, the next update "
                            f"needs {need:,} ({nbytes:,} to write, room to merge the results "
                            "into the file at the end, and a margin); the results written so "
                            f"far stay readable in {self.path}")

    def _check_owner(self, f: h5py.File) -> None:
        owner = _decode(f.attrs.get("run_id", ""))
        if owner != self.run_id:
            raise BeffError(f"{self.path} now belongs to another run (id {owner}); this "
                            "run stops writing there (use a file of its own with -o)")

    @contextlib.contextmanager
    def _update(self, nbytes: int, factor: int = 2) -> Iterator[h5py.File]:
        """The file, open for one update that is all or nothing (:mod:`atomic`): a run
        killed at any moment leaves the file as it was before the update or after it. The
        update works on a copy of the file, small until the results are merged."""
        try:
            self._room(nbytes + self.path.stat().st_size, factor)  # the copy, then the update
            with atomic.updated(self.path) as copy, h5py.File(copy, "a") as f:
                self._check_owner(f)
                yield f
                f.attrs["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        except (OSError, RuntimeError) as exc:  # h5py raises both
            raise self._failure(exc) from exc

    def _add_part(self, key: str, nbytes: int, write: Callable[[h5py.File], None]) -> None:
        """Write group ``key`` as a part of its own (:mod:`parts`): complete or absent, and
        replacing an earlier part of the same key."""
        try:
            # the part now, and its copy when the results are merged into the file at the end
            self._room(nbytes + self.path.stat().st_size + sum(self._parts.values()))
            found = _identity(self.path)
            if found is None or found != self._checked:  # replaced or changed since: read it
                with h5py.File(self.path, "r", locking=False) as f:
                    self._check_owner(f)
                self._checked = found
            # under the finishing lock: an abort on a signal (another rank failed) waits for
            # this part and merges it, instead of finishing the file while it is written
            with self._finishing:
                if self.finished:  # the abort finished the file first: too late for it
                    return
                with parts.written(self.path, self.run_id, key) as f:
                    write(f)
                done = parts.directory(self.path, self.run_id) / parts.part_name(key)
                self._parts[key] = done.stat().st_size
        except (OSError, RuntimeError) as exc:  # h5py raises both
            raise self._failure(exc) from exc

    def _failure(self, exc: BaseException) -> BeffError:
        """Why a write failed, in one line: the file was taken over by another run (its
        ``--force`` removes this run's parts, maybe while one is written) or removed, else
        what the system said."""
        try:
            with h5py.File(self.path, "r", locking=False) as f:
                owner = _decode(f.attrs.get("run_id", ""))
        except (OSError, RuntimeError):
            owner = None
        if owner is not None and owner != self.run_id:
            return BeffError(f"{self.path} now belongs to another run (id {owner}); this run "
                             "stops writing there (use a file of its own with -o)")
        if not self.path.exists():
            return BeffError(f"{self.path} was removed while this run wrote it; this run stops "
                             "writing there")
        return BeffError(f"cannot write results to {self.path}: {_reason(self.path, exc)}")

    def set_attrs(self, **attrs: Any) -> None:
        with self._update(0) as f:  # a few bytes: allowed down to the last margin
            self._set(f, attrs)

    def add(self, result: Result) -> None:
        """Write one result and flush it to disk: a Measurement (one benchmark at one process
        count) under /results, or a suite's typed record in the group named after its suite
        (rewritten when the suite emits it again, e.g. after each b_eff repetition)."""
        if isinstance(result, Measurement):
            m = result
            if self.launches:  # a resumed file: which launch measured it
                m.attrs["launch"] = len(self.launches)
                self.launches[-1]["results"].append(m.key)
            size = sum(a.nbytes for a in (m.times, m.samples, m.batch_iters,
                                          *m.more_times.values(), *m.more_samples.values(),
                                          *m.prepared.values(), *m.printed.values(),
                                          *([] if m.iterations is None else [m.iterations])))
            order = self.count
            self._add_part(f"results/{m.key}", size + FILE_OVERHEAD_BYTES,
                           lambda f: write_measurement(f.require_group("results"), m, order))
            self.count += 1
            return
        if isinstance(result, StoredSummary):
            stored = result
            self._add_part(stored.key, FILE_OVERHEAD_BYTES,
                           lambda f: write_summary(f.create_group(stored.key), stored))
            return
        layout = layout_of(result.suite)
        if self.launches and result.key not in self.launches[-1]["results"]:
            self.launches[-1]["results"].append(result.key)  # a grown record (b_eff's)
        size = sum(v.nbytes for v in vars(result).values() if isinstance(v, np.ndarray))
        self._add_part(layout.group, size + FILE_OVERHEAD_BYTES,
                       lambda f: write_record(f.create_group(layout.group), result, layout))

    def finish(self, status: str, **more: Any) -> None:
        """Record the end of the run (and the attributes ``more``, in the same update) and
        merge every result into the file: one rename makes it one self-contained file.
        Without room for the merge, the status is still recorded, the results stay readable
        (:func:`load` reads the parts), and it raises."""
        with self._finishing:  # the main thread's, or the abort's on a signal: one at a time
            if self.finished:
                return
            self._finish(status, more)

    def _finish(self, status: str, more: dict[str, Any]) -> None:
        attrs = {**more, "status": status,
                 "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if self.launches:
            self.launches[-1]["status"] = status
            attrs["launches"] = self.launches
        where = parts.directory(self.path, self.run_id)
        try:
            # the merged copy: the file and its parts (each update's 2x margin kept it free)
            with self._update(parts.total_size(where) + FILE_OVERHEAD_BYTES, factor=1) as f:
                parts.merge_into(f, where)
                self._set(f, attrs)
                _test_pause(testhooks.slow_merge(), "merging the results")
        except BeffError:
            if not parts.listing(where):
                raise
            self.set_attrs(**attrs)  # the status at least, in a copy of the small file
            raise
        parts.remove(where)
        self._parts.clear()
        self.finished = True
        watch.finished(self._watcher)

    @staticmethod
    def _set(f: h5py.File, attrs: dict[str, Any]) -> None:
        for key, value in attrs.items():
            f.attrs[key] = json.dumps(value, sort_keys=True) if key in JSON_ATTRS else value

    def _aborted(self) -> None:
        """A run aborted after its file was finished (a rank stopped after the last result)
        keeps its status: every result is there. A signal that comes while the main thread
        merges waits for that merge (and then finds the file finished)."""
        if not self._finishing.acquire(timeout=MERGE_WAIT_S):
            return  # the merge is stuck: the watcher finishes the file once this rank is gone
        try:
            if not self.finished:
                self._finish("aborted", {})
        finally:
            self._finishing.release()

    def watch(self) -> None:
        """Rank 0, before it creates the file: a watcher process that, when this process is
        killed (a rank failing on another host, or a killed job), removes a copy it was
        building (the file's creation too), marks the file aborted and merges the results
        into it."""
        if self._watcher is None:
            self._watcher = watch.start(self.path, self.run_id)

    def guard(self) -> None:
        """Rank 0, once the file exists: an exception here or a signal marks it aborted (the
        abort hook), and the watcher (:meth:`watch`) when this process is killed."""
        from beff.core import mpi as _mpi

        self.watch()
        _mpi.on_abort(self._aborted)


MERGE_WAIT_S = 10.0  # how long an abort waits for the main thread's final merge


def _test_pause(seconds: float | None, what: str) -> None:
    """Test-only: the hooks :func:`beff.core.testhooks.slow_merge` (the final merge, in the
    file's update) and :func:`~beff.core.testhooks.slow_create` (the file's creation, in its
    working copy) say so on stderr and last ``seconds`` more, so that a test can kill the job
    there."""
    if seconds is not None:
        sys.stderr.write(f"beff: test hook: {what}\n")
        sys.stderr.flush()
        time.sleep(seconds)


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
    if m.thread is not None:
        _dataset(g, "thread", m.thread, "1", "thread of each column (IMB-MT; its rank: world_rank)")
    if m.needed_gb is not None:
        _dataset(g, "needed_gb", m.needed_gb, "GiB", "buffer memory per rank (IMB -mem check)")
    if m.defects is not None:
        _dataset(g, "defects", m.defects, "B", "received bytes that differed (--check)")
    if m.iterations is not None:
        _dataset(g, "iterations", m.iterations, "s",
                 "--per-iteration: single timed iterations per size and rank (time_scale "
                 "applied; every stride-th one, attribute iteration_stride); NaN pads")
    for name in m.more_times:
        _dataset(g, f"times_{name}", m.more_times[name], "s",
                 f"metric {name}: per size and rank, timed seconds / repetitions * time_scale")
        _dataset(g, f"samples_{name}", m.more_samples[name], "s",
                 f"metric {name}: raw timed seconds per size, rank and batch")
    for name, values in m.prepared.items():
        _dataset(g, f"prepared_{name}", values, "1",
                 f"per size and rank: {name}, recorded by the kernel's per-size preparation")
    for name, values in m.printed.items():
        _dataset(g, f"printed_{name}", values, "",
                 f"per size and group: column {name} as the imported original printed it")


def write_summary(g: h5py.Group, stored: StoredSummary) -> None:
    """A result stored as its figures (an imported original's): JSON, in the keys of the
    suite's summary."""
    g.attrs["suite"] = stored.suite
    g.attrs["summary"] = json.dumps(stored.summary, sort_keys=True)


def read_summary(g: h5py.Group, name: str) -> StoredSummary:
    return StoredSummary(str(_decode(g.attrs.get("suite", name))), name,
                         json.loads(_decode(g.attrs["summary"])))


# A suite's typed record (b_eff's /beff, b_eff_io's /beffio, the map's) is stored as its
# Layout (beff.results.layout) says.
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
            _dataset(g, key, np.asarray(value, dtype=np.int64) if key in layout.bool_arrays
                     else np.asarray(value), units, what)


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
    for key in layout.bool_arrays:
        if kwargs[key] is not None:
            kwargs[key] = [bool(x) for x in kwargs[key]]
    return layout.cls(**kwargs)


def read_measurement(g: h5py.Group) -> Measurement:
    a = g.attrs
    multi = int(a["multi"])
    metrics = json.loads(a["metrics"]) if "metrics" in a else ["t"]
    return build.stored(
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
        iterations=g["iterations"][()] if "iterations" in g else None,
        thread=g["thread"][()] if "thread" in g else _old_threads(g),
        checked=bool(a["checked"]),
        attrs=json.loads(a.get("extra", "{}")),
        # Schema 1 had neither modes nor declared columns nor further metrics.
        mode=str(a.get("mode", "")),
        columns=tuple(json.loads(a["columns"])) if "columns" in a else (),
        metric=metrics[0],
        more_times={n: g[f"times_{n}"][()] for n in metrics[1:]},
        more_samples={n: g[f"samples_{n}"][()] for n in metrics[1:]},
        prepared={k[len("prepared_"):]: g[k][()] for k in g if k.startswith("prepared_")},
        printed={k[len("printed_"):]: g[k][()] for k in g if k.startswith("printed_")},
    )


def _old_threads(g: h5py.Group) -> np.ndarray | None:
    """The thread of each column of an IMB-MT result written before the file kept it: its
    columns are rank-major (``column_order``), T = the attribute ``threads``."""
    extra = json.loads(g.attrs.get("extra", "{}"))
    if "threads" not in extra or "column_order" not in extra:
        return None
    T, R = int(extra["threads"]), len(g["world_rank"])
    return np.tile(np.arange(T, dtype=np.int64), R // T) if T and R % T == 0 else None


def _decode(value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, np.generic):
        return value.item()
    return value


LOAD_TRIES = 20  # reads of a file that was replaced (merged, or its status set) meanwhile


def load(path: str | Path) -> RunRecord:
    """Read a result file of any supported schema version, with the results of a running
    (or killed) run that are still in parts of their own (:mod:`parts`).

    Without HDF5's file lock, and never writing: a reader must never make a running writer
    fail. The file and its parts are read in that order; if the file was replaced meanwhile
    (the parts merged into it, and removed), it is read again.
    """
    path = Path(path)
    for attempt in range(LOAD_TRIES):
        before = _identity(path)
        try:
            record, found, typed = _read_file(path)
            run_id = record.attrs.get("run_id")
            if run_id:
                _read_parts(record, found, typed, parts.directory(path, str(run_id)))
        except DamagedFile:
            if _identity(path) == before or attempt + 1 == LOAD_TRIES:
                raise
            continue  # written or replaced while being read: read it again
        except OSError as exc:
            now = _identity(path)
            if now is None and before is not None:  # removed while HDF5 opened it
                raise FileNotFoundError(errno.ENOENT, "removed while being read",
                                        str(path)) from exc
            # The whole identity, not only the inode: a file removed and created again
            # can reuse its inode number, and then only its times tell them apart.
            if now is None or now == before or attempt + 1 == LOAD_TRIES:
                raise
            # another file took the name meanwhile, or one appeared where there was none
            # (HDF5 opened the name as a writer replaced it): read that
            continue
        if _identity(path) == before:
            break
    record.results = [m for _, m in sorted(found.values(), key=lambda t: t[0])]
    record.results += typed.values()
    if record.attrs.get("launches"):  # resumed: the first launch's results carry no number
        for m in record.measurements:
            m.attrs.setdefault("launch", 1)
    if record.attrs.get("status") == "running" and writer_gone(record.ranks):
        record.attrs["status"] = "aborted"
        record.attrs["status_note"] = watch.NOTE  # and its watcher was killed too
    return record


def _identity(path: Path) -> tuple[int, ...] | None:
    """Which file ``path`` names (device and inode first), and its size and times."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class DamagedFile(ValueError):
    """A result file HDF5 opens but cannot read in full: which file, and where."""


# What h5py raises on a damaged object (bad header, checksum, truncated data) or what a
# damaged attribute raises when decoded.
_DAMAGE = (OSError, RuntimeError, KeyError, TypeError, IndexError, AttributeError,
           UnicodeError, ValueError)


def _read_file(path: Path) -> tuple[RunRecord, dict[str, tuple[int, Measurement]],
                                    dict[str, Any]]:
    """The file's attributes, ranks, measurements (key -> order, result) and typed records
    (group -> record). A file HDF5 opens but cannot read raises DamagedFile naming the
    object it was reading."""
    with h5py.File(path, "r", locking=False) as f:
        where = ["/ (the file's attributes)"]
        try:
            return _read_open(path, f, where)
        except DamagedFile:
            raise
        except _DAMAGE as exc:
            reason = " ".join(str(exc).split()).strip("'\"") or type(exc).__name__
            raise DamagedFile(f"cannot read {path}: it is damaged or truncated (at {where[0]}: "
                              f"{reason})") from None


def _read_open(path: Path, f: h5py.File, where: list[str]) -> tuple[
        RunRecord, dict[str, tuple[int, Measurement]], dict[str, Any]]:
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
        where[0] = "/ranks"
        cols = {c: [_decode(v) for v in f["ranks"][c][()]] for c in f["ranks"]}
        n = len(next(iter(cols.values()), []))
        ranks = [{c: cols[c][i] for c in cols} for i in range(n)]
    found: dict[str, tuple[int, Measurement]] = {}

    def visit(name: str, obj: Any) -> None:
        where[0] = f"/results/{name}"
        if isinstance(obj, h5py.Group) and "benchmark" in obj.attrs:
            found[name] = (int(obj.attrs["order"]), read_measurement(obj))

    if "results" in f:
        where[0] = "/results"
        f["results"].visititems(visit)
    record = RunRecord(attrs=attrs, ranks=ranks)
    typed: dict[str, Any] = {}
    for name in f:
        if name in ("ranks", "results"):
            continue
        where[0] = f"/{name}"
        if "summary" in f[name].attrs:
            # Schema 1 stored b_eff's derived figures as JSON, and an imported original's
            # figures are stored so: they are read as they were.
            typed[name] = read_summary(f[name], name)
        elif suites.find(name) is not None and suites.get(name).layout:
            typed[name] = read_record(f[name], layout_of(name))
    return record, found, typed


def _read_parts(record: RunRecord, found: dict[str, tuple[int, Measurement]],
                typed: dict[str, Any], where: Path) -> None:
    """Add the results still in parts: each replaces the file's copy of its group, which,
    if there is one, the last merge made from that very part."""
    for key, f in parts.each(where):
        if key.startswith("results/"):
            g = f[key]
            found[key[len("results/"):]] = (int(g.attrs["order"]), read_measurement(g))
        elif "summary" in f[key].attrs:
            typed[key] = read_summary(f[key], key)
        elif suites.find(key) is not None and suites.get(key).layout:
            typed[key] = read_record(f[key], layout_of(key))
        updated = _decode(f.attrs.get("updated", ""))
        if isinstance(updated, str) and updated > str(record.attrs.get("updated", "")):
            record.attrs["updated"] = updated


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
