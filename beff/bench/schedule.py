"""Message-length schedules and IMB's repetition rules (pure functions, no MPI)."""

from __future__ import annotations

from collections.abc import Sequence

from beff.core.config import read_lines
from beff.core.errors import UsageError

MIB = 1 << 20


TYPE_SIZES = {"byte": 1, "char": 1, "int": 4, "float": 4, "double": 8}


def imb_lengths(min_log: int, max_log: int, zero_size: bool = True, unit: int = 1,
                first_cap: int | None = None) -> list[int]:
    """IMB's schedule: [0,] then 2^min_log rounded up to the type size, doubling up to
    2^max_log (rounded down to the type size). ``first_cap`` caps the first non-zero length
    (IMB-EXT caps it at one 4-byte element, whatever min_log says)."""
    maxmsg = (1 << max_log) // unit * unit
    sizes = [0] if zero_size else []
    if zero_size and maxmsg == 0:  # e.g. floats with -msglog 0:1: IMB stops after the 0 row
        return sizes
    x = round_up((1 << min_log), unit)
    if first_cap is not None:
        x = round_up(min(x, first_cap), unit)
    while True:
        x = min(x, maxmsg)
        sizes.append(x)
        if x >= maxmsg:
            break
        x *= 2
    return sizes


def user_lengths(lengths: Sequence[int], max_log: int, unit: int = 1) -> list[int]:
    """IMB's handling of -msglen/-msgsize: clamp to 2^max_log, round up to the type size."""
    maxmsg = (1 << max_log) // unit * unit
    return [round_up(min(x, maxmsg), unit) for x in lengths]


def round_up(x: int, unit: int) -> int:
    return (x + unit - 1) // unit * unit


def read_msglen_file(path: str) -> list[int]:
    """Read ``-msglen FILE``: one length per line, optional k/K (x1024) or m/M (x2^20) suffix;
    lines starting with '#' and blank lines are skipped, as in IMB."""
    lines = read_lines(path, "-msglen")
    sizes: list[int] = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        scale = {"k": 1 << 10, "m": 1 << 20}.get(line[-1].lower(), 1)
        digits = line[:-1] if scale > 1 else line
        if not digits.isdigit():
            raise UsageError(f"-msglen {path}: not a message length: {line!r}")
        sizes.append(int(digits) * scale)
    if not sizes:
        raise UsageError(f"-msglen {path}: no message lengths in the file")
    return sizes


def initial_repetitions(nbytes: int, msgspersample: int, overall_vol: int, policy: str,
                        nprocs: int = 1, max_log: int = 22, x_sample: int | None = None) -> int:
    """IMB's start count n0 for one size (IMB_init_buffers_iter step 1).

    * ``off``: msgspersample;
    * ``multiple_np`` (or ``auto`` for rooted collectives, decided by the caller): the
      hyperbola ``msgspersample * M / (NP * max(X,4) + M)`` rounded to a multiple of NP,
      with M = 2^max_log;
    * otherwise: x_sample (msgspersample, or msgs_nonaggr in non-aggregate modes), capped by
      OVERALL_VOL / X for X > 0 (at least 1).
    """
    x = msgspersample if x_sample is None else x_sample
    if policy == "off":
        return msgspersample
    if policy == "multiple_np":
        m = float(1 << max_log)
        tmp = int(msgspersample * m / (nprocs * max(nbytes, 4) + m) + 0.5)
        return max(tmp - tmp % nprocs, nprocs)
    if nbytes <= 0:
        return x
    return max(1, min(overall_vol // nbytes, x))


def calibration_test_count(t_one: float) -> int:
    """Iterations of IMB's second calibration run, from one iteration's time in seconds."""
    if t_one < 1e-3:
        return 1000
    if t_one < 1.0:
        return int(1.0 / t_one + 0.5)
    return 1


def time_limited_count(n0: int, secs: float, t_iter: float) -> int:
    """How many iterations fit into ``secs`` at ``t_iter`` seconds each (IMB's t_sample)."""
    if t_iter > 1e-8:
        value = int(1 + secs / t_iter)
        if value <= 2**31 - 1:
            return value
    return n0


def monotone_count(t_sample: int, size: int, earlier: Sequence[tuple[int, int]]) -> int:
    """User size lists: counts never grow with the message size, whatever the list order.

    ``earlier`` holds (raw length, count) of the sizes measured before this one.
    """
    for length, count in earlier:
        t_sample = min(t_sample, count) if length < size else max(t_sample, count)
    return t_sample


def warmup_iterations(n: int) -> int:
    """IMB 2021.11's warm-up (IMB_warm_up, WARMUP_PERCENT 10): n/10 iterations, one when
    that is none and n > 1, none when n is 1."""
    w = n // 10
    return 1 if w == 0 and n > 1 else w


def time_budget(n_user_lens: int, min_log: int, max_log: int, secs: float) -> float:
    """Wall-clock budget per benchmark and process count (IMB's helper_time_check).

    IMB counts the -msglog range even when a user size list is given.
    """
    return max(1, max(n_user_lens, max_log - min_log) - 1) * secs


def process_counts(nprocs: int, npmin: int, even: bool = False) -> list[int]:
    """IMB's sweep: npmin, 2 npmin, 4 npmin, ..., and finally P (npmin > P means P).

    ``even`` (Uniband/Biband): P is rounded down and npmin up to even numbers.
    """
    if even:
        nprocs -= nprocs % 2
        npmin += npmin % 2
    if nprocs < 1:
        return []
    n = max(1, min(nprocs, npmin))
    counts = [n]
    while n < nprocs:
        n = min(2 * n, nprocs)
        counts.append(n)
    return counts


def split_batches(n: int, batches: int) -> list[int]:
    """Split n iterations into at most ``batches`` nearly equal batches."""
    b = max(1, min(batches, n))
    base, extra = divmod(n, b)
    return [base + (1 if i < extra else 0) for i in range(b)]
