"""The one runner: every suite, IMB's, b_eff and b_eff_io, runs through :func:`run`.

Before MPI (every rank): the options are parsed by the command. After MPI_Init, rank 0
validates (the config, the output format against the suite's, the suite's own rules in
:meth:`Job.prepare`) and broadcasts the job. Then, on every rank: the watchdog, the timed
loops and each rank's facts (:func:`beff.core.runtime.begin`), the suite's own start, and the
measurements. Rank 0 alone writes the result file, one update per result, and renders each
result as it is stored (a suite whose result grows during the run renders it at the end).
The validated configuration is never changed: what a suite derives from it is stored beside
it as ``derived``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from beff.core import disturbance, runtime
from beff.core import suite as suites
from beff.core.config import (
    RunConfig,
    build_config,
    check_output_kind,
    check_output_path,
    default_output,
    stall_limit,
    thread_level_before_init,
)
from beff.core.errors import STRICT, BeffError, UsageError
from beff.core.metadata import placement, run_attrs
from beff.core.mpi import (
    OMPI_ONE_SIDED_SETTINGS,
    env_rank,
    guard,
    injected_stop,
    quiet_barrier,
)
from beff.core.progress import Bar, make_progress
from beff.results.model import Result, RunRecord

if TYPE_CHECKING:  # rank 0's side: imported there only (h5py, rich)
    from beff.render.live import LiveRun, Notes

Emit = Callable[[Result], None]


class Job(Protocol):
    """A suite's part of one run. Created and prepared on rank 0, then sent to every rank,
    so it holds plain data until :meth:`start`."""

    streaming: bool  # results are final as they come (IMB); else rendered at the end
    derived: dict[str, Any]  # what it derived from the config (stored as such)

    @property
    def network(self) -> bool | str:
        """Its figures are about the network: warn when all ranks share a node (True: in
        the words of beff.results.warnings.ONE_NODE; a text: in the suite's own, b_eff's)."""

    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        """Rank 0: the suite's own checks (raise UsageError) and derived values."""

    def names(self) -> list[str]:
        """The benchmarks it runs, in order (stored, and IMB's text header lists them)."""

    def start(self, MPI: types.ModuleType, cfg: RunConfig,
              ranks: list[dict[str, Any]] | None) -> dict[str, Any]:
        """Every rank, collective: its own start; returns root attributes to store.

        ``ranks`` is the ranks table on rank 0 (None on the others; every rank's own facts
        are ``runtime.own``, every rank's node id ``runtime.node_ids``). A job may also have
        ``check_ranks(ranks)``, called on rank 0 before the timed-loop backend is selected;
        it raises UsageError to refuse the placement (one line, exit 2 on every rank) before
        any loop is compiled."""

    def notes(self) -> list[str]:
        """Rank 0: warnings known before the first measurement."""

    def steps(self, nprocs: int) -> int:
        """Steps of the progress bar."""

    def measure(self, MPI: types.ModuleType, cfg: RunConfig, emit: Emit, bar: Bar) -> str:
        """Every rank: measure, calling ``emit`` with each result (a result may be emitted
        again, grown, under the same key). Returns why it stopped early ("" = it did not)."""

    def finish(self, results: list[Result], nprocs: int) -> list[str]:
        """Every rank, after :meth:`measure`: clean up; rank 0's return value is warnings."""


JobFactory = Callable[[suites.Suite], Job]


def loops_compiled() -> int:
    """How many timed loops this process compiled (not loaded from the cache): with the
    cache's lock, one rank compiles each loop and the others load it."""
    from beff.core import capi

    return int(capi.active().describe().get("compiled_now", 0))


def preparer(suite: suites.Suite, overrides: dict[str, Any]) -> Callable[
        [types.ModuleType], tuple[RunConfig, Job]]:
    """Rank 0's validation after MPI_Init: the config (defaults, TOML, flags), the output
    format against the suite's, the suite's own rules, and the result file's name."""

    def prepare(MPI: types.ModuleType) -> tuple[RunConfig, Job]:
        cfg = build_config(overrides, overrides.get("config_file"), suite)
        job: Job = suite.load("job")(suite)
        job.prepare(MPI, cfg)
        if cfg.resume is not None:
            resumed(MPI, suite, cfg, job)
        if cfg.output is None:
            cfg.output = default_output()
        if cfg.resume is None:
            check_output_path(cfg.output, cfg.force, cfg.config_file)
        if cfg.report:  # also from the TOML file
            check_report(cfg.report, cfg.output, cfg.force, cfg.config_file)
        return cfg, job

    return prepare


