"""The one run configuration: defaults, then a TOML file, then command-line flags, each value
checked by its option's one declaration (:mod:`beff.core.options`).

Every field records where its value came from (``default``, ``config:<file>`` or ``cli``);
the whole object is stored in the result file.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beff.core import options
from beff.core.errors import UsageError

if TYPE_CHECKING:
    from beff.core.suite import Suite

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

MAX_TIME_S = options.MAX_TIME_S
MAX_COUNT = options.MAX_COUNT
shown = options.shown
S = options.SHARED_BY_KEY


@dataclass
class RunConfig:
    """One run's configuration: beff's shared options as fields (their declarations are
    :data:`beff.core.options.SHARED`), the suite's own options by key in ``options``
    (``cfg.options.time``), and where each value came from (``default``, ``config:<file>``
    or ``cli``). The whole object is stored in the result file."""

    suite: str = ""
    output: str | None = S["output"].default
    format: str = S["format"].default
    check: bool = S["check"].default
    strict: bool = S["strict"].default
    progress: bool | None = S["progress"].default
    batches: int = S["batches"].default
    backend: str = S["backend"].default
    config_file: str | None = S["config_file"].default
    report: str | None = S["report"].default
    force: bool = S["force"].default
    resume: str | None = S["resume"].default
    timeout: float | None = S["timeout"].default
    stall_timeout: float | None = S["stall_timeout"].default
    thread_level: str = S["thread_level"].default
    hugepages: bool = S["hugepages"].default
    options: options.Values = field(default_factory=options.Values)
    argv: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    def given(self) -> set[str]:
        """The keys set by a flag or in TOML (not left at their default)."""
        return {k for k, source in self.sources.items() if source != "default"}

    def to_json(self) -> str:
        """The whole config as JSON (stored in the result file)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str, suite: Suite | None = None) -> RunConfig:
        """Inverse of :meth:`to_json`. A file of an earlier beff kept every option at the top
        level: those that are no shared option go to ``options``. With ``suite``, its
        options' values are normalized by their declarations (JSON has no tuples)."""
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        own = options.Values(kwargs.pop("options", None) or {})
        own.update({k: v for k, v in data.items() if k not in names})
        for o in suite.options if suite is not None else ():
            if o.key in own and not o.sets:
                own[o.key] = o.check(own[o.key], o.key)
        return cls(**kwargs, options=own)


FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(RunConfig))


def _where(key: str, source: str) -> str:
    """How an error names the value: the flag, or the key and its TOML file."""
    if source.startswith("config:"):
        return f"{key} (from {source[len('config:'):]})"
    return source if source.startswith("-") else key


def stall_limit(cfg: RunConfig, step_seconds: float) -> float:
    """The per-step guard: ``--stall-timeout``, else max(120 s, 20 x what a step should
    take) — generous, as oversubscribed and loaded nodes are slow."""
    if cfg.stall_timeout is not None:
        return cfg.stall_timeout
    return max(120.0, 20.0 * step_seconds)


def _shared_from_toml(path: str, key: str) -> Any:
    """A shared option's value in a TOML file (top level, or any table), unchecked; None
    when the file cannot be read (rank 0 reports that after MPI_Init, as any other)."""
    try:
        data = read_toml(path)
    except UsageError:
        return None
    if key in data:
        return data[key]
    return next((t[key] for t in data.values() if isinstance(t, dict) and key in t), None)


def thread_level_before_init(overrides: Mapping[str, Any]) -> str:
    """The thread level must be known before MPI_Init: from the flags, else the TOML file."""
    if "thread_level" in overrides:
        return str(overrides["thread_level"])
    path = overrides.get("config_file")
    value = _shared_from_toml(str(path), "thread_level") if path else None
    return value if isinstance(value, str) and value in options.THREAD_LEVELS else "single"


