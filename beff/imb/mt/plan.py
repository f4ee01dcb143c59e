"""IMB-MT's schedule, a policy of the one measuring loop (:mod:`beff.bench.driver`).

Every rank runs T threads, each on its own duplicate of MPI_COMM_WORLD with its own buffers
(a :class:`~beff.imb.mt.kernels.Lane`) and its own :class:`~beff.bench.ctx.Ctx`. For each
``-count`` (the loop's "size": elements, not bytes) every thread sets up the benchmark's
kernel, and each timed batch runs the T kernels' ``run(n)`` at once, in threads
(:func:`in_threads`); the compiled loops hold no interpreter lock, so the threads' MPI calls
overlap. A call's figures are the T threads' seconds (NaN: a thread that sat out).

Fixed repetitions (``-repeat``, cut into ``--batches``), no calibration, no barrier of the
loop's own: IMB-MT's warm-up and barrier are inside its kernels, before the first batch.
The Measurement has one column per rank and thread (rank-major: column j is rank j // T,
thread j % T), its sizes in bytes (count x type size x T).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from beff.bench.ctx import Ctx
from beff.bench.plan import EveryRank, Run
from beff.bench.registry import BenchmarkSpec
from beff.core.config import RunConfig, stall_limit
from beff.imb.mt import kernels
from beff.results.model import OK, UNSUPPORTED

if TYPE_CHECKING:
    from mpi4py.MPI import Comm


def in_threads(threads: int, work: Callable[[int], Any]) -> list[Any]:
    """``work(k)`` for k = 0 .. threads - 1 at once: k = 0 in this thread, the others in
    threads started now and joined. An exception of thread 0 is raised at once (the others
    may wait for it forever: the job is aborted); another's after the join."""
    results: list[Any] = [None] * threads
    errors: list[BaseException | None] = [None] * threads

    def target(k: int) -> None:
        try:
            results[k] = work(k)
        except BaseException as exc:  # noqa: BLE001 - raised again in the main thread
            errors[k] = exc

    started = [threading.Thread(target=target, args=(k,), name=f"beff-mt-{k}", daemon=True)
               for k in range(1, threads)]
    for t in started:
        t.start()
    target(0)
    if errors[0] is not None:
        raise errors[0]
    for t in started:
        t.join()
    for exc in errors:
        if exc is not None:
            raise exc
    return results


