"""The one run configuration: defaults, then a TOML file, then command-line flags.

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
from typing import Any

from beff.core.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ITER_POLICIES = ("dynamic", "multiple_np", "auto", "off")
AGGREGATE_MODES = ("aggregate", "non_aggregate", "multi")
THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")
FORMATS = ("table", "imb", "sum", "json", "csv")  # each suite renders some of them
DATA_TYPES = ("byte", "char", "int", "float", "double")
RED_DATA_TYPES = ("char", "int", "float", "double")
BACKENDS = ("auto", "jit", "python")
BEFF_METHODS = ("sendrecv", "alltoallv", "nonblocking", "irecv-send", "isend-recv")

# IMB_mem_info.h defaults used by ``-off_cache -1``.
DEFAULT_CACHE_MB = 8.0
DEFAULT_CACHE_LINE = 64


@dataclass(frozen=True)
class Rule:
    """What a config value may be; the same rule checks a flag, a TOML value and a default.

    ``family`` is the TOML table the key belongs to (``common`` keys go in any table or at
    the top level). Numbers have inclusive bounds: every count and time has an upper one.
    """

    family: str
    kind: type  # bool, int, float, str, list (of str or int), tuple (of numbers)
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False  # None allowed
    item: type = str  # element type of lists and tuples
    mib: bool = False  # a byte count: messages show MiB
    also: tuple[str, ...] = ()  # further TOML tables the key may stand in
    # beff's own flags for it, the same in every command that takes it (typer's commands and
    # `beff imb` are generated from them), and its help.
    flags: tuple[str, ...] = ()
    help: str = ""

    def allowed_in(self, table: str) -> bool:
        return table in (self.family, "common", *self.also) or self.family == "common"

    def bound(self, v: float) -> str:
        """A limit as people write it: whole numbers in full (1000000, not 1e+06)."""
        if self.mib:
            return f"{v / (1 << 20):g} MiB"
        return shown(v)


def _opt(default: Any, rule: Rule) -> Any:
    if isinstance(default, list):
        items = tuple(default)
        return field(default_factory=lambda: list(items), metadata={"rule": rule})
    return field(default=default, metadata={"rule": rule})


FAMILIES = ("common", "imb", "b_eff", "io")
MAX_TIME_S = 86400.0  # a day: the upper bound of every time
MAX_COUNT = 10**9  # the upper bound of every repetition or message count
MAX_MSGLOG = 34  # messages up to 16 GiB (beyond a C int count as blocks: core/counts.py)


@dataclass
class RunConfig:
    """Every option of a run. Field names double as TOML keys; each has a :class:`Rule`."""

    suite: str = _opt("mpi1", Rule("common", str))
    benchmarks: list[str] = _opt([], Rule("imb", list))
    include: list[str] = _opt([], Rule("imb", list))
    exclude: list[str] = _opt([], Rule("imb", list))
    input_file: str | None = _opt(None, Rule("imb", str, optional=True))
    # Message-length schedule: IMB's 0, 2^min .. 2^max unless msglen is given.
    msglog_min: int = _opt(0, Rule("imb", int, 0, MAX_MSGLOG))
    msglog_max: int = _opt(22, Rule("imb", int, 0, MAX_MSGLOG))
    msglen: list[int] | None = _opt(None, Rule("imb", list, 0, 1 << MAX_MSGLOG, optional=True,
                                               item=int))
    msglen_file: str | None = _opt(None, Rule("imb", str, optional=True))
    zero_size: bool = _opt(True, Rule("imb", bool))
    # Repetitions (IMB_settings.h).
    msgspersample: int = _opt(1000, Rule("imb", int, 1, MAX_COUNT))
    overall_vol_mib: int = _opt(40, Rule("imb", int, 1, 1 << 20))
    msgs_nonaggr: int = _opt(100, Rule("imb", int, 1, MAX_COUNT))
    iter_policy: str = _opt("dynamic", Rule("imb", str, choices=ITER_POLICIES))
    time: float = _opt(10.0, Rule("imb", float, 1e-6, MAX_TIME_S))
    mem_gb: float = _opt(1.0, Rule("imb", float, 1e-6, 1e6))
    warm_up: bool = _opt(True, Rule("imb", bool))
    # Process selection.
    npmin: int | None = _opt(None, Rule("imb", int, 1, 1 << 31, optional=True))
    multi: int | None = _opt(None, Rule("imb", int, 0, 1, optional=True))
    map: tuple[int, int] | None = _opt(None, Rule("imb", tuple, 1, 1 << 31, optional=True,
                                                  item=int))
    # Buffers and sync.
    off_cache: tuple[float, int] | None = _opt(None, Rule("imb", tuple, 1e-9, 1 << 20,
                                                          optional=True, item=float))
    sync: bool = _opt(True, Rule("imb", bool))
    root_shift: bool = _opt(False, Rule("imb", bool))
    window_size: int = _opt(256, Rule("imb", int, 1, 1 << 20))
    data_type: str = _opt("byte", Rule("imb", str, choices=DATA_TYPES))
    red_data_type: str = _opt("float", Rule("imb", str, choices=RED_DATA_TYPES))
    msg_pause: bool = _opt(False, Rule("imb", bool))
    # IMB-EXT/RMA/IO: run both modes ("multi") or one.
    aggregate_mode: str = _opt("multi", Rule("imb", str, choices=AGGREGATE_MODES))
    thread_level: str = _opt("single", Rule("common", str, choices=THREAD_LEVELS,
                                            flags=("--thread-level",),
                                            help="MPI thread level (default single)"))
    # I/O benchmarks: where the files go (default: the current directory), whether they stay,
    # dropping the page cache before reads, and MPI-IO hints ("key=value") for MPI_File_open.
    io_dir: str | None = _opt(None, Rule("io", str, optional=True))
    keep_files: bool = _opt(False, Rule("io", bool))
    drop_cache: bool = _opt(False, Rule("io", bool))
    hints: list[str] = _opt([], Rule("io", list))
    hints_file: str | None = _opt(None, Rule("io", str, optional=True))
    # b_eff_io (beff io): total memory (for "% of total memory"), the scheduled time T over
    # all partitions, the partition sizes, and the original's -rewrite, -noshared, -nounique.
    total_memory: int | None = _opt(None, Rule("io", int, 1 << 20, 1 << 62, optional=True,
                                               mib=True))
    scheduled_time: float | None = _opt(None, Rule("io", float, 1.0, MAX_TIME_S, optional=True))
    partitions: list[int] = _opt([], Rule("io", list, 1, 1 << 31, item=int))
    rewrite: bool = _opt(False, Rule("io", bool))
    noshared: bool = _opt(False, Rule("io", bool))
    nounique: bool = _opt(False, Rule("io", bool))
    # b_eff (beff run).
    memory_per_proc: int | None = _opt(None, Rule("b_eff", int, 1 << 20, 1 << 50,
                                                  optional=True, mib=True, also=("io",)))
    quick: bool = _opt(False, Rule("b_eff", bool, also=("io",)))
    time_per_loop: float | None = _opt(None, Rule("b_eff", float, 1e-6, 3600.0, optional=True))
    seed: int | None = _opt(None, Rule("b_eff", int, 0, (1 << 32) - 1, optional=True))
    methods: list[str] = _opt(["sendrecv", "alltoallv", "nonblocking"],
                              Rule("b_eff", list, choices=BEFF_METHODS))
    extra_methods_in_beff: bool = _opt(False, Rule("b_eff", bool))
    hugepages: bool = _opt(False, Rule(
        "common", bool, flags=("--hugepages",),
        help="2 MiB-aligned buffers advised for transparent hugepages (default: laid out "
             "like the original's malloc buffers)"))
    # beff's own options.
    output: str | None = _opt(None, Rule(
        "common", str, optional=True, flags=("-o", "--output"),
        help="result file (default beff-<UTC time>-<random>.h5)"))
    format: str = _opt("table", Rule("common", str, choices=FORMATS, flags=("--format",),
                                     help="output format (each suite renders its own)"))
    check: bool = _opt(False, Rule("common", bool, flags=("--check",),
                                   help="verify the data received or read back"))
    progress: bool | None = _opt(None, Rule(
        "common", bool, optional=True, flags=("--progress", "--no-progress"),
        help="progress on stderr (default: a live bar on a terminal, a line every 10 s "
        "in a log)"))
    batches: int = _opt(10, Rule("common", int, 1, 1000, flags=("--batches",),
                                 help="timed batches per message size (default 10)"))
    # Timed loops: jit (numba), python, or auto (jit if it works).
    backend: str = _opt("auto", Rule(
        "common", str, choices=BACKENDS, flags=("--backend",),
        help="timed loops: jit (compiled with numba), python, or auto (jit when it works)"))
    config_file: str | None = _opt(None, Rule("common", str, optional=True,
                                              flags=("--config",), help="TOML config file"))
    report: str | None = _opt(None, Rule(
        "common", str, optional=True, flags=("--report",),
        help="at the end, write a report page of the run (HTML with its figures) to this file"))
    force: bool = _opt(False, Rule("common", bool, flags=("--force",),
                                   help="replace the -o file if it exists"))
    # Watchdogs: the whole job, and each message size (b_eff: each length) of a benchmark.
    timeout: float | None = _opt(None, Rule(
        "common", float, 1.0, 30 * MAX_TIME_S, optional=True, flags=("--timeout",),
        help="abort the whole job after this many seconds"))
    stall_timeout: float | None = _opt(None, Rule(
        "common", float, 1.0, MAX_TIME_S, optional=True, flags=("--stall-timeout",),
        help="abort when one step (a message size, a b_eff length, an I/O access method at "
             "one partition size) takes longer than this many seconds (default: a generous "
             "multiple of what a step should take)"))
    # The suite's own options (core.suite.Option), by key: from its flags and its TOML table.
    options: dict[str, Any] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        """The whole config as JSON (stored in the result file)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        """Inverse of :meth:`to_json`; unknown keys from newer schemas are ignored."""
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        for key in ("map", "off_cache"):
            if kwargs.get(key) is not None:
                kwargs[key] = tuple(kwargs[key])
        return cls(**kwargs)


FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(RunConfig))
RULES: dict[str, Rule] = {f.name: f.metadata["rule"] for f in dataclasses.fields(RunConfig)
                          if "rule" in f.metadata}


def flag_of(key: str) -> str:
    """How the command line spells option ``key`` (its first declared flag)."""
    flags = RULES[key].flags
    return flags[-1] if flags else "--" + key.replace("_", "-")


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


def thread_level_before_init(overrides: dict[str, Any]) -> str:
    """The thread level must be known before MPI_Init: from the flags, else the TOML file.

    A TOML file that cannot be read is reported by rank 0 after MPI_Init, as any other.
    """
    if "thread_level" in overrides:
        return str(overrides["thread_level"])
    path = overrides.get("config_file")
    if path:
        try:
            return str(load_toml(path).get("thread_level", "single"))
        except UsageError:
            pass
    return "single"


def limits_before_init(overrides: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """``--timeout`` and ``--stall-timeout`` before MPI_Init: from the flags, else the TOML
    file, as every rank reads them. A value rank 0 is going to refuse counts as unset."""
    toml: dict[str, Any] | None = None
    found: list[float | None] = []
    for key in ("timeout", "stall_timeout"):
        value = overrides.get(key)
        path = overrides.get("config_file")
        if value is None and path:
            if toml is None:
                try:
                    toml = load_toml(path)
                except UsageError:
                    toml = {}
            value = toml.get(key)
        try:
            found.append(check_value(key, value))
        except UsageError:
            found.append(None)
    return found[0], found[1]


def check_value(key: str, value: Any, source: str = "cli") -> Any:
    """``value`` checked against the rule of ``key``; returns it normalized (tuples, floats).

    Raises UsageError naming the key and, for a TOML value, the file.
    """
    return check_rule(RULES[key], value, _where(key, source), key)


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


def check_rule(rule: Rule, value: Any, name: str, key: str = "") -> Any:
    """``value`` checked against ``rule``; UsageError messages name it ``name``."""
    if value is None:
        if rule.optional:
            return None
        raise UsageError(f"{name} must be set")

    def number(v: Any, kind: type) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (
                kind is int and not isinstance(v, int)):
            want = "an integer" if kind is int else "a number"
            raise UsageError(f"{name} expects {want}, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise UsageError(f"{name} expects a finite number, got {v!r}")
        if (rule.lo is not None and v < rule.lo) or (rule.hi is not None and v > rule.hi):
            raise UsageError(f"{name} must be between {rule.bound(rule.lo or 0)} and "
                             f"{rule.bound(rule.hi or 0)}, got {shown(v)}")
        return kind(v)

    if rule.kind is bool:
        if not isinstance(value, bool):
            raise UsageError(f"{name} expects true or false, got {value!r}")
        return value
    if rule.kind in (int, float):
        return number(value, rule.kind)
    if rule.kind is str:
        if not isinstance(value, str) or not value:
            raise UsageError(f"{name} expects a non-empty string, got {value!r}")
        if rule.choices and value not in rule.choices:
            raise UsageError(f"{name} expects one of {'|'.join(rule.choices)}, got {value!r}")
        return value
    if rule.kind is list:
        if not isinstance(value, list):
            raise UsageError(f"{name} expects a list, got {value!r}")
        if rule.item is int:
            return [number(v, int) for v in value]
        for v in value:
            if not isinstance(v, str) or not v:
                raise UsageError(f"{name} expects a list of non-empty strings, got {value!r}")
            if rule.choices and v not in rule.choices:
                raise UsageError(f"{name}: unknown {v!r} (known: {', '.join(rule.choices)})")
        return list(value)
    # tuple: map (P, Q) or off_cache (MiB, line)
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise UsageError(f"{name} expects two numbers, got {value!r}")
    if key == "off_cache":
        return (number(value[0], float), int(_bounded(name, value[1], 1, 1 << 20)))
    return tuple(number(v, int) for v in value)


def _bounded(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise UsageError(f"{name}: expected an integer between {lo} and {hi}, got {v!r}")
    return v


def validate(cfg: RunConfig) -> RunConfig:
    """Check every value against its rule, and the rules that tie values together."""
    for key in RULES:
        setattr(cfg, key, check_value(key, getattr(cfg, key), cfg.sources.get(key, "cli")))
    if cfg.msglog_min > cfg.msglog_max:
        raise UsageError(f"msglog_min ({cfg.msglog_min}) must not exceed msglog_max "
                         f"({cfg.msglog_max})")
    return cfg


def build_config(overrides: dict[str, Any], config_file: str | None = None) -> RunConfig:
    """Defaults, then the TOML file (if any), then the command-line overrides; validated."""
    cfg = RunConfig()
    sources = {name: "default" for name in FIELD_NAMES
               if name not in ("sources", "argv", "options")}
    own: dict[str, Any] = {}
    if config_file is not None:
        for key, value in load_toml(config_file).items():
            if key == "options":
                own.update(value)
                sources.update({f"options.{k}": f"config:{config_file}" for k in value})
                continue
            setattr(cfg, key, value)
            sources[key] = f"config:{config_file}"
        cfg.config_file = config_file
    for key, value in overrides.items():
        if key == "options":
            own.update(value)
            sources.update({f"options.{k}": "cli" for k in value})
            continue
        setattr(cfg, key, value)
        sources[key] = "cli"
    cfg.options = own
    cfg.sources = sources
    return validate(cfg)


# Keys of the configuration that a config file cannot set (they were accepted and then
# silently ignored): what to do instead.
NOT_IN_TOML = {
    "suite": "the suite is the command's (beff imb SUITE, beff run, beff io), not the file's",
    "config_file": "a config file cannot name another one; give --config once",
}


def load_toml(path: str) -> dict[str, Any]:
    """Read a beff TOML file: keys named like the options, at the top level or in the table
    of their family (``[imb]``, ``[b_eff]``, ``[io]``; ``[beff]`` as a synonym of the top
    level). Each value is checked by the rule of its key."""
    try:
        with open(path, "rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
    except FileNotFoundError:
        raise UsageError(f"config file not found: {path}") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read config file {path}: {exc}") from None
    from beff.core import suite as suites

    flat: dict[str, Any] = {}
    for key, value in data.items():
        own = suites.find(key) if isinstance(value, dict) and key not in FAMILIES else None
        if own is not None and own.options:  # a suite's own table: its own options
            for sub, v in value.items():
                option = next((o for o in own.options if o.key == sub), None)
                if option is None:
                    raise UsageError(f"unknown key {sub!r} in table [{key}] of {path}")
                flat.setdefault("options", {})[sub] = option.check(
                    v, f"{sub} (from {path})")
        elif isinstance(value, dict) and key in (*FAMILIES, "beff"):
            for sub, v in value.items():
                rule = RULES.get(sub)
                if rule is None or (key in FAMILIES and not rule.allowed_in(key)):
                    raise UsageError(f"unknown key {sub!r} in table [{key}] of {path}")
                flat[sub] = v
        elif key in NOT_IN_TOML:
            raise UsageError(f"key {key!r} in {path}: {NOT_IN_TOML[key]}")
        elif key in RULES:
            flat[key] = value
        else:
            raise UsageError(f"unknown key(s) in {path}: {key}")
    for key in ("memory_per_proc", "total_memory"):  # sizes may be written as in the flag
        if isinstance(flat.get(key), str):
            flat[key] = parse_size(flat[key], f"{key} (from {path})")
    return {key: v if key == "options" else check_value(key, v, f"config:{path}")
            for key, v in flat.items()}


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
