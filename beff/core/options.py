"""The one declaration of an option, and the one validator of its values.

Every option of every command and suite is one :class:`Option`: beff's shared options
(:data:`SHARED`, here), each suite's own (in its folder, listed in its
:class:`beff.core.suite.Suite` declaration) and a plug-in's. From that one declaration come

* its command-line spellings: in ``beff imb SUITE`` the IMB style, ``-key`` (single dash;
  a bool takes ``on|off``), in a typer command ``--key-name`` (a bool is a switch), unless
  the declaration names its flags;
* its TOML key (``key``) in its table (``table``; a suite's own options default to the table
  named after the suite, shared ones go at the top level, in ``[beff]`` or in any table);
* its help text (``beff imb --help``, ``beff CMD --help``, ``beff list``);
* its check: :meth:`Option.check` for a value from a flag, a TOML file or ``beff.run`` alike,
  whose errors name the value as given (the flag as typed, or the key and its file).

A flag with a syntax of its own (IMB's ``-msglog min:max`` or ``-iter a,b,c``) declares
``text``, which turns the typed text into the option's value; a flag that sets several
options at once declares ``sets`` (the keys and how an error names each part) and is not
stored itself. Nothing here names a suite.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from beff.core.errors import UsageError

MAX_TIME_S = 86400.0  # a day: the upper bound of every time
MAX_COUNT = 10**9  # the upper bound of every repetition or message count
THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")
BACKENDS = ("auto", "jit", "python")


def shown(v: Any) -> str:
    """A number as people write it: whole numbers in full (1000000, not 1e+06), huge or
    fractional ones short (1e+308, 0.5)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, int) or (math.isfinite(v) and v.is_integer() and abs(v) < 1e15):
        return str(int(v))
    if math.isfinite(v) and 1e-9 <= abs(v) < 1e15:
        return f"{v:.12f}".rstrip("0")  # 0.000001, not 1e-06
    return f"{v:g}"


SWITCH_WORDS = {"on": True, "off": False, "true": True, "false": False, "1": True,
                "0": False, "yes": True, "no": False}


