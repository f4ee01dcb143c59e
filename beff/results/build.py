"""The one place a :class:`~beff.results.model.Measurement` is built.

The one measuring loop (:mod:`beff.bench.driver`, every IMB-style suite) hands over what it
timed, batch by batch, and :func:`from_batches` derives the rest with IMB's arithmetic: a
rank's time per iteration is the sum of its batches' seconds over the repetitions, times the
benchmark's scale. :func:`unmeasured` is the record of a benchmark that was not run,
:func:`imported` that of an original program's printed table (``beff import``), and
:func:`stored` one read back from a result file (:mod:`beff.results.archive`). The
Measurement checks its own shapes whichever way it is built.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from beff.results.model import UNSUPPORTED, Measurement


class Declared(Protocol):
    """What the builder reads of a benchmark's declaration
    (:class:`beff.bench.registry.BenchmarkSpec`)."""

    @property
    def suite(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> Any: ...  # an enum whose value is the kind's name
    @property
    def bw_scale(self) -> float: ...
    @property
    def time_scale(self) -> float: ...
    @property
    def metrics(self) -> tuple[Any, ...]: ...  # each with a name
    @property
    def description(self) -> str: ...
    @property
    def bytes_counted(self) -> str: ...
    @property
    def table_columns(self) -> tuple[str, ...]: ...


def _common(spec: Declared) -> dict[str, Any]:
    return {"suite": spec.suite, "benchmark": spec.name, "kind": spec.kind.value,
            "columns": spec.table_columns, "bw_scale": spec.bw_scale,
            "metric": spec.metrics[0].name}


def per_iteration(samples: np.ndarray, repetitions: np.ndarray, scale: float) -> np.ndarray:
    """[S, R] seconds per iteration from ``samples[S, R, B]``: the batches' sum over the
    repetitions, times ``scale``. NaN where a rank timed nothing (no finite batch: a size
    not measured, an RMA target, a thread that sat out)."""
    took = np.isfinite(samples).any(axis=2)
    reps = np.asarray(repetitions, dtype=np.float64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        times = np.nansum(samples, axis=2) / reps * scale
    return np.where(took & (reps > 0), times, np.nan)


def _one_copy(batch_iters: Any) -> np.ndarray:
    """``batch_iters[S, R, B]``, as one rank's row broadcast over the ranks (a read-only
    view) where every rank ran the same iterations, as the ranks of one group do: rank 0
    then holds one copy, not R (1.9 kB a rank at IMB's 24 sizes and 10 batches, for every
    process count it measures). The file stores every rank's, as before."""
    iters = np.asarray(batch_iters, dtype=np.int64)
    if iters.ndim == 3 and iters.shape[1] > 1 and bool((iters == iters[:, :1, :]).all()):
        return np.broadcast_to(iters[:, :1, :].copy(), iters.shape)
    return iters


def from_batches(spec: Declared, *, sizes: Any, repetitions: np.ndarray,
                 status: list[str], samples: np.ndarray, batch_iters: np.ndarray,
                 nprocs: int, group: Any = None, world_ranks: Any = None, ngroups: int = 1,
                 multi: int | None = None, mode: str = "", time_scale: float | None = None,
                 msgrate_factor: float = 0.0, defects: np.ndarray | None = None,
                 needed_gb: np.ndarray | None = None, checked: bool = False,
                 prepared: dict[str, np.ndarray] | None = None,
                 attrs: dict[str, Any] | None = None, backend: str | None = None,
                 iterations: np.ndarray | None = None, thread: Any = None) -> Measurement:
    """A measured benchmark: ``samples[S, R, B]`` (one metric) or ``[S, R, B, K]`` (the
    spec's K metrics, the first one reported) are each rank's timed seconds per batch,
    ``batch_iters[S, R, B]`` its iterations. ``group``/``world_ranks`` default to one group
    of ranks 0..R-1, ``thread`` (each column's thread, IMB-MT) to none; ``time_scale`` to
    the spec's; ``backend`` to the active one's name."""
    samples = np.asarray(samples, dtype=np.float64)
    if samples.ndim == 3:
        samples = samples[..., None]
    S, R = samples.shape[:2]
    reps = np.asarray(repetitions, dtype=np.int64)
    scale = spec.time_scale if time_scale is None else time_scale
    names = [m.name for m in spec.metrics][: samples.shape[3]]
    times = [per_iteration(samples[..., k], reps, scale) for k in range(len(names))]
    return Measurement(
        **_common(spec), nprocs=nprocs, ngroups=ngroups, multi=multi, idle=0,
        sizes=np.asarray(sizes, dtype=np.int64), repetitions=reps, status=list(status),
        times=times[0],
        group=np.zeros(R, dtype=np.int64) if group is None else np.asarray(group, np.int64),
        world_ranks=(np.arange(R, dtype=np.int64) if world_ranks is None
                     else np.asarray(world_ranks, dtype=np.int64)),
        samples=samples[..., 0], batch_iters=_one_copy(batch_iters),
        time_scale=scale, msgrate_factor=msgrate_factor, defects=defects,
        needed_gb=needed_gb, checked=checked, mode=mode,
        more_times={name: times[k] for k, name in enumerate(names) if k},
        more_samples={name: samples[..., k] for k, name in enumerate(names) if k},
        prepared=prepared or {}, iterations=iterations,
        thread=None if thread is None else np.asarray(thread, dtype=np.int64),
        attrs={"description": spec.description, "bytes_counted": spec.bytes_counted,
               "backend": backend or _backend(), **(attrs or {})})


