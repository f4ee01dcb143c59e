"""The suite contract: what a suite declares, and where beff finds the suites.

A suite (IMB-MPI1, IMB-NBC, ..., b_eff, b_eff_io) is one folder: its kernels, its benchmark
declarations and one :class:`Suite` declaration, registered with :func:`register` when its
declaration module is imported. The declaration names, by ``"module:attribute"`` strings that
are imported only when needed (``beff --help`` and ``beff list`` import no kernel):

* ``job``: a factory ``(suite) -> Job``, the suite's part of a run under MPI
  (:class:`beff.runner.Job`): validation on rank 0, its own start, the measurements;
* ``view``: its renderers (:class:`beff.render.view.View`): rich table, the original's
  text, JSON and CSV, each from the records the run stores;
* ``layout``: for a suite whose result is one typed record (b_eff, b_eff_io), the HDF5
  layout of that record (:class:`beff.results.layout.Layout`), stored in the group named
  after the suite. IMB-style suites store :class:`beff.results.model.Measurement` objects;
* ``importer``: the reader of the original program's output (:class:`beff.results.imported.
  Importer`) that ``beff import`` turns into this suite's results (one importer may serve
  several suites: IMB's text names its component).

beff finds the declarations by their entry points (group ``beff.suites``, one entry per
suite: ``mpi4 = "beff.imb.nbc.suite:MPI4"``, in pyproject.toml for beff's own suites, in a
plug-in package's metadata for its suites). Each suite declares where it is listed
(:attr:`Suite.order`).

Nothing here imports a family: the runner, the archive and the renderers reach a suite's code
through these strings, so families stay siblings that never import each other.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from beff.core.errors import BeffError, UsageError
from beff.core.options import Option, Values

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["Option", "Suite", "register", "suites", "get", "find"]

# The entry-point group of suite declarations: one entry per suite, its name the suite's
# name, its value the "module:attribute" of its Suite (beff's own in pyproject.toml, a
# plug-in's in its own package's metadata).
GROUP = "beff.suites"


@dataclass(frozen=True)
class Suite:
    """One suite's declaration."""

    name: str  # as typed: `beff imb mpi1`, the `suite` of a result, a TOML value
    title: str
    label: str  # how `beff compare` names what ran, e.g. "IMB mpi1", "b_eff"
    family: str  # what kind of suite: "imb" for the IMB-style ones (kept for plug-ins)
    command: str  # the command that runs it, e.g. "beff imb mpi1" or "beff run"
    job: str  # "module:factory" of its Job
    view: str  # "module:attribute" of its View
    formats: tuple[str, ...]  # output formats it renders; the first is the default
    layout: str = ""  # "module:attribute" of its record's Layout ("" = Measurements)
    benchmarks: tuple[str, ...] = ()  # modules that register its IMB-style benchmarks
    # Its options (beyond beff's shared ones), each declared once: IMB-style flags under
    # `beff imb NAME`, typer options for a command of its own, TOML keys, help, rules.
    options: tuple[Option, ...] = ()
    thread_level: str = ""  # the MPI thread level it needs at least ("" = the option's)
    one_sided: bool = False  # Open MPI needs beff.core.mpi.OMPI_ONE_SIDED_SETTINGS
    importer: str = ""  # "module:attribute" of its Importer ("" = nothing to import)
    # "module:function" ``(values, given keys) -> None`` that checks values together
    # (UsageError), e.g. IMB's msglog_min <= msglog_max; "" = none.
    rules: str = ""
    unused: tuple[str, ...] = ()  # shared options it has no use for: neither flag nor key
    # Where `beff list` and the help show it: beff's own suites 10, 20, ... in the order of
    # IMB's components, then b_eff_io, b_eff and the map; a plug-in's, by default, after them.
    order: int = 1000

    def load(self, what: str) -> Any:
        """The object a ``"module:attribute"`` field names."""
        module, _, attr = str(getattr(self, what)).partition(":")
        return getattr(importlib.import_module(module), attr)

    def flag(self, token: str) -> Option | None:
        """The option of this suite that ``token`` (an IMB-style flag as typed) names."""
        return next((o for o in self.options if not (o.toml_only or o.positional or o.fixed)
                     and token in o.imb_flags()), None)

    def check_values(self, values: Values, given: set[str]) -> None:
        """The suite's rules that tie its values together (``rules``), if it has any."""
        if self.rules:
            self.load("rules")(values, given)

    def check_format(self, fmt: str, where: str = "--format") -> str:
        """``fmt`` if this suite renders it; else a usage error naming the suite's formats."""
        if fmt not in self.formats:
            raise UsageError(f"{where}: {self.label} results come as "
                             f"{'|'.join(self.formats)}, not {fmt!r}")
        return fmt


