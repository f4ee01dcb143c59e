"""beff from Python: run a suite inside a running MPI program, and read a result file.

    import beff
    record = beff.run("mpi1", benchmarks=["PingPong"], msglog_max=10, time=0.5,
                      output="pp.h5")
    for m in record.measurements:           # rank 0 holds the results, typed
        print(m.benchmark, m.sizes, m.status, m.times.max(axis=1))
    for problem in record.problems():       # every rank: sizes a benchmark ended on
        print(problem)
    record = beff.load("pp.h5")             # any beff file, without MPI

:func:`run` is collective over ``MPI.COMM_WORLD`` (start the script with
``mpiexec -n P python script.py``). It takes the options of the configuration by their TOML
names (``beff show`` of any file lists them under ``config``), validates them by the same rules
as the command line, writes the same self-describing result file, and prints nothing:
``progress=True`` asks for progress lines on stderr (rank 0); warnings come back on the
record (:attr:`RunResults.warnings`, stored in the file too).

Errors are raised, in the API's words (``output=``, ``force=True``, not ``-o``,
``--force``), and never end the caller's program:

* a bad option, an existing output file: :class:`~beff.core.errors.UsageError`, on every
  rank, before anything is measured;
* a run that fails on every rank together (a disk full, a result file that cannot be
  created): :class:`~beff.core.errors.BeffError` on every rank; the results measured before
  stay in the file.

An exception on one rank only (a bug, a rank's own I/O error) propagates on that rank alone;
what follows is the caller's program's business. The other ranks still wait inside
:func:`run`: beff's stall guard ends the whole job with MPI_Abort once they have waited
``stall_timeout`` seconds (default: at least 120), unless the program ends it first (e.g.
``mpiexec -n P python -m mpi4py script.py`` aborts the job on an unhandled exception).
beff's abort-on-exception hook (the command line's) is not left in the caller's program.
Its handling of SIGINT and SIGTERM stays once :func:`run` has started MPI: either signal ends
the job with one line from rank 0, the result file of a run under way marked aborted.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import sys
from pathlib import Path
from typing import Any

from beff import runner
from beff.core import capi, config
from beff.core import mpi as _mpi
from beff.core import suite as suites
from beff.core.errors import BeffError, StrictFailure, UsageError
from beff.results import warnings as _warnings
from beff.results.archive import load as _load
from beff.results.model import FAILED, OUT_OF_MEM, TIME_OUT, Measurement, Result, RunRecord

# The rows that end a benchmark: that size and the larger ones are not measured.
ENDING = (TIME_OUT, OUT_OF_MEM, FAILED)


@dataclasses.dataclass(frozen=True)
class Problem:
    """A message size that ended a benchmark unmeasured: IMB's time-out and out-of-mem rows,
    or a failure. The benchmark's larger sizes were not measured either (their status is
    ``skipped``)."""

    benchmark: str
    nprocs: int
    mode: str  # "" for benchmarks without modes
    size: int  # bytes
    status: str  # "time-out", "out-of-mem" or "failed"
    message: str  # in words, as the run's warnings say it

    def __str__(self) -> str:
        return self.message


def problem_of(m: Measurement) -> Problem | None:
    """The row that ended ``m``, if one did."""
    i = next((i for i, s in enumerate(m.status) if s in ENDING), None)
    if i is None:
        return None
    size, status = int(m.sizes[i]), m.status[i]
    what = f"{m.benchmark}{f' ({m.mode})' if m.mode else ''} at {m.nprocs} processes"
    rest = f"the sizes from {size} bytes on were not measured"
    if status == TIME_OUT:
        text = (f"{what}: time-out at {size} bytes: its time limit (time= seconds per "
                f"message size) was used up; {rest} (a larger time= measures them)")
    elif status == OUT_OF_MEM:
        need = m.needed_gb[i] if m.needed_gb is not None else float("nan")
        text = (f"{what}: out of memory at {size} bytes (it needs {need:.3f} GB, more than "
                f"mem_gb=); {rest}")
    else:
        text = f"{what}: failed at {size} bytes ({m.attrs.get('failure', 'an error')}); {rest}"
    return Problem(m.benchmark, m.nprocs, m.mode, size, status, text)


def _result_notes(result: Result) -> list[str]:
    """The run's warning about a result that a time-out, out-of-mem or failed row ended."""
    found = problem_of(result) if isinstance(result, Measurement) else None
    return [found.message] if found is not None else []


