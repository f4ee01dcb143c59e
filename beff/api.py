"""beff from Python: run a suite inside a running MPI program, and read a result file.

    from beff import api
    results = api.run("mpi1", benchmarks=["PingPong"], msglog_max=10, time=0.5)
    for m in results:                       # rank 0 gets every result, typed
        print(m.benchmark, m.sizes, m.times.max(axis=1))
    record = api.load(results_path)         # any beff file, without MPI

:func:`run` is collective over ``MPI.COMM_WORLD`` (start the script with
``mpiexec -n P python script.py``). It takes the options of the configuration by their TOML
names (``beff show`` of any file lists them under ``config``), validates them by the same rules
as the command line, writes the same self-describing result file, and renders nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from beff import runner
from beff.core import config
from beff.core import mpi as _mpi
from beff.core import suite as suites
from beff.core.errors import BeffError, UsageError
from beff.results.archive import load as _load
from beff.results.model import Result, RunRecord


def run(suite: str, comm: Any = None, **options: Any) -> list[Result]:
    """Measure ``suite`` ("mpi1", "nbc", ..., "beff", "beffio") with ``options``; returns the
    typed results on rank 0 (Measurement objects, or b_eff's / b_eff_io's record) and the
    results each other rank saw elsewhere. A bad option raises UsageError on every rank."""
    chosen = suites.get(suite)
    for key, value in options.items():
        if key not in config.RULES:
            raise UsageError(f"unknown option {key!r} (see the config keys in the README)")
        config.check_value(key, value, key)
    overrides = runner._check_format(chosen, {**options, "argv": ["api", suite]})
    MPI = _mpi.init(runner.thread_level(chosen, overrides),
                    _mpi.OMPI_ONE_SIDED_SETTINGS if chosen.one_sided else None)
    if comm is not None and comm != MPI.COMM_WORLD:
        raise UsageError("beff.api.run measures on MPI.COMM_WORLD only")
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
    outcome = runner.measure(MPI, chosen, cfg, job, render=False)
    _mpi.guard(None, "")  # the caller's program goes on: no watchdog of beff's stays
    if outcome.failure:
        raise BeffError(f"{outcome.failure}; the results measured before stay in "
                        f"{outcome.path}")
    return outcome.results


def load(path: str | Path) -> RunRecord:
    """Read a beff result file of any schema: run metadata, ranks and typed results."""
    return _load(path)