_SUITES: dict[str, Suite] = {}
_loaded = False


def register(suite: Suite) -> Suite:
    """Add ``suite`` (called by its declaration module); a name is registered once."""
    if _SUITES.get(suite.name, suite) != suite:
        raise ValueError(f"suite {suite.name} registered twice")
    _SUITES[suite.name] = suite
    return suite


def _load() -> None:
    """Register the suites of the entry points (importing their declaration modules: no
    kernel)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from importlib.metadata import entry_points  # ~20 ms: only when a suite is asked for

    found = entry_points(group=GROUP)
    if not found:
        raise BeffError(f"no suites: beff's entry points ({GROUP}) are missing; install beff "
                        f"(in a checkout: pip install -e .)")
    for entry in found:
        _register_entry(entry)


def _register_entry(entry: EntryPoint) -> None:
    try:
        suite = entry.load()
    except ImportError as exc:
        raise UsageError(f"entry point {entry.name} = {entry.value} ({GROUP}): cannot "
                         f"import it: {exc}") from None
    if not isinstance(suite, Suite) or suite.name != entry.name:
        raise UsageError(f"entry point {entry.name} = {entry.value} ({GROUP}) names no "
                         f"Suite called {entry.name!r}")
    register(suite)


def _own(name: str | None = None) -> None:
    """Register beff's own suites (the one called ``name``), reading beff's entry points
    alone."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        own = distribution("beff").entry_points.select(group=GROUP)
    except PackageNotFoundError:
        return
    if name is not None:
        own = own.select(name=name)
    for entry in own:
        _register_entry(entry)


def by_command(command: str) -> Suite | None:
    """The suite run as ``command`` ("beff run"), or None: beff's own suites first, as
    :func:`named` finds them, then the plug-ins'."""
    if not _loaded:
        _own()
    found = next((s for s in _SUITES.values() if s.command == command), None)
    if found is None and not _loaded:
        _load()
        found = next((s for s in suites() if s.command == command), None)
    return found


def named(name: str) -> Suite | None:
    """The suite called ``name``, or None. One of beff's own is found in beff's entry points
    alone, importing its declaration only: every rank of ``beff imb mpi1`` asks, and reading
    every installed distribution's entry points (the plug-ins') costs each rank a file a
    distribution, on what is often a shared file system."""
    if name not in _SUITES and not _loaded:
        _own(name=name)
    if name not in _SUITES:
        _load()
    return _SUITES.get(name)


def suites() -> list[Suite]:
    """Every suite, by its declared :attr:`Suite.order` (beff's own first, then the
    plug-ins'), those of one order as they registered."""
    _load()
    return sorted(_SUITES.values(), key=lambda s: s.order)


def get(name: str) -> Suite:
    """The suite called ``name``; a usage error names the known ones."""
    found = named(name)
    if found is None:
        known = ", ".join(s.name for s in suites())
        raise UsageError(f"unknown suite {name!r} (known: {known})")
    return found


def find(name: str) -> Suite | None:
    """The suite called ``name``, or None (a file from a suite this beff lacks)."""
    return named(name)
