"""The in-memory result model shared by the driver, the HDF5 store and the renderers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

# Status of one message size.
OK = "ok"
TIME_OUT = "time-out"
OUT_OF_MEM = "out-of-mem"
SKIPPED = "skipped"
UNSUPPORTED = "unsupported"  # the MPI library lacks a call the benchmark needs
FAILED = "failed"  # an error ended the benchmark here (attrs["failure"] says which)
STATUSES = frozenset({OK, TIME_OUT, OUT_OF_MEM, SKIPPED, UNSUPPORTED, FAILED})


class MeasurementError(ValueError):
    """A Measurement whose arrays do not fit together (a bug where it was built)."""

# The table columns of IMB's benchmark classes (ids of beff.results.columns). A benchmark
# declares its own, or takes its class's; files of schema v1, which did not store them,
# get them from here.
COLUMNS_BY_KIND: dict[str, tuple[str, ...]] = {
    "single_transfer": ("bytes", "repetitions", "t", "mbytes_per_sec"),
    "parallel_transfer": ("bytes", "repetitions", "t_min", "t_max", "t_avg", "mbytes_per_sec"),
    "parallel_transfer_msg_rate": ("bytes", "repetitions", "mbytes_per_sec", "msg_per_sec"),
    "collective": ("bytes", "repetitions", "t_min", "t_max", "t_avg"),
    "sync": ("repetitions", "t_min", "t_max", "t_avg"),
}


@dataclass
class Measurement:
    """One benchmark at one process count: every size, every participating rank.

    ``times[s, r]`` is rank r's reported time per iteration in seconds (timed seconds divided
    by the repetitions, times the spec's time_scale); NaN where the size was not measured.
    ``samples[s, r, b]`` are rank r's raw timed seconds of batch b (``batch_iters[s, r, b]``
    iterations), before any scaling. Both hold the benchmark's first metric (``metric``,
    "t" for IMB-MPI1); further metrics (NBC's t_pure, t_CPU ...) are in ``more_times`` and
    ``more_samples`` under their names, shaped alike. ``prepared[name][s, r]`` holds what a
    kernel's per-size preparation recorded (e.g. a calibration). ``mode`` is the mode axis
    ("" for benchmarks without modes); ``columns`` the table columns the benchmark declared.

    An imported result (``beff import`` of IMB's text) has no samples: ``times`` is NaN,
    ``samples`` and ``batch_iters`` have no batches, and ``printed[column][s, g]`` holds what
    the original printed, by column id (:mod:`beff.results.columns`), per size and group
    (one group unless ``-multi 1``). Empty for measured results.
    """

    suite: str
    benchmark: str
    kind: str
    nprocs: int
    ngroups: int
    multi: int | None
    idle: int
    sizes: np.ndarray
    repetitions: np.ndarray
    status: list[str]
    times: np.ndarray
    group: np.ndarray
    world_ranks: np.ndarray
    samples: np.ndarray
    batch_iters: np.ndarray
    time_scale: float = 1.0
    bw_scale: float = 1.0
    msgrate_factor: float = 0.0
    defects: np.ndarray | None = None
    needed_gb: np.ndarray | None = None
    checked: bool = False
    attrs: dict[str, Any] = field(default_factory=dict)
    mode: str = ""
    columns: tuple[str, ...] = ()
    metric: str = "t"
    more_times: dict[str, np.ndarray] = field(default_factory=dict)
    more_samples: dict[str, np.ndarray] = field(default_factory=dict)
    prepared: dict[str, np.ndarray] = field(default_factory=dict)
    printed: dict[str, np.ndarray] = field(default_factory=dict)
    # --per-iteration: [S, R, M] seconds of single timed iterations (time_scale applied),
    # every stride-th of a size's, NaN past a rank's last (beff.bench.iterations)
    iterations: np.ndarray | None = None
    # IMB-MT: the thread of each column (columns are then (world rank, thread) pairs,
    # ``world_ranks`` giving the rank); None where each rank runs one thread
    thread: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not self.columns:
            self.columns = COLUMNS_BY_KIND.get(self.kind, COLUMNS_BY_KIND["collective"])
        self.check()

    def check(self) -> None:
        """Raise MeasurementError unless the arrays fit together: S sizes, R columns (the
        ranks that took part; IMB-MT: ranks x threads, rank-major), B batches.

        ``sizes``, ``repetitions``, ``status``, ``defects`` and ``needed_gb`` are [S];
        ``times`` and every ``more_times``/``prepared`` are [S, R]; ``group`` and
        ``world_ranks`` (and IMB-MT's ``thread``) are [R]; ``samples``, ``batch_iters`` and
        every ``more_samples`` are [S, R, B] (B may be 0: an imported result); ``printed``
        arrays are [S, groups].
        """
        S = len(self.sizes)
        where = f"{self.suite} {self.benchmark} at {self.nprocs} processes"

        def need(ok: bool, what: str) -> None:
            if not ok:
                raise MeasurementError(f"{where}: {what}")

        def shape(name: str, value: Any, want: tuple[int | None, ...]) -> None:
            got = np.shape(value)
            need(len(got) == len(want) and all(w is None or g == w
                                               for g, w in zip(got, want, strict=False)),
                 f"{name} has shape {got}, not ("
                 + ", ".join("*" if w is None else str(w) for w in want)
                 + ("," if len(want) == 1 else "") + ")")

        shape("sizes", self.sizes, (S,))
        shape("repetitions", self.repetitions, (S,))
        need(len(self.status) == S, f"{len(self.status)} statuses for {S} sizes")
        unknown = set(self.status) - STATUSES
        need(not unknown, f"unknown status {sorted(unknown)}")
        shape("times", self.times, (S, None))
        R = int(np.shape(self.times)[1])
        shape("group", self.group, (R,))
        shape("world_ranks", self.world_ranks, (R,))
        if self.thread is not None:
            shape("thread", self.thread, (R,))
            pairs = set(zip(np.asarray(self.world_ranks).tolist(),
                            np.asarray(self.thread).tolist(), strict=True))
            need(len(pairs) == R, "a (rank, thread) pair names two columns")
        shape("samples", self.samples, (S, R, None))
        B = int(np.shape(self.samples)[2])
        shape("batch_iters", self.batch_iters, (S, R, B))
        for name, value in self.more_times.items():
            shape(f"times of {name}", value, (S, R))
        for name, value in self.more_samples.items():
            shape(f"samples of {name}", value, (S, R, B))
        for name, value in self.prepared.items():
            shape(f"prepared {name}", value, (S, R))
        for name, value in self.printed.items():
            shape(f"printed {name}", value, (S, None))
        if self.defects is not None:
            shape("defects", self.defects, (S,))
        if self.needed_gb is not None:
            shape("needed_gb", self.needed_gb, (S,))
        if self.iterations is not None:
            shape("iterations", self.iterations, (S, R, None))

    @property
    def threads(self) -> int:
        """Threads per rank: IMB-MT's T, else 1."""
        return 1 if self.thread is None or not len(self.thread) else int(np.max(self.thread)) + 1

    @property
    def metrics(self) -> tuple[str, ...]:
        """Names of the timed metrics, the first one being ``times``."""
        return (self.metric, *self.more_times)

    def metric_times(self, name: str) -> np.ndarray:
        """[size, rank] seconds per iteration of metric ``name``."""
        return self.times if name == self.metric else self.more_times[name]

    @property
    def key(self) -> str:
        """Stable group name inside the result file."""
        return measurement_key(self.suite, self.benchmark, self.mode, self.nprocs, self.multi)

    @property
    def table_groups(self) -> list[int | None]:
        """The groups that tables, figures and ``beff compare`` show one by one: each group
        of a ``-multi 1`` run (IMB prints a row per group; of an imported text, the groups it
        printed), else [None]: all ranks together (``-multi 0`` pools the groups)."""
        if self.multi != 1 or self.ngroups < 2:
            return [None]
        if self.printed:
            n = min(v.shape[1] for v in self.printed.values())
            return list(range(n)) if n > 1 else [None]
        return list(range(self.ngroups))

    @property
    def unsupported(self) -> bool:
        """The MPI library lacked a call the benchmark needs: nothing was measured."""
        return bool(self.status) and all(s == UNSUPPORTED for s in self.status)

    @property
    def failed(self) -> bool:
        """A time-out, out-of-mem or failed row ends the benchmark, later process counts
        included."""
        return TIME_OUT in self.status or OUT_OF_MEM in self.status or FAILED in self.status


def measurement_key(suite: str, benchmark: str, mode: str, nprocs: int,
                    multi: int | None) -> str:
    """The key (and group name in the result file) of one benchmark's measurement in one
    mode at one process count."""
    return f"{suite}/{benchmark}{f'/{mode}' if mode else ''}/np{nprocs}" + (
        f"-multi{multi}" if multi is not None else "")


class Result(Protocol):
    """What a suite's run stores: a record under a stable key, of a suite. IMB-style suites
    store :class:`Measurement` objects; b_eff and b_eff_io one typed record each."""

    @property
    def suite(self) -> str: ...

    @property
    def key(self) -> str: ...


@dataclass
class StoredSummary:
    """A result stored as its derived figures instead of what they derive from: b_eff's
    summary in a schema-1 file, or the figures an original program printed (``beff import``
    of b_eff's or b_eff_io's ``.sum``), in the keys of the suite's summary. Read as it was."""

    suite: str
    key: str
    summary: dict[str, Any]


@dataclass
class RunRecord:
    """Everything in one result file: run metadata, the ranks, and the results in order."""

    attrs: dict[str, Any]
    results: list[Any] = field(default_factory=list)  # Result objects
    ranks: list[dict[str, Any]] = field(default_factory=list)

    def put(self, result: Any) -> None:
        """Add ``result``, or replace the result stored under its key."""
        for i, old in enumerate(self.results):
            if old.key == result.key:
                self.results[i] = result
                return
        self.results.append(result)

    @property
    def measurements(self) -> list[Measurement]:
        """The IMB-style results."""
        return [r for r in self.results if isinstance(r, Measurement)]

    def result(self, suite: str) -> Any:
        """The first result of ``suite``, or None."""
        return next((r for r in self.results if r.suite == suite), None)

    @property
    def suite(self) -> str:
        """The suite that wrote the file (schema 1 files: from their results)."""
        name = self.attrs.get("suite")
        if name:
            return str(name)
        return str(self.results[0].suite) if self.results else "mpi1"
