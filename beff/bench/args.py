"""IMB's own command line: single-dash flags and benchmark names, parsed without MPI.

``mpirun -np 4 IMB-MPI1 -msglog 3:7 -npmin 2 PingPong`` ports to
``mpirun -np 4 beff imb mpi1 -msglog 3:7 -npmin 2 PingPong``. beff's own options use two
dashes (``--format``, ``--check``, ``--config``, ``--progress``) plus ``-o PATH``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from beff.bench.schedule import parse_msglog, parse_size_list
from beff.core import config as C
from beff.core.errors import UsageError
from beff.core.suite import Suite

Parser = Callable[[str], dict[str, Any]]


def _int(flag: str, minimum: int | None = None) -> Callable[[str], int]:
    def conv(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise UsageError(f"{flag} expects an integer, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise UsageError(f"{flag} must be at least {minimum}, got {value}")
        return value

    return conv


def _float(flag: str, positive: bool = False) -> Callable[[str], float]:
    def conv(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"{flag} expects a number, got {text!r}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise UsageError(f"{flag} expects a finite number, got {text!r}")
        if positive and value <= 0:
            raise UsageError(f"{flag} must be positive, got {text}")
        if value < 0:
            raise UsageError(f"{flag} must not be negative, got {text}")
        return value

    return conv


def _choice(flag: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    def conv(text: str) -> str:
        value = text.lower()
        if value not in choices:
            raise UsageError(f"{flag} expects one of {'|'.join(choices)}, got {text!r}")
        return value

    return conv


def _onoff(flag: str) -> Callable[[str], bool]:
    def conv(text: str) -> bool:
        return _choice(flag, ("on", "off"))(text) == "on"

    return conv


def _names(text: str) -> list[str]:
    return [t for t in text.replace(",", " ").split() if t]


def _msglog(text: str) -> dict[str, Any]:
    lo, hi = parse_msglog(text)
    return {"msglog_min": lo, "msglog_max": hi}


def _iter(text: str) -> dict[str, Any]:
    """``-iter msgspersample[,overall_vol_MiB[,msgs_nonaggr]][,policy]``."""
    out: dict[str, Any] = {}
    numbers: list[int] = []
    for token in [t for t in text.split(",") if t]:
        if token.lower() in C.ITER_POLICIES:
            out["iter_policy"] = token.lower()
        else:
            numbers.append(_int("-iter", 1)(token))
    if len(numbers) > 3:
        raise UsageError(f"-iter takes at most three numbers, got {text!r}")
    keys = ("msgspersample", "overall_vol_mib", "msgs_nonaggr")
    for key, value in zip(keys, numbers, strict=False):
        out[key] = value
    if not out:
        raise UsageError("-iter expects msgspersample[,overall_vol[,msgs_nonaggr]][,policy]")
    return out


def _off_cache(text: str) -> dict[str, Any]:
    """``-off_cache cache_size[,line]`` in MiB, as IMB: a negative size alone means the
    defaults (8 MiB, 64 B lines); a size <= 0 otherwise turns the mode off."""
    parts = text.split(",")
    try:
        if len(parts) > 2:
            raise ValueError
        size = float(parts[0])
        line = int(parts[1]) if len(parts) > 1 else C.DEFAULT_CACHE_LINE
    except ValueError:
        raise UsageError(f"-off_cache expects cache_size[,cache_line_size], got {text!r}") from None
    if line <= 0:
        raise UsageError(f"-off_cache line size must be positive, got {text!r}")
    if size < 0 and len(parts) == 1:
        return {"off_cache": (C.DEFAULT_CACHE_MB, C.DEFAULT_CACHE_LINE)}
    return {"off_cache": (size, line) if size > 0 else None}


def _map(text: str) -> dict[str, Any]:
    try:
        p, q = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"-map expects PxQ, got {text!r}") from None
    if p < 1 or q < 1:
        raise UsageError(f"-map expects positive P and Q, got {text!r}")
    return {"map": (p, q)}


def _multi(text: str) -> dict[str, Any]:
    value = _int("-multi")(text)
    if value not in (0, 1):
        raise UsageError(f"-multi expects 0 or 1, got {text!r}")
    return {"multi": value}


def _single(key: str, conv: Callable[[str], Any]) -> Parser:
    return lambda text: {key: conv(text)}


# Flag -> parser of its value. Values never start a new flag, except negative numbers.
FLAGS: dict[str, Parser] = {
    "-msglog": _msglog,
    "-msglen": _single("msglen_file", str),
    "-msgsize": _single("msglen", lambda t: parse_size_list(t, "-msgsize")),
    "-npmin": _single("npmin", _int("-npmin", 1)),
    "-multi": _multi,
    "-map": _map,
    "-off_cache": _off_cache,
    "-iter": _iter,
    "-iter_policy": _single("iter_policy", _choice("-iter_policy", C.ITER_POLICIES)),
    "-time": _single("time", _float("-time", positive=True)),
    "-mem": _single("mem_gb", _float("-mem", positive=True)),
    "-input": _single("input_file", str),
    "-include": _single("include", _names),
    "-exclude": _single("exclude", _names),
    "-thread_level": _single("thread_level", _choice("-thread_level", C.THREAD_LEVELS)),
    "-sync": _single("sync", _onoff("-sync")),
    "-root_shift": _single("root_shift", _onoff("-root_shift")),
    "-zero_size": _single("zero_size", _onoff("-zero_size")),
    "-warm_up": _single("warm_up", _onoff("-warm_up")),
    "-msg_pause": _single("msg_pause", _onoff("-msg_pause")),
    "-aggregate_mode": _single("aggregate_mode",
                               _choice("-aggregate_mode", C.AGGREGATE_MODES)),
    "-window_size": _single("window_size", _int("-window_size", 1)),
    "-data_type": _single("data_type", _choice("-data_type", C.DATA_TYPES)),
    "-red_data_type": _single("red_data_type", _choice("-red_data_type", C.RED_DATA_TYPES)),
    "--io-dir": _single("io_dir", str),
    "--hints": _single("hints_file", str),
}
# Flags that may be given more than once; their values accumulate in a list.
REPEATED: dict[str, str] = {"--hint": "hints"}
SWITCHES: dict[str, dict[str, Any]] = {
    "--keep-files": {"keep_files": True},
    "--drop-cache": {"drop_cache": True},
}


def _shared() -> None:
    """beff's own options that every command takes, from their one declaration (the flags
    and rules of RunConfig): the same spelling and checks as `beff run` and `beff io`."""
    for key, rule in C.RULES.items():
        if rule.family != "common" or not rule.flags or key == "thread_level":
            continue  # IMB has its own -thread_level
        if rule.kind is bool:
            SWITCHES[rule.flags[0]] = {key: True}
            if len(rule.flags) == 2 and rule.flags[1] == "--no-" + rule.flags[0][2:]:
                SWITCHES[rule.flags[1]] = {key: False}
            continue
        conv: Callable[[str], Any]
        if rule.choices:
            conv = _choice(rule.flags[-1], rule.choices)
        elif rule.kind is int:
            conv = _int(rule.flags[-1], int(rule.lo) if rule.lo is not None else None)
        elif rule.kind is float:
            conv = _float(rule.flags[-1], positive=True)
        else:
            conv = str
        for flag in rule.flags:
            FLAGS[flag] = _single(key, conv)


_shared()
# Flags that may take a list of names up to the next flag (IMB's -include a b c).
LIST_FLAGS = ("-include", "-exclude")


# IMB flags a component lacks (IMB_NOTES §2): that binary rejects them, and so does beff
# rather than ignore them. EXT and RMA move MPI_BYTE and reduce MPI_FLOAT, whatever the types.
ABSENT: dict[str, tuple[str, ...]] = {
    "mpi1": ("-aggregate_mode",),
    "nbc": ("-aggregate_mode",),
    "mpi4": ("-aggregate_mode",),
    "ext": ("-data_type", "-red_data_type", "-msgsize", "-zero_size", "-root_shift", "-sync",
            "-window_size"),
    "rma": ("-data_type", "-red_data_type", "-msgsize", "-zero_size", "-window_size"),
    "io": ("-data_type", "-red_data_type", "-msgsize", "-zero_size", "-root_shift", "-sync",
           "-window_size"),
}
# beff's own flags that only the I/O suite has.
IO_ONLY = ("--io-dir", "--keep-files", "--drop-cache", "--hint", "--hints")


def refuse_foreign(argv: list[str], suite: Suite, component: str,
                   allowed: tuple[str, ...] = ()) -> None:
    """For a suite with options of its own (IMB-P2P, IMB-MT): reject the IMB-MPI1 flags in
    ``argv`` that its IMB component does not have. beff's shared flags, the suite's own and
    ``allowed`` are fine."""
    shared = {f for rule in C.RULES.values() if rule.family == "common" for f in rule.flags}
    imb = set(FLAGS) | set(SWITCHES) | set(REPEATED)
    foreign = [t for t in argv if t.lower() in imb and t not in shared
               and t.lower() not in allowed and suite.flag(t.lower()) is None]
    if foreign:
        raise UsageError(f"{foreign[0]} is not an option of {component} (see `beff list "
                         f"{suite.name}`; its own: "
                         + " ".join(f for o in suite.options for f in o.flags) + ")")


def check_suite(suite: str, argv: list[str]) -> None:
    """Reject the IMB flags that ``suite``'s IMB component does not have."""
    for token in argv:
        if token.lower() in ABSENT.get(suite, ()):
            raise UsageError(f"{token} is not an option of IMB-{suite.upper()} "
                             "(see `beff imb --help`)")
        if suite != "io" and token.lower() in IO_ONLY:
            raise UsageError(f"{token} is an option of the I/O suite only (beff imb io)")