def resumed(MPI: types.ModuleType, suite: suites.Suite, cfg: RunConfig, job: Job) -> None:
    """``--resume FILE`` (rank 0, before the job is sent to every rank): the file must be an
    earlier run of this suite with the same configuration, rank count and MPI library
    (unless ``--force``); the job learns what it holds (``job.resume(record)``: a job
    without it cannot resume), and writes to it."""
    from beff.results import resume
    from beff.results.archive import DamagedFile, load

    path = str(cfg.resume)
    if not hasattr(job, "resume"):
        raise UsageError(f"--resume: {suite.name} runs cannot be resumed yet (the IMB-style "
                         "suites, b_eff and b_eff_io can); run it again with -o")
    if cfg.output is not None and Path(cfg.output).resolve() != Path(path).resolve():
        raise UsageError(f"--resume {path} writes to that file; -o {cfg.output} names another")
    if not Path(path).is_file():
        raise UsageError(f"--resume {path}: no such file")
    try:
        record = load(path)
    except (OSError, ValueError, DamagedFile) as exc:
        raise UsageError(f"--resume {path}: cannot read it: {' '.join(str(exc).split())}"
                         ) from None
    resume.check(record, path, suite.name, _config_dict(cfg), MPI.COMM_WORLD.Get_size(),
                 MPI.Get_library_version(), cfg.force)
    job.resume(record)
    cfg.output = path


def check_report(path: str, output: str | None, force: bool = False,
                 config_file: str | None = None) -> None:
    """``--report``: matplotlib is there and the page can be written, not over the result
    file or the config file, nor over an existing file without ``--force`` (one line, exit 2,
    before anything is measured)."""
    from beff.render import plot

    plot.require("--report", load=False)
    if output and Path(path).resolve() == Path(output).resolve():
        raise UsageError(f"--report {path}: that is the result file (-o)")
    plot.check_output(path, "--report", inputs=[config_file] if config_file else [],
                      force=force)


def _check_format(suite: suites.Suite, overrides: dict[str, Any]) -> dict[str, Any]:
    """A format flag outside the suite's formats is refused before MPI starts."""
    if "format" in overrides:
        suite.check_format(str(overrides["format"]))
    return {**overrides, "suite": suite.name}


def thread_level(suite: suites.Suite, overrides: dict[str, Any]) -> str:
    return suite.thread_level or thread_level_before_init(overrides)


def run(suite_name: str, overrides: dict[str, Any]) -> None:
    """Run ``suite_name`` with the parsed command-line ``overrides`` (before MPI_Init); exits
    with the job's code."""
    suite = suites.get(suite_name)
    overrides = _check_format(suite, overrides)  # a usage error: main() says it, exit 2
    if overrides.get("output"):
        check_output_kind(str(overrides["output"]))
    if overrides.get("report"):
        check_report(str(overrides["report"]), overrides.get("output"),
                     bool(overrides.get("force")), overrides.get("config_file"))

    def job(MPI: types.ModuleType, prepared: tuple[RunConfig, Job]) -> None:
        outcome = measure(MPI, suite, *prepared)
        code = strict_code(MPI, prepared[0], outcome)
        # Every rank leaves together, under the end-of-run guard: a rank stopped after its
        # last result would otherwise keep the launcher waiting once rank 0 is gone. The
        # others sleep meanwhile, while rank 0 ends the file.
        quiet_barrier(MPI.COMM_WORLD)
        if outcome.failure:
            sys.exit(1)
        if code:
            runtime.end_process(code)

    if env_rank() in (None, 0):  # the rank that will write the file: its watcher's start-up
        from beff.results import watch

        watch.spawn()  # overlaps MPI's (the file is handed to it once it exists)
    runtime.run_job(thread_level(suite, overrides), preparer(suite, overrides), job,
                    OMPI_ONE_SIDED_SETTINGS if suite.one_sided else None, overrides=overrides)


def strict_code(MPI: types.ModuleType, cfg: RunConfig, outcome: Outcome) -> int:
    """``--strict`` at the end of a run that did not fail (every rank, collective): rank 0
    says why in one line, and every rank gets the same exit code (0, or STRICT)."""
    return STRICT if strict_verdict(MPI, cfg, outcome, say=True) else 0


def strict_verdict(MPI: types.ModuleType, cfg: RunConfig, outcome: Outcome,
                   say: bool) -> str:
    """``--strict`` (``strict=True``) at the end of a run that did not fail (every rank,
    collective): rank 0 judges the finished file (:func:`beff.results.strict.reasons`, as
    ``beff show --strict`` does); every rank gets its one line ("" when it passes), which
    rank 0 has written to stderr first where ``say``."""
    if not cfg.strict or outcome.failure:
        return ""
    world = MPI.COMM_WORLD
    said = ""
    if world.Get_rank() == 0:
        from beff.results import strict
        from beff.results.archive import load

        found = strict.reasons(load(outcome.path))
        said = strict.line(found) if found else ""
        if said and say:
            sys.stdout.flush()
            sys.stderr.write(said + "\n")
            sys.stderr.flush()
    # rank 0 has said why before any rank exits (launchers end a job on a non-zero exit)
    return str(world.bcast(said, root=0))


