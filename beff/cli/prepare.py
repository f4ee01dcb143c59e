"""``beff prepare``: compile every timed loop the suites need, for the MPI library beff runs
on, and keep them in the loop cache, so that runs load them instead of compiling.

Once per installation (or per node-local cache, in a job script before srun): without it,
the first run compiles each loop as it first needs it, on one process (the cache's lock),
while the other ranks wait. Under mpiexec every rank takes part and each loop is still
compiled once (the others load it); one process (no launcher) is enough.
"""

from __future__ import annotations

import time
import types

from beff.core import capi, terminal
from beff.core import suite as suites
from beff.core.errors import UsageError


def check(names: list[str]) -> list[str]:
    """The suites to prepare (all when none is named); an unknown name is a usage error."""
    known = [s.name for s in suites.suites()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"beff prepare: no suite {unknown[0]!r}; the suites are "
                         f"{', '.join(known)}")
    return names or known


def loops_of(names: list[str]) -> list[capi.LoopFunc]:
    """Every timed loop the suites ``names`` may run: those their modules register as they
    are imported (their job, their benchmarks' modules), and beff's own (the overhead's)."""
    for name in names:
        suite = suites.get(name)
        suite.load("job")
        for module in suite.benchmarks:
            __import__(module)
    return list(capi.LOOPS)


def run_prepare(MPI: types.ModuleType, names: list[str]) -> None:
    world = MPI.COMM_WORLD
    began = time.monotonic()
    backend, warning = capi.select("jit")
    if backend.name != "jit":
        raise UsageError(f"beff prepare: {warning or 'the compiled backend is not available'}")
    loops = loops_of(names)
    missing: list[str] = []
    for lf in loops:
        try:
            capi.compile_only(lf)
        except Exception as exc:  # noqa: BLE001 - a loop this MPI library cannot run
            missing.append(f"{lf.func.__name__} ({type(exc).__name__})")
    described = backend.describe()
    compiled = world.gather(int(described.get("compiled_now", 0)), root=0)
    world.Barrier()
    if world.Get_rank() != 0:
        return
    assert compiled is not None
    console = terminal.console()
    lib = " ".join(MPI.Get_library_version().replace("\x00", "").split("\n")[0].split())
    now = sum(compiled)
    console.print(f"beff prepare: {len(loops)} timed loops of {', '.join(names)} for {lib}, "
                  f"in {described.get('cache_dir', '(no cache: nothing is kept)')}: "
                  f"{now} compiled now, {len(loops) - len(missing) - now} were kept already"
                  + (f", {len(missing)} not available with this MPI: {', '.join(missing)}"
                     if missing else "")
                  + f" ({time.monotonic() - began:.1f} s)", soft_wrap=True, highlight=False)
