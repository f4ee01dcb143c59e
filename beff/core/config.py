"""The one run configuration: defaults, then a TOML file, then command-line flags.

Every field records where its value came from (``default``, ``config:<file>`` or ``cli``);
the whole object is stored in the result file.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beff.core.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ITER_POLICIES = ("dynamic", "multiple_np", "auto", "off")
THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")
FORMATS = ("table", "imb", "json", "csv")
DATA_TYPES = ("byte", "char", "int", "float", "double")
RED_DATA_TYPES = ("char", "int", "float", "double")

# IMB_mem_info.h defaults used by ``-off_cache -1``.
DEFAULT_CACHE_MB = 8.0
DEFAULT_CACHE_LINE = 64


@dataclass
class RunConfig:
    """Every option of a run. Field names double as TOML keys."""

    suite: str = "mpi1"
    benchmarks: list[str] = field(default_factory=list)
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    input_file: str | None = None
    # Message-length schedule: IMB's 0, 2^min .. 2^max unless msglen is given.
    msglog_min: int = 0
    msglog_max: int = 22
    msglen: list[int] | None = None
    msglen_file: str | None = None
    zero_size: bool = True
    # Repetitions (IMB_settings.h).
    msgspersample: int = 1000
    overall_vol_mib: int = 40
    msgs_nonaggr: int = 100
    iter_policy: str = "dynamic"
    time: float = 10.0
    mem_gb: float = 1.0
    warm_up: bool = True
    # Process selection.
    npmin: int | None = None
    multi: int | None = None
    map: tuple[int, int] | None = None
    # Buffers and sync.
    off_cache: tuple[float, int] | None = None
    sync: bool = True
    root_shift: bool = False
    window_size: int = 256
    data_type: str = "byte"
    red_data_type: str = "float"
    msg_pause: bool = False
    thread_level: str = "single"
    # b_eff (beff run).
    memory_per_proc: int | None = None
    quick: bool = False
    time_per_loop: float | None = None
    seed: int | None = None
    methods: list[str] = field(
        default_factory=lambda: ["sendrecv", "alltoallv", "nonblocking"])
    extra_methods_in_beff: bool = False
    hugepages: bool = False
    # beff's own options.
    output: str | None = None
    format: str = "table"
    check: bool = False
    progress: bool | None = None
    batches: int = 10
    backend: str = "auto"  # timed loops: jit (numba), python, or auto (jit if it works)
    config_file: str | None = None
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


def build_config(overrides: dict[str, Any], config_file: str | None = None) -> RunConfig:
    """Defaults, then the TOML file (if any), then the command-line overrides."""
    cfg = RunConfig()
    sources = {name: "default" for name in FIELD_NAMES if name not in ("sources", "argv")}
    if config_file is not None:
        for key, value in load_toml(config_file).items():
            setattr(cfg, key, value)
            sources[key] = f"config:{config_file}"
        cfg.config_file = config_file
    for key, value in overrides.items():
        setattr(cfg, key, value)
        sources[key] = "cli"
    cfg.sources = sources
    return cfg


def load_toml(path: str) -> dict[str, Any]:
    """Read a beff TOML file: top-level keys (or a ``[beff]`` table) named like the fields."""
    try:
        with open(path, "rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
    except FileNotFoundError:
        raise UsageError(f"config file not found: {path}") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read config file {path}: {exc}") from None
    if isinstance(data.get("beff"), dict):
        data = data["beff"]
    unknown = sorted(set(data) - FIELD_NAMES)
    if unknown:
        raise UsageError(f"unknown key(s) in {path}: {', '.join(unknown)}")
    for key in ("map", "off_cache"):
        if isinstance(data.get(key), list):
            data[key] = tuple(data[key])
    return data


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
    if unit not in SIZE_UNITS or value < 0 or value != value:
        raise UsageError(f"{what}: not a size: {text!r} (e.g. 512MiB, 2G, 1048576)")
    return int(value * SIZE_UNITS[unit])


def check_output_path(path: str) -> None:
    """Fail early (exit 2) when the result file cannot be created."""
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise UsageError(f"output directory does not exist: {parent}")
    probe = parent / f".beff-write-test-{Path(path).name}"
    try:
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write to {parent}: {exc.strerror}") from None