def _config_dict(cfg: RunConfig) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(cfg.to_json())
    data.pop("sources", None)
    return data


# What the end of a run should take at most on a quick machine (the stall guard's default is
# 20 times it, at least 120 s; --stall-timeout sets it).
END_STEP_S = 5.0
# What rank 0 may add for --report's page (every rank knows the config, so the others wait
# that much longer too): a minute for the figures of a large run on a loaded node, doubled.
REPORT_S = 120.0


@dataclasses.dataclass
class Outcome:
    """What a run leaves: its results (rank 0: all of them, in order; other ranks: those
    their rank saw), why it stopped early ("" = it did not) and, on rank 0, the record of
    the file (its attrs with the status and the warnings)."""

    results: list[Result]
    failure: str
    path: str
    record: RunRecord | None = None


def measure(MPI: types.ModuleType, suite: suites.Suite, cfg: RunConfig, job: Job,
            render: bool = True, result_notes: Notes | None = None) -> Outcome:
    """Every rank, after validation: measure, store on rank 0, and render there.

    ``render`` False is the Python API: nothing is printed (progress only if
    ``cfg.progress`` is True), the warnings (``result_notes`` adds its own about each result)
    come back on the record, and a result file that rank 0 cannot create raises BeffError on
    every rank.
    """
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    # a job may judge the ranks table before any loop is readied (check_ranks)
    ranks, overhead, backend_warning = runtime.begin(MPI, cfg.timeout, cfg.backend,
                                                     getattr(job, "check_ranks", None))
    extra = job.start(MPI, cfg, ranks)
    leaders = disturbance.start(MPI)  # each node's record of other processes' CPU time
    me: LiveRun | None = None
    trouble = ""
    if rank == 0:
        assert ranks is not None and overhead is not None
        where = placement(ranks)
        attrs = run_attrs(MPI, cfg.argv)
        attrs.update(config=_config_dict(cfg), config_sources=cfg.sources, placement=where,
                     oversubscribed=where["oversubscribed"], overhead=overhead,
                     benchmarks=job.names(), suite=suite.name, checked=cfg.check,
                     derived=job.derived, **extra)
        from beff.render.live import LiveRun
        from beff.results import warnings

        try:
            me = LiveRun(suite, cfg, job.streaming, attrs, ranks, render, result_notes,
                         resumable=hasattr(job, "resume"))
        except BeffError as exc:
            if render:
                raise
            trouble = str(exc)
        else:
            me.warn(([backend_warning] if backend_warning else [])
                    + warnings.run_warnings(attrs, network=job.network) + job.notes())
            me.begin()
    quiet_barrier(world)  # the others sleep while rank 0 loads its writer and makes the file
    if not render:  # the API raises on every rank, not on rank 0 alone
        trouble = world.bcast(trouble if rank == 0 else "", root=0)
        if trouble:
            job.finish([], world.Get_size())  # its clean-up (I/O: the run's files)
            raise BeffError(trouble)
    results: list[Result] = []
    windows: list[tuple[str, float, float]] = []  # each result's key, start and end
    last = [time.time()]

    def emit(result: Result) -> None:
        results.append(result)
        now = time.time()
        windows.append((result.key, last[0], now))
        last[0] = now
        if me is not None:
            me.emit(result)

    shown = cfg.progress if render else cfg.progress is True
    with make_progress(shown if me is not None else False,
                       job.steps(world.Get_size())) as bar:
        if me is not None:
            me.bar = bar
        failure = job.measure(MPI, cfg, emit, bar)
    record = disturbance.finish(MPI, leaders, windows)
    compiled = world.gather(loops_compiled(), root=0)  # the loops each rank compiled itself
    if me is not None:
        me.bar = Bar()  # the bar is gone: what is printed after must not draw it again
    # The end of the run (a job's last collectives, rank 0 writing and rendering, the final
    # barrier and MPI_Finalize at exit) is guarded too: a rank stopped there must not leave
    # the others waiting. The Python API lifts it when measure returns.
    guard(stall_limit(cfg, END_STEP_S) + (REPORT_S if cfg.report else 0.0),
          "the end of the run (results, MPI_Finalize)")
    injected_stop("end")
    notes = job.finish(results, world.Get_size())
    if me is not None:
        said = disturbance.warning(record)
        me.warn(notes + ([said] if said else []))
        me.end("failed" if failure else "complete", loops_compiled=compiled,
               disturbance=record or {})
        if failure and render:
            me.stderr.print(f"beff: error: {failure}; the results measured before stay in "
                            f"{me.out.path}", markup=False, highlight=False, soft_wrap=True)
    if failure:
        world.Barrier()  # rank 0 has said why before any rank exits (launchers kill on exit 1)
    return Outcome(me.record.results if me is not None else results, failure,
                   str(cfg.output), me.record if me is not None else None)