# How an error names one of several values a flag sets (-msglog min:max, -iter a,b,c).
PART_NAMES = {"msglog_min": "min", "msglog_max": "max", "msgspersample": "msgspersample",
              "overall_vol_mib": "overall_vol", "msgs_nonaggr": "msgs_nonaggr",
              "iter_policy": "policy"}


def _check(token: str, parsed: dict[str, Any]) -> None:
    """Each value a flag sets, checked by its key's rule at once, so that the error names the
    flag as typed (``-time``, ``-iter overall_vol``), not the config key."""
    for key, value in parsed.items():
        rule = C.RULES.get(key)
        if rule is None:
            continue
        name = token if len(parsed) == 1 else f"{token} {PART_NAMES.get(key, key)}"
        C.check_rule(rule, value, name, key)


def parse(argv: list[str], suite: Suite | None = None) -> dict[str, Any]:
    """Parse IMB-style arguments into config overrides (raises UsageError). A flag that
    ``suite`` declares itself means what the suite says (its ``options``), before IMB's."""
    out: dict[str, Any] = {"benchmarks": []}
    i = 0
    while i < len(argv):
        token = argv[i]
        key = token.lower() if token.startswith("-") else token
        own = suite.flag(key) if suite is not None else None
        if own is not None:
            if i + 1 >= len(argv):
                raise UsageError(f"{token} needs a value")
            out.setdefault("options", {})[own.key] = own.parse(argv[i + 1], token)
            i += 2
            continue
        if key in SWITCHES:
            out.update(SWITCHES[key])
            i += 1
            continue
        if key in REPEATED:
            if i + 1 >= len(argv):
                raise UsageError(f"{token} needs a value")
            out.setdefault(REPEATED[key], []).append(argv[i + 1])
            i += 2
            continue
        if key in FLAGS:
            if i + 1 >= len(argv):
                raise UsageError(f"{token} needs a value")
            value = argv[i + 1]
            i += 2
            if key in LIST_FLAGS:
                while i < len(argv) and not argv[i].startswith("-"):
                    value += "," + argv[i]
                    i += 1
            parsed = FLAGS[key](value)
            _check(token, parsed)
            out.update(parsed)
            continue
        if token.startswith("-"):
            raise UsageError(f"unknown option {token!r} (see `beff imb --help`)")
        names = _names(token)
        if not names:
            raise UsageError(f"empty benchmark name {token!r} (see `beff list`)")
        out["benchmarks"].extend(names)
        i += 1
    if "msglen_file" in out and "msglen" in out:
        raise UsageError("-msglen and -msgsize cannot be combined")
    if not out["benchmarks"]:
        del out["benchmarks"]
    return out