class MTPlan(EveryRank):
    """IMB-MT's schedule. ``lanes(spec, most)`` gives each thread's Lane for a benchmark
    (buffers for ``most`` elements), ``comms`` the threads' communicators."""

    def __init__(self, cfg: RunConfig, comms: list[Any],
                 lanes: Callable[[BenchmarkSpec, int], list[kernels.Lane]]) -> None:
        super().__init__(cfg)
        o = cfg.options
        self.threads = int(o["threads"])
        self.type_size = int(o["type_size"])
        self.repeat, self.warmup = int(o["repeat"]), int(o["warmup"])
        self.window = int(o["window_size"])
        self.comms = comms
        self.make_lanes = lanes
        self.ctxs: list[Ctx] = []  # each thread's, for the benchmark being measured
        self.runs: list[Callable[[int], object]] = []  # and their kernels' run(n), per size

    # ---------------------------------------------------------------- what is measured
    def sizes(self, spec: BenchmarkSpec) -> list[int]:
        """The element counts ``spec`` runs: -count's, BarrierMT one (of none)."""
        return [0] if spec.name == "BarrierMT" else [int(c) for c in self.cfg.options["counts"]]

    def stall(self, size: int | None = None) -> float:
        """Generous for what a count's messages should take on a loaded node."""
        spec = self.spec
        windowed = spec is not None and spec.name in kernels.WINDOWED
        messages = (self.repeat + self.warmup) * (self.window if windowed else 1)
        count = max(self.sizes(spec)) if size is None and spec is not None else (size or 0)
        step = messages * self.threads * (20e-6 + count * self.type_size / 1e8)
        return stall_limit(self.cfg, step)

    def label(self, size: int) -> str:
        return f"{size} elements"

    def progress(self, spec: BenchmarkSpec, np_: int, size: int) -> str:
        return f"{spec.name} {size} x {self.threads} threads"

    def figures(self, spec: BenchmarkSpec) -> int:
        return self.threads  # one per thread

    # ---------------------------------------------------------------- one benchmark
    def open(self, ctx: Ctx, sizes: list[int]) -> None:
        self.spec, self.np_, self.sizes_ = ctx.spec, ctx.size, sizes
        if not self.ctxs or self.ctxs[0].spec is not ctx.spec:
            lanes = self.make_lanes(ctx.spec, max(sizes))
            self.ctxs = [Ctx(ctx.MPI, self.comms[k], self.cfg, ctx.spec, state=lanes[k])
                         for k in range(self.threads)]

    def enter(self, ctx: Ctx, size: int) -> Callable[[int], object]:
        """Every thread's kernel for ``size`` elements (``run(n)`` runs their n repetitions
        at once: each thread's seconds, NaN where it sat out). Their defects are ``ctx``'s
        once the kernels have ended (their checks run there)."""
        threads = self.ctxs

        def tally() -> None:
            ctx.defects += sum(t.defects for t in threads)

        ctx.resources.callback(tally)  # the last to run: after every kernel's end
        self.runs = []
        for t in threads:
            t.begin_size()
            self.runs.append(ctx.resources.enter_context(ctx.spec.kernel(t, size)))
        return lambda n: self.timed(ctx, self.runs[0], [n], 0.0, 0.0, "")[0]

    def timed(self, ctx: Ctx, run_all: Callable[[int], object], parts: list[int],
              per: float, stall: float, what: str) -> np.ndarray:
        """[batch, thread] seconds: each thread runs the size's batches one after the
        other (as one timed loop, cut), in its own thread, started for this size and joined
        after it, as IMB-MT opens an OpenMP parallel region per count."""
        threads, runs = self.ctxs, self.runs

        def work(k: int) -> np.ndarray:
            t = threads[k]
            t.batches = len(parts)
            secs = np.full(len(parts), np.nan)
            for t.batch, n in enumerate(parts):
                figures = runs[k](n)
                assert isinstance(figures, tuple)
                if figures[1]:  # 0: a thread that sat out
                    secs[t.batch] = figures[0]
            return secs

        return np.stack(in_threads(self.threads, work), axis=1)

    def repetitions(self, ctx: Ctx, run: Run, rcomm: Comm, i: int, size: int,
                    n0: int) -> tuple[int, str | None]:
        return self.repeat, None

    def warm_up(self, ctx: Ctx, run: Run, n: int) -> float:
        return 0.0  # in the kernels, before the first batch (IMB-MT's -warmup)

    def close_size(self, ctx: Ctx, rcomm: Comm, i: int, seconds: float) -> None:
        pass

    def factor(self, spec: BenchmarkSpec, np_: int) -> float:
        return 0.0

    def record(self, **fields: Any) -> dict[str, Any]:
        """Columns per rank and thread (rank-major), sizes in bytes, IMB-MT's attributes."""
        spec, o, T = self.spec, self.cfg.options, self.threads
        assert spec is not None
        samples = np.asarray(fields["samples"])  # [size, rank, batch, thread]
        S, R, B, _ = samples.shape
        secs = samples.transpose(0, 1, 3, 2).reshape(S, R * T, B)
        took = np.isfinite(secs).any(axis=2)
        counts = [int(c) for c in fields["sizes"]]
        status = [OK if s == OK and took[i].any() else UNSUPPORTED if s == OK else s
                  for i, s in enumerate(fields["status"])]
        attrs: dict[str, Any] = {
            "threads": T, "counts": counts,
            "datatype": o["datatype"], "type_size": self.type_size, "stride": o["stride"],
            "barrier": o["barrier"], "warm_up_repetitions": self.warmup,
            "column_order": "rank-major: column j is rank j // threads, thread j % threads",
            "participants": int(took[0].sum()),
        }
        windowed = spec.name in kernels.WINDOWED
        if windowed:
            attrs["window_size"] = self.window
        if not took.any():
            attrs["unsupported"] = (
                f"{spec.name} not run on {R} process{'es' if R != 1 else ''}: no rank has a "
                f"partner at -stride {o['stride']} (IMB-MT prints NO SUCCESSFUL "
                "EXECUTIONS)")
        fields.update(
            sizes=np.asarray(counts, dtype=np.int64) * self.type_size * T, status=status,
            samples=secs, batch_iters=np.repeat(np.asarray(fields["batch_iters"]), T, axis=1),
            group=np.repeat(np.asarray(fields["group"], dtype=np.int64), T),
            world_ranks=np.repeat(np.asarray(fields["world_ranks"], dtype=np.int64), T),
            thread=np.tile(np.arange(T, dtype=np.int64), R),
            time_scale=spec.time_scale / (self.window if windowed else 1),
            prepared={}, attrs={**fields["attrs"], **attrs})
        return fields