def _backend() -> str:
    from beff.core import capi  # the measuring ranks': loaded there already

    return capi.active().name


def stored(**fields: Any) -> Measurement:
    """A Measurement as a result file stores it, every field read back
    (:func:`beff.results.archive.read_measurement`)."""
    return Measurement(**fields)


def unmeasured(spec: Declared, sizes: Any, nprocs: int, why: str, checked: bool,
               multi: int | None = None) -> Measurement:
    """The record of a benchmark not run at ``nprocs`` processes: every size UNSUPPORTED,
    nothing timed, ``why`` in its attributes (the tables print it)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    S, P = len(sizes), nprocs
    return Measurement(
        **_common(spec), nprocs=P, ngroups=1, multi=multi, idle=0, sizes=sizes,
        repetitions=np.zeros(S, dtype=np.int64), status=[UNSUPPORTED] * S,
        times=np.full((S, P), np.nan), group=np.zeros(P, dtype=np.int64),
        world_ranks=np.arange(P, dtype=np.int64), samples=np.full((S, P, 1), np.nan),
        batch_iters=np.zeros((S, P, 1), dtype=np.int64), time_scale=spec.time_scale,
        checked=checked,
        more_times={m.name: np.full((S, P), np.nan) for m in spec.metrics[1:]},
        more_samples={m.name: np.full((S, P, 1), np.nan) for m in spec.metrics[1:]},
        attrs={"description": spec.description, "bytes_counted": spec.bytes_counted,
               "unsupported": why})


def imported(*, suite: str, benchmark: str, kind: str, nprocs: int, ngroups: int,
             multi: int | None, idle: int, sizes: Any, repetitions: np.ndarray,
             status: list[str], group: Any, world_ranks: Any, columns: tuple[str, ...],
             printed: dict[str, np.ndarray], time_scale: float = 1.0, bw_scale: float = 1.0,
             metric: str = "t", mode: str = "", needed_gb: np.ndarray | None = None,
             attrs: dict[str, Any] | None = None) -> Measurement:
    """What an original program printed (``beff import``): no samples (zero batches), times
    NaN, the printed columns in ``printed[column][S, groups]``."""
    sizes = np.asarray(sizes, dtype=np.int64)
    S, R = len(sizes), len(world_ranks)
    return Measurement(
        suite=suite, benchmark=benchmark, kind=kind, nprocs=nprocs, ngroups=ngroups,
        multi=multi, idle=idle, sizes=sizes, repetitions=np.asarray(repetitions, np.int64),
        status=list(status), times=np.full((S, R), np.nan),
        group=np.asarray(group, dtype=np.int64), world_ranks=np.asarray(world_ranks, np.int64),
        samples=np.zeros((S, R, 0)), batch_iters=np.zeros((S, R, 0), dtype=np.int64),
        time_scale=time_scale, bw_scale=bw_scale, needed_gb=needed_gb, attrs=attrs or {},
        mode=mode, columns=columns, metric=metric, printed=printed)