@dataclasses.dataclass
class RunResults(RunRecord):
    """What :func:`run` and :func:`load` return: the run's record (``attrs``, ``ranks``,
    ``results``; each Measurement's ``status`` per size says which were measured: "ok"),
    with its warnings and problems at hand.

    From :func:`run`, rank 0 holds every result; the other ranks hold those their rank
    produced (for IMB's suites, none), and the same ``attrs`` (the warnings included) and
    :meth:`problems` as rank 0, so that every rank can take the same decision on them.
    """

    known_problems: list[Problem] | None = dataclasses.field(default=None, repr=False,
                                                             compare=False)

    @property
    def warnings(self) -> list[str]:
        """Every warning of the run (an oversubscribed node, all ranks on one node, a
        time-out ...), as stored in its file."""
        return _warnings.of_record(self)

    def problems(self) -> list[Problem]:
        """The benchmarks that a time-out, out-of-mem or failed row ended, with that row."""
        if self.known_problems is not None:
            return list(self.known_problems)
        return [p for p in map(problem_of, self.measurements) if p is not None]

    @property
    def timed_out(self) -> list[Problem]:
        """The time-out rows alone (raise ``time=`` to measure those sizes)."""
        return [p for p in self.problems() if p.status == TIME_OUT]


def run(suite: str, comm: Any = None, **options: Any) -> RunResults:
    """Measure ``suite`` ("mpi1", "nbc", ..., "beff", "beffio") with ``options`` (the TOML
    keys: ``output="run.h5"``, ``force=True``, ``msglog_max=10``, ``progress=True`` ...).

    Collective over MPI.COMM_WORLD. Returns the run's :class:`RunResults` on every rank.
    Raises UsageError (bad options, an existing output file without ``force=True``) and
    BeffError (a run that failed) on every rank alike; it prints nothing unless
    ``progress=True``. With ``strict=True``, a run whose figures cannot be trusted (as
    ``--strict`` judges it) raises StrictFailure on every rank, its results in ``.results``."""
    try:
        return _run(suite, comm, options)
    except StrictFailure:
        raise
    except BeffError as exc:
        said = in_api_words(str(exc), options, suite)
        if said == str(exc):
            raise
        raise _reworded(exc, said) from None


def _reworded(exc: BeffError, text: str) -> BeffError:
    try:
        return type(exc)(text)
    except TypeError:  # a subclass with arguments of its own
        return BeffError(text) if not isinstance(exc, UsageError) else UsageError(text)


def _run(suite: str, comm: Any, options: dict[str, Any]) -> RunResults:
    chosen = suites.get(suite)
    known = config.declared(chosen)
    for key, value in options.items():
        if key not in known or known[key].fixed:
            raise UsageError(unknown_option(key, chosen))
        known[key].check(value, f"{key}=")
    if "format" in options:  # stored with the run (the API renders nothing)
        chosen.check_format(str(options["format"]), f"format={options['format']!r}")
    overrides = runner._check_format(chosen, {**options, "argv": ["beff.run", suite]})
    hook = sys.excepthook
    MPI = _mpi.init(runner.thread_level(chosen, overrides),
                    _mpi.OMPI_ONE_SIDED_SETTINGS if chosen.one_sided else None)
    sys.excepthook = hook  # beff's abort-on-exception hook is the command line's, not ours
    if comm is not None and comm != MPI.COMM_WORLD:
        raise UsageError("comm=: beff.run measures on MPI.COMM_WORLD only")
    if options.get("progress") is not True:
        capi.quiet_notices()  # the compile notice is progress: not said unless asked
    world = MPI.COMM_WORLD
    payload: tuple[str, Any] | None = None
    if world.Get_rank() == 0:
        try:
            payload = ("ok", runner.preparer(chosen, overrides)(MPI))
        except UsageError as exc:
            payload = ("error", str(exc))
    payload = world.bcast(payload, root=0)
    assert payload is not None
    if payload[0] == "error":
        raise UsageError(str(payload[1]))
    cfg, job = payload[1]
    try:
        outcome = runner.measure(MPI, chosen, cfg, job, render=False,
                                 result_notes=_result_notes)
    finally:  # the caller's program goes on: no watchdog of beff's stays armed
        _mpi.guard(None, "")
        _mpi.stop_watchdog()
    if outcome.failure:  # every rank has it (the jobs agree on why they stopped)
        raise BeffError(f"{outcome.failure}; the results measured before stay in "
                        f"{outcome.path}")
    mine = outcome.record
    shared = world.bcast((mine.attrs, [p for p in map(problem_of, mine.measurements) if p])
                         if mine is not None else None, root=0)
    if mine is not None:
        results = RunResults(attrs=mine.attrs, results=mine.results, ranks=mine.ranks)
    else:
        assert shared is not None
        results = RunResults(attrs=shared[0], results=outcome.results,
                             known_problems=shared[1])
    judged = runner.strict_verdict(MPI, cfg, outcome, say=False)
    if judged:  # strict=True: every rank alike, the results at hand
        raise StrictFailure(judged.removeprefix("beff: strict: "), results)
    return results