def limits_before_init(overrides: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """``--timeout`` and ``--stall-timeout`` before MPI_Init: from the flags, else the TOML
    file, as every rank reads them. A value rank 0 is going to refuse counts as unset."""
    found: list[float | None] = []
    for key in ("timeout", "stall_timeout"):
        value = overrides.get(key)
        path = overrides.get("config_file")
        if value is None and path:
            value = _shared_from_toml(str(path), key)
        try:
            found.append(S[key].check(value, key))
        except UsageError:
            found.append(None)
    return found[0], found[1]


def declared(suite: Suite) -> dict[str, options.Option]:
    """Every option a run of ``suite`` has, by key: the shared ones and the suite's own
    (less the flags that only set others)."""
    return {**{k: o for k, o in S.items() if k not in suite.unused},
            **{o.key: o for o in suite.options if not o.sets}}


def build_config(overrides: Mapping[str, Any], config_file: str | None = None,
                 suite: Suite | None = None) -> RunConfig:
    """Defaults, then the TOML file (if any), then the command-line overrides, each checked
    by its declaration; then the suite's rules that tie values together."""
    if suite is None:
        from beff.core import suite as suites

        suite = suites.get(str(overrides["suite"]))
    known = declared(suite)
    values: dict[str, Any] = {k: o.default for k, o in known.items()}
    sources = dict.fromkeys(known, "default")
    if config_file is not None:
        for key, value in load_toml(config_file, suite).items():
            values[key] = value
            sources[key] = f"config:{config_file}"
        values["config_file"] = config_file
    flat = {k: v for k, v in overrides.items() if k not in ("options", "argv", "suite")}
    flat.update(overrides.get("options") or {})
    for key, value in flat.items():
        if key not in known or known[key].fixed:
            raise UsageError(f"unknown option {key!r} of {suite.command}")
        values[key] = known[key].check(value, key if key in S else known[key].flag())
        sources[key] = "cli"
    cfg = RunConfig(suite=suite.name, argv=list(overrides.get("argv") or []), sources=sources,
                    options=options.Values({k: v for k, v in values.items() if k not in S}),
                    **{k: v for k, v in values.items() if k in S})
    if cfg.sources["format"] == "default":
        cfg.format = suite.formats[0]
    else:
        suite.check_format(cfg.format, _where("format", cfg.sources["format"]) if
                           cfg.sources["format"] != "cli" else "--format")
    suite.check_values(cfg.options, cfg.given())
    return cfg


# Keys of the configuration that a config file cannot set (they were accepted and then
# silently ignored): what to do instead.
NOT_IN_TOML = {
    "suite": "the suite is the command's choice, not the file's",
    "config_file": "a config file cannot name another one; give --config once",
}


def read_toml(path: str) -> dict[str, Any]:
    """A TOML file's contents (UsageError when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
            return data
    except FileNotFoundError:
        raise UsageError(f"config file not found: {path}") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read config file {path}: {exc}") from None


def load_toml(path: str, suite: Suite) -> dict[str, Any]:
    """The values a TOML file gives a run of ``suite``, checked. Keys are named like the
    options: shared ones at the top level, in ``[beff]`` or in any table; a suite's in its
    table (``[imb]``, ``[b_eff]``, ``[io]``, ``[p2p]`` ...) or at the top level. A file may
    serve several commands: keys of other suites' tables are checked by their own
    declarations and left to them; a key no suite declares is an error."""
    from beff.core import suite as suites

    data = read_toml(path)
    mine = declared(suite)
    tables: dict[str, dict[str, list[options.Option]]] = {}  # table -> key -> declarations
    for s in suites.suites():
        for o in s.options:
            if not o.sets:
                if not o.fixed:
                    tables.setdefault(o.table or s.name, {}).setdefault(o.key, []).append(o)
    anywhere = {k for t in tables.values() for k in t}
    out: dict[str, Any] = {}

    def take(key: str, value: Any, table: str) -> None:
        where = f"{key} (from {path})"
        if key in NOT_IN_TOML:
            raise UsageError(f"key {key!r} in {path}: {NOT_IN_TOML[key]}")
        own = mine.get(key)
        if own is not None and not own.fixed and (
                key in S or table in ("", "beff", own.table or suite.name)):
            out[key] = _from_toml(own, value, where)
            return
        others = tables.get(table, {}).get(key, []) if table not in ("", "beff") else \
            [o for t in tables.values() for o in t.get(key, [])]
        if others:
            if table not in ("", "beff"):  # another suite's table: its rule holds
                _from_toml(others[0], value, where)
            return
        if table in ("", "beff"):
            raise UsageError(f"unknown key(s) in {path}: {key}")
        raise UsageError(f"unknown key {key!r} in table [{table}] of {path}")

    for key, value in data.items():
        if isinstance(value, dict) and (key in tables or key == "beff"):
            for sub, v in value.items():
                take(sub, v, key)
        elif isinstance(value, dict) and key not in anywhere:
            raise UsageError(f"unknown table [{key}] in {path} (known: "
                             f"{', '.join(sorted(tables))})")
        else:
            take(key, value, "")
    return out


def _from_toml(option: options.Option, value: Any, where: str) -> Any:
    """A TOML value checked by its option; a string for a number or a list is read as the
    flag's text would be (``memory_per_proc = "64MiB"``)."""
    if isinstance(value, str) and option.kind not in (str, list) and option.text is not None:
        value = option.text(value, where)
    return option.check(value, where)


SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20,
              "mb": 10**6, "mib": 1 << 20, "g": 1 << 30, "gb": 10**9, "gib": 1 << 30,
              "t": 1 << 40, "tb": 10**12, "tib": 1 << 40}


