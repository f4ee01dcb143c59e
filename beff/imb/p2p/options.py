"""IMB-P2P's own flags, in its syntax, checked the same from a flag and from TOML ([p2p]).

``-iter max[,numerator]``, ``-msglog [k:]n``, ``-msglen FILE``, ``-msgsz size[K|M|G],...``,
``-msgrd``/``-msgwr`` (IMB-P2P's true/false words), ``-pause usec`` and beff's ``-seed``.
Values are stored as given in canonical form (``-iter 50`` is stored as ``"50,800"``), and
:func:`message_sizes` turns them into the list of message lengths, as IMB-P2P does.
"""

from __future__ import annotations

from typing import Any

from beff.bench.options import MAX_MSGLOG, switch
from beff.core.config import read_lines
from beff.core.errors import UsageError
from beff.core.suite import Option

MIB = 1 << 20
DEFAULT_ITER = "100000,800"  # IMB-P2P: at most 100000 repetitions, numerator 800 MiB
DEFAULT_MSGLOG = "22"  # 0, 1, 2, 4, ... 4 MiB: IMB-P2P's default list is -msglog 22's
MAX_ITER = 1 << 31
TRUE = ("1", "on", "enable", "yes", "true")
FALSE = ("0", "off", "disable", "no", "false")
SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _positive(text: str, where: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{where} expects {what}, got {text!r}") from None
    if not 1 <= value <= MAX_ITER:
        raise UsageError(f"{where} expects {what} between 1 and {MAX_ITER}, got {text!r}")
    return value


def parse_iter(value: Any) -> tuple[int, int]:
    """(max, numerator in MiB) of a checked ``-iter`` value."""
    first, _, second = str(value).partition(",")
    return int(first), int(second or DEFAULT_ITER.split(",")[1])


def check_iter(value: Any, where: str) -> str:
    """``-iter max[,numerator]``: positive integers; stored as "max,numerator"."""
    what = "max[,numerator] with positive integers"
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise UsageError(f"{where} expects {what}, got {value!r}")
    parts = value.split(",")
    if len(parts) > 2:
        raise UsageError(f"{where} expects {what}, got {value!r}")
    numbers = [_positive(p.strip(), where, what) for p in parts]
    if len(numbers) == 1:
        numbers.append(parse_iter(DEFAULT_ITER)[1])
    return f"{numbers[0]},{numbers[1]}"


def parse_msglog(value: str) -> list[int]:
    """The lengths of a checked ``-msglog``: "n" gives 0, 1, 2, 4, ..., 2^n; "k:n" gives
    2^k, ..., 2^n (IMB-P2P's two forms)."""
    if ":" in value:
        lo, hi = (int(v) for v in value.split(":"))
        return [1 << e for e in range(lo, hi + 1)]
    return [0] + [1 << e for e in range(int(value) + 1)]


def check_msglog(value: Any, where: str) -> str:
    what = f"n or k:n with 0 <= k <= n <= {MAX_MSGLOG}"
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise UsageError(f"{where} expects {what}, got {value!r}")
    parts = value.split(":")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        raise UsageError(f"{where} expects {what}, got {value!r}") from None
    if len(numbers) > 2 or not all(0 <= v <= MAX_MSGLOG for v in numbers) or (
            len(numbers) == 2 and numbers[0] > numbers[1]):
        raise UsageError(f"{where} expects {what}, got {value!r}")
    return ":".join(map(str, numbers))


def parse_size(token: str, where: str) -> int:
    """A message length as IMB-P2P reads it: digits, then an optional K, M or G (x 1024^k)."""
    text = token.strip()
    scale = SUFFIXES.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit():
        raise UsageError(f"{where}: not a message length: {token!r}")
    size = int(digits) * scale
    if size > 1 << MAX_MSGLOG:
        raise UsageError(f"{where}: {token!r} exceeds beff's limit of 2^{MAX_MSGLOG} bytes")
    return size


def check_msgsz(value: Any, where: str) -> str:
    """``-msgsz size[,size...]``: IMB-P2P takes one size per flag; beff takes a list."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise UsageError(f"{where} expects sizes such as 4097,5k,2m, got {value!r}")
    if not value:
        return ""
    sizes = [parse_size(t, where) for t in value.split(",")]
    return ",".join(map(str, sizes))


def check_path(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{where} expects a file name, got {value!r}")
    return value


check_switch = switch(TRUE, FALSE)


def read_msglen(path: str) -> list[int]:
    """``-msglen FILE``: one length per line (K, M or G suffix allowed); '#' lines and blank
    lines are skipped."""
    sizes = [parse_size(line, f"-msglen {path}") for line in read_lines(path, "-msglen")
             if line and not line.startswith("#")]
    if not sizes:
        raise UsageError(f"-msglen {path}: no message lengths in the file")
    return sizes


def message_sizes(options: dict[str, Any], given: set[str]) -> list[int]:
    """The message lengths of a run, in order: ``-msglen``'s file or ``-msglog``'s list
    (default: -msglog 22), then ``-msgsz``'s sizes. ``-msgsz`` alone replaces the default
    list (IMB-P2P's -msgsz adds to a list given before it, else starts one). ``given``: the
    keys set by a flag or TOML."""
    if "msglen" in given and "msglog" in given:
        raise UsageError("-msglen and -msglog cannot be combined (each sets the list)")
    extra = [int(v) for v in str(options.get("msgsz", "")).split(",") if v]
    if "msglen" in given:
        sizes = read_msglen(str(options["msglen"]))
    elif "msglog" in given or not extra:
        sizes = parse_msglog(str(options.get("msglog", DEFAULT_MSGLOG)))
    else:
        sizes = []
    return sizes + extra


OPTIONS = (
    Option("iter", str, DEFAULT_ITER, "repetitions = numerator MiB / size, at most max",
           flags=("-iter",), convert=check_iter),
    Option("msglog", str, DEFAULT_MSGLOG,
           "message lengths: n gives 0,1,2,4..2^n; k:n gives 2^k..2^n", flags=("-msglog",),
           convert=check_msglog),
    Option("msglen", str, "", "file of message lengths, one per line (K, M, G suffixes)",
           flags=("-msglen",), convert=check_path),
    Option("msgsz", str, "", "message lengths (K, M, G suffixes), comma-separated",
           flags=("-msgsz",), convert=check_msgsz),
    Option("msgrd", bool, True, "read one byte per cache line of each message received "
           "(in the timed loop)", flags=("-msgrd",), convert=check_switch),
    Option("msgwr", bool, True, "write one byte per cache line of each message before "
           "sending it (in the timed loop; off under --check)", flags=("-msgwr",),
           convert=check_switch),
    Option("pause", int, 100000, "microseconds of sleep before and after each size's "
           "loops", flags=("-pause",), lo=0, hi=100_000_000),
    Option("seed", int, 0, "start of the random partner choice (IMB-P2P's is 0)",
           flags=("-seed",), lo=0, hi=(1 << 63) - 1),
)