def load(path: str | Path) -> RunResults:
    """Read a beff result file of any schema: run metadata, ranks and typed results."""
    record = _load(path)
    return RunResults(attrs=record.attrs, results=record.results, ranks=record.ranks)


def unknown_option(key: str, suite: suites.Suite) -> str:
    """The error for an option ``key`` that beff.run does not take for ``suite``."""
    near = difflib.get_close_matches(key, [k for k, o in config.declared(suite).items()
                                           if not o.fixed], n=1)
    hint = f" (did you mean {near[0]}=?)" if near else ""
    return (f"unknown option {key}={hint}: beff.run takes the keys of beff's TOML "
            f"configuration for {suite.command} (`beff show FILE` lists them under config)")


_FLAG = re.compile(r"(?<![\w./=-])(--?[A-Za-z][\w-]*)(?![\w-])(?: (\S+?)(?=[:;,)]?(?:\s|$)))?")


def _spellings(suite: str) -> dict[str, tuple[str, str]]:
    """flag -> (config key or "", how beff.run says it), from the options' declarations."""
    from beff.core.options import SHARED

    chosen = suites.find(suite)
    others = [o for s in suites.suites() if s is not chosen for o in s.options]
    declared = [*(chosen.options if chosen is not None else ()), *SHARED, *others]
    out: dict[str, tuple[str, str]] = {}
    for o in declared:
        if o.toml_only or o.positional or o.fixed:
            continue
        if o.sets:
            said = "/".join(f"{k}=" for k, _ in o.sets)
            for flag in (*o.imb_flags(), *o.long_flags()):
                out.setdefault(flag, ("", said))
            continue
        said = f"{o.key}=True" if o.kind is bool else f"{o.key}="
        for flag in (*o.imb_flags(), *o.long_flags()):
            out.setdefault(flag, (o.key, said))
    out["--no-progress"] = ("progress", "progress=False")
    return out


def in_api_words(message: str, options: dict[str, Any], suite: str = "") -> str:
    """``message`` (written for the command line) with its flags said as beff.run's
    arguments: ``-o a.h5: ...; use --force`` becomes ``output='a.h5': ...; use force=True``.
    A flag's value is kept with it (quoted as given when it is ``options``' own)."""
    names = _spellings(suite)

    def say(match: re.Match[str]) -> str:
        flag, value = match.group(1), match.group(2)
        if flag not in names:
            return match.group(0)
        key, said = names[flag]
        if not said.endswith("="):  # a switch: --force is force=True
            return said + (f" {value}" if value else "")
        if value is not None and key in options and value == str(options[key]):
            return f"{said}{options[key]!r}"
        if value is not None and re.search(r"[\d./~]", value):  # a value, not a word
            return said + value
        tail = match.string[match.end(1):match.end(1) + 1]
        word = f" {value}" if value else ""
        return (said[:-1] if tail in (":", "'") and not value else said) + word

    return _FLAG.sub(say, message)