def parse_size(text: str, what: str) -> int:
    """Parse a byte count such as ``65536``, ``64MiB``, ``64M`` (= MiB), ``1GB`` (= 10^9)."""
    s = text.strip().lower().replace(" ", "")
    digits = s.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = s[len(digits):]
    try:
        value = float(digits)
    except ValueError:
        raise UsageError(f"{what}: not a size: {text!r} (e.g. 512MiB, 2G, 1048576)") from None
    if unit not in SIZE_UNITS or value < 0 or not math.isfinite(value):
        raise UsageError(f"{what}: not a size: {text!r} (e.g. 512MiB, 2G, 1048576)")
    return int(value * SIZE_UNITS[unit])


def parse_int_list(text: str, what: str) -> list[int]:
    """Parse ``1,2,4`` (UsageError for anything else)."""
    try:
        values = [int(t) for t in text.split(",")]
    except ValueError:
        raise UsageError(f"{what}: expected comma-separated whole numbers, got {text!r}") \
            from None
    return values


def read_lines(path: str, what: str) -> list[str]:
    """The stripped lines of a UTF-8 text file given with flag ``what``; UsageError else."""
    try:
        with open(path, encoding="utf-8") as fh:
            return [ln.strip() for ln in fh]
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"{what}: cannot read {path}: {exc.strerror}") from None


def default_output() -> str:
    """A result file name unique per run: UTC time plus random hex (job arrays start many
    runs in one second, in one directory)."""
    return time.strftime("beff-%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.urandom(3).hex()}.h5"


def check_output_kind(path: str, flag: str = "-o", example: str = "run.h5") -> None:
    """An output (``-o`` by default) names a regular file or nothing yet (checked before MPI
    starts, and again by rank 0)."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{flag} {path}: is a directory; give a file name, e.g. "
                         f"{path}/{example}")
    if target.exists() and not target.is_file():
        raise UsageError(f"{flag} {path}: not a regular file (a device, pipe or socket); give "
                         "a file name")


def check_output_path(path: str, force: bool = False, config_file: str | None = None) -> None:
    """Fail early (exit 2) when the result file cannot or must not be written.

    An existing file is never replaced unless ``--force`` is given, and the config file never.
    """
    if not path.strip():
        raise UsageError("-o: the result file name is empty")
    target = Path(path)
    check_output_kind(path)
    if config_file is not None and target.exists() and target.resolve() == Path(
            config_file).resolve():
        raise UsageError(f"-o {path}: that is the --config file")
    if target.exists() and not force:
        raise UsageError(f"-o {path}: the file exists ({describe_existing(target)}); use "
                         "--force to replace it, or another name")
    parent = target.resolve().parent
    if not parent.is_dir():
        raise UsageError(f"output directory does not exist: {parent}")
    probe = parent / f".beff-write-test-{os.urandom(4).hex()}"
    try:
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write to {parent}: {exc.strerror}") from None


def describe_existing(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return "unreadable"
    return "an HDF5 file, perhaps an earlier result" if head == b"\x89HDF\r\n\x1a\n" else \
        "not a beff result"
