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
  layout of that record (:class:`beff.results.archive.Layout`), stored in the group named
  after the suite. IMB-style suites store :class:`beff.results.model.Measurement` objects;
* ``importer``: the reader of the original program's output (:class:`beff.results.imported.
  Importer`) that ``beff import`` turns into this suite's results (one importer may serve
  several suites: IMB's text names its component).

Nothing here imports a family: the runner, the archive and the renderers reach a suite's code
through these strings, so families stay siblings that never import each other.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from beff.core.errors import UsageError

# The declaration modules of beff's own suites, in the order `beff list` shows them.
BUILTIN = ("beff.imb.mpi1.suite", "beff.imb.nbc.suite", "beff.imb.onesided.suite",
           "beff.imb.p2p.suite", "beff.imb.mt.suite", "beff.io.suite", "beff.effbw.suite",
           "beff.netmap.suite")
# Modules outside beff that declare suites (comma-separated module names).
PLUGINS_ENV = "BEFF_PLUGINS"


@dataclass(frozen=True)
class Option:
    """An option a suite declares for itself. One declaration gives its flags (as typed,
    e.g. IMB's single-dash ``-iter``, which then means what this suite says, whatever other
    suites mean by it), its TOML key (in the suite's own table, ``[NAME]``), its default and
    the rule every value meets, from a flag or from TOML alike. Values are stored in the
    result file's config under ``options``."""

    key: str
    kind: type  # int, float, str or bool
    default: Any
    help: str
    flags: tuple[str, ...] = ()
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    # An option whose value has a syntax of its own (IMB-P2P's -iter max,numerator, IMB-MT's
    # -count list): ``convert(value, where)`` checks it (UsageError naming ``where``) and
    # returns its canonical value, instead of the kind's rule.
    convert: Callable[[Any, str], Any] | None = None

    def check(self, value: Any, where: str) -> Any:
        """``value`` checked against this option's rule (UsageError naming ``where``)."""
        if self.convert is not None:
            return self.convert(value, where)
        from beff.core.config import Rule, check_rule

        return check_rule(Rule(self.key, self.kind, self.lo, self.hi, self.choices), value,
                          where)

    def parse(self, text: str, flag: str) -> Any:
        """The value of ``flag`` as typed on the command line, checked."""
        if self.kind is bool:
            value: Any = {"on": True, "off": False, "true": True, "false": False}.get(
                text.lower(), text)
        elif self.kind in (int, float):
            try:
                value = self.kind(text)
            except ValueError:
                what = "an integer" if self.kind is int else "a number"
                raise UsageError(f"{flag} expects {what}, got {text!r}") from None
        else:
            value = text
        return self.check(value, flag)


@dataclass(frozen=True)
class Suite:
    """One suite's declaration."""

    name: str  # as typed: `beff imb mpi1`, the `suite` of a result, a TOML value
    title: str
    label: str  # how `beff compare` names what ran, e.g. "IMB mpi1", "b_eff"
    family: str  # the TOML table of its options: imb, b_eff or io
    command: str  # the command that runs it, e.g. "beff imb mpi1" or "beff run"
    job: str  # "module:factory" of its Job
    view: str  # "module:attribute" of its View
    formats: tuple[str, ...]  # output formats it renders; the first is the default
    layout: str = ""  # "module:attribute" of its record's Layout ("" = Measurements)
    benchmarks: tuple[str, ...] = ()  # modules that register its IMB-style benchmarks
    options: tuple[Option, ...] = ()  # its own options (beyond the shared ones)
    thread_level: str = ""  # the MPI thread level it needs at least ("" = the option's)
    one_sided: bool = False  # Open MPI needs beff.core.mpi.OMPI_ONE_SIDED_SETTINGS
    importer: str = ""  # "module:attribute" of its Importer ("" = nothing to import)

    def load(self, what: str) -> Any:
        """The object a ``"module:attribute"`` field names."""
        module, _, attr = str(getattr(self, what)).partition(":")
        return getattr(importlib.import_module(module), attr)

    def flag(self, token: str) -> Option | None:
        """The option of this suite that ``token`` (a flag as typed) names, if any."""
        return next((o for o in self.options if token in o.flags), None)

    def resolve_options(self, given: dict[str, Any],
                        sources: dict[str, str] | None = None) -> dict[str, Any]:
        """Every option of this suite: its default, else the value given (flag or TOML),
        checked; an unknown key is a usage error."""
        known = {o.key: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise UsageError(f"unknown option(s) of {self.command}: {', '.join(unknown)}")
        return {key: o.check(given[key], (sources or {}).get(key, key)) if key in given
                else o.default for key, o in known.items()}

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
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN:
        importlib.import_module(module)
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UsageError(f"{PLUGINS_ENV}: cannot import {module}: {exc}") from None


def suites() -> list[Suite]:
    """Every suite, beff's own first, then the plug-ins' in the order they registered."""
    _load()
    return list(_SUITES.values())


def get(name: str) -> Suite:
    """The suite called ``name``; a usage error names the known ones."""
    _load()
    if name not in _SUITES:
        raise UsageError(f"unknown suite {name!r} (known: {', '.join(_SUITES)})")
    return _SUITES[name]


def find(name: str) -> Suite | None:
    """The suite called ``name``, or None (a file from a suite this beff lacks)."""
    _load()
    return _SUITES.get(name)