@dataclass(frozen=True)
class Option:
    """One option: its key, type, default, help and rule; how it is spelled is derived
    (see the module's docstring) unless ``flags`` names the spellings."""

    key: str
    kind: type  # bool, int, float, str, list (of ``item``) or tuple (of two ``item``)
    default: Any
    help: str
    flags: tuple[str, ...] = ()  # as typed; () = derived from the key
    lo: float | None = None  # inclusive bounds of a number (of each item of a list/tuple)
    hi: float | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False  # None allowed (and the default when it is None)
    item: type = str  # element type of lists and tuples
    mib: bool = False  # a byte count: limits are said in MiB
    table: str = ""  # its TOML table ("" = the suite's own, [NAME]; shared: any)
    # The typed text of a flag -> the value (a syntax of its own: sizes with units, IMB's
    # -off_cache size[,line]); raises UsageError naming ``flag``.
    text: Callable[[str, str], Any] | None = None
    # A value's own rule instead of the kind's (IMB-P2P's -iter max,numerator): ``convert(
    # value, where)`` returns the canonical value or raises UsageError naming ``where``.
    convert: Callable[[Any, str], Any] | None = None
    # A flag that sets other options (IMB's -msglog sets msglog_min and msglog_max): the
    # keys with how an error names each part; ``text`` returns {key: value}. Not stored.
    sets: tuple[tuple[str, str], ...] = ()
    repeat: bool = False  # the flag may be given again; its values accumulate (a list)
    words: bool = False  # IMB's -include a b c: a list that takes the words up to the next flag
    positional: bool = False  # IMB-style suites: the words that are no flag (benchmark names)
    metavar: str = ""
    toml_only: bool = False  # no flag: set in TOML or by a flag that ``sets`` it
    fixed: bool = False  # this suite does not let it be set: its default holds

    # ------------------------------------------------------------------ spellings
    def imb_flags(self) -> tuple[str, ...]:
        """Its spellings in ``beff imb SUITE`` (IMB's style)."""
        return self.flags or ("-" + self.key,)

    def long_flags(self) -> tuple[str, ...]:
        """Its spellings in a typer command: the declared ones a typer option can have
        (``--name``, ``-X``), else ``--key-name``."""
        usable = tuple(f for f in self.flags if f.startswith("--") or len(f) == 2)
        return usable or ("--" + self.key.replace("_", "-"),)

    @property
    def switch(self) -> bool:
        """A bool spelled with two dashes is a switch (``--check``); with one, IMB's
        ``-sync on|off``."""
        return self.kind is bool

    def flag(self) -> str:
        """How a message names it on the command line."""
        return self.long_flags()[0] if not self.flags else self.flags[-1]

    def bound(self, v: float) -> str:
        """A limit as people write it: whole numbers in full, byte counts in MiB."""
        if self.mib:
            return f"{v / (1 << 20):g} MiB"
        return shown(v)

    # ------------------------------------------------------------------ values
    def parse(self, text: str, flag: str) -> Any:
        """The value of ``flag`` as typed on the command line, checked (a ``sets`` option
        returns {key: value}, each part checked by its caller)."""
        if self.text is not None:
            value = self.text(text, flag)
            return value if self.sets else self.check(value, flag)
        if self.kind is bool:
            value = SWITCH_WORDS.get(text.lower(), text)
            if not isinstance(value, bool):
                raise UsageError(f"{flag} expects one of on|off, got {text!r}")
            return self.check(value, flag)
        if self.kind in (int, float):
            try:
                number: Any = self.kind(text)
            except ValueError:
                what = "an integer" if self.kind is int else "a number"
                raise UsageError(f"{flag} expects {what}, got {text!r}") from None
            return self.check(number, flag)
        if self.kind is list:
            items = [t for t in text.replace(",", " ").split() if t] if self.item is str \
                else [t.strip() for t in text.split(",")]
            if self.item is int:
                try:
                    return self.check([int(t) for t in items], flag)
                except ValueError:
                    raise UsageError(f"{flag}: expected comma-separated whole numbers, got "
                                     f"{text!r}") from None
            return self.check(items, flag)
        if self.choices:
            text = text.lower()
        return self.check(text, flag)

    def check(self, value: Any, name: str) -> Any:
        """``value`` checked against this option's rule, normalized (tuples, floats);
        UsageError messages name it ``name``."""
        if self.convert is not None:
            return self.convert(value, name)
        if value is None:
            if self.optional or self.default is None:
                return None
            raise UsageError(f"{name} must be set")
        kind = self.kind
        if kind is bool:
            if not isinstance(value, bool):
                raise UsageError(f"{name} expects true or false, got {value!r}")
            return value
        if kind in (int, float):
            return self._number(value, kind, name)
        if kind is str:
            if not isinstance(value, str) or not value:
                raise UsageError(f"{name} expects a non-empty string, got {value!r}")
            if self.choices and value not in self.choices:
                raise UsageError(f"{name} expects one of {'|'.join(self.choices)}, got "
                                 f"{value!r}")
            return value
        if kind is list:
            if not isinstance(value, list):
                raise UsageError(f"{name} expects a list, got {value!r}")
            if self.item is int:
                return [self._number(v, int, name) for v in value]
            for v in value:
                if not isinstance(v, str) or not v:
                    raise UsageError(f"{name} expects a list of non-empty strings, got "
                                     f"{value!r}")
                if self.choices and v not in self.choices:
                    raise UsageError(f"{name}: unknown {v!r} (known: "
                                     f"{', '.join(self.choices)})")
            return list(value)
        # tuple of two numbers of ``item``
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise UsageError(f"{name} expects two numbers, got {value!r}")
        return tuple(self._number(v, self.item, name) for v in value)

    def _number(self, v: Any, kind: type, name: str) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (
                kind is int and not isinstance(v, int)):
            want = "an integer" if kind is int else "a number"
            raise UsageError(f"{name} expects {want}, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise UsageError(f"{name} expects a finite number, got {v!r}")
        if (self.lo is not None and v < self.lo) or (self.hi is not None and v > self.hi):
            raise UsageError(f"{name} must be between {self.bound(self.lo or 0)} and "
                             f"{self.bound(self.hi or 0)}, got {shown(v)}")
        return kind(v)

    def help_line(self) -> str:
        """Its help with its default, as ``--help`` and ``beff list`` say it."""
        if self.sets or self.default in (None, "", []) or "default" in self.help or (
                self.kind is bool and not self.default):
            return self.help
        if isinstance(self.default, bool):
            default = "on"
        elif isinstance(self.default, (list, tuple)):
            default = ",".join(map(str, self.default))
        else:
            default = self.default if isinstance(self.default, str) else shown(self.default)
        return f"{self.help} (default {default})"


class Values(dict[str, Any]):
    """A suite's option values by key; also readable as attributes (``cfg.options.time``)."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


# beff's own options, shared by every command that runs a suite.
SHARED = (
    Option("output", str, None, "result file (default beff-<UTC time>-<random>.h5)",
           flags=("-o", "--output"), optional=True, metavar="FILE.h5"),
    Option("format", str, "table", "output format (each suite renders its own: "
           "Suite.formats)", flags=("--format",)),
    Option("check", bool, False, "verify the data received or read back", flags=("--check",)),
    Option("strict", bool, False, "exit with code 4 when a row ended time-out, out-of-mem or "
           "failed, checked data came back corrupted, a requested benchmark was not "
           "measured, the run is not complete, or a warning voids its figures "
           "(oversubscribed); one 'beff: strict:' line on stderr says why (a run writes its "
           "result file first)", flags=("--strict",)),
    Option("progress", bool, None, "progress on stderr (default: a live bar on a terminal, a "
           "line every 10 s in a log)", flags=("--progress", "--no-progress"), optional=True),
    Option("batches", int, 10, "timed batches per message size (default 10)",
           flags=("--batches",), lo=1, hi=1000, metavar="N"),
    Option("backend", str, "auto", "timed loops: jit (compiled with numba), python, or auto "
           "(jit when it works)", flags=("--backend",), choices=BACKENDS),
    Option("config_file", str, None, "TOML config file", flags=("--config",), optional=True,
           metavar="FILE.toml"),
    Option("report", str, None, "at the end, write a report page of the run (HTML with its "
           "figures) to this file", flags=("--report",), optional=True, metavar="FILE.html"),
    Option("force", bool, False, "replace the -o file if it exists; with --resume, resume it "
           "even where the configuration, rank count or MPI library differ", flags=("--force",)),
    Option("resume", str, None, "continue FILE, the result file of an earlier run of the same "
           "command that ended early (a time limit, a failure, Ctrl-C): its results are kept, "
           "the rest is measured and appended to it (IMB-style suites, b_eff, b_eff_io)",
           flags=("--resume",), optional=True, metavar="FILE.h5"),
    Option("timeout", float, None, "abort the whole job after this many seconds",
           flags=("--timeout",), lo=1.0, hi=30 * MAX_TIME_S, optional=True, metavar="SECS"),
    Option("stall_timeout", float, None, "abort when one step (a message size, a b_eff length, "
           "an I/O access method at one partition size) takes longer than this many seconds "
           "(default: a generous multiple of what a step should take)",
           flags=("--stall-timeout",), lo=1.0, hi=MAX_TIME_S, optional=True, metavar="SECS"),
    Option("thread_level", str, "single", "MPI thread level (default single)",
           flags=("-thread_level", "--thread-level"), choices=THREAD_LEVELS),
    Option("hugepages", bool, False, "2 MiB-aligned buffers advised for transparent hugepages "
           "(default: laid out like the original's malloc buffers)", flags=("--hugepages",)),
)
SHARED_BY_KEY = {o.key: o for o in SHARED}
