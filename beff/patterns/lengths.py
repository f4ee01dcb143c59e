"""b_eff's Lmax and its 21 message lengths (spec §2, §3)."""

from __future__ import annotations

MIB = 1 << 20
MSG_LENGTHS = 21
MAX_FACT_2 = 12
# b_eff 3.6 caps Lmax at 128 MiB from 16 GiB per process on (the int-range guard).
LMAX_CAP = 128 * MIB
CAP_FROM_MIB = 128 * 128


def memory_mib(mem_bytes: int) -> int:
    """Memory per process in whole MiB, as b_eff's MEMORY_PER_PROCESSOR (rounded down)."""
    if mem_bytes < MIB:
        raise ValueError(f"memory per process must be at least 1 MiB, got {mem_bytes} bytes")
    return mem_bytes // MIB


def lmax_from_memory(mem_bytes: int) -> int:
    """Lmax in bytes: 1/128 of the memory per process, 128 MiB from 16 GiB per process on.

    Like the original, the memory is taken in whole MiB first (its macro is an integer
    number of MiB), so ``mem_bytes`` that is not a multiple of 1 MiB is rounded down.
    """
    mib = memory_mib(mem_bytes)
    if mib >= CAP_FROM_MIB:
        return LMAX_CAP
    return mib * (MIB // 128)


def geometric_factor(lmax: int, count: int = MSG_LENGTHS, max_fact_2: int = MAX_FACT_2) -> float:
    """The factor a = (Lmax / 2^max_fact_2)^(1/(count-1-max_fact_2)) between the long lengths."""
    base = 1 << max_fact_2
    if lmax < base:
        raise ValueError(f"Lmax must be at least {base} bytes, got {lmax}")
    steps = count - 1 - max_fact_2
    if steps < 1:
        raise ValueError(f"need more than {max_fact_2 + 1} message lengths, got {count}")
    return float((lmax / base) ** (1.0 / steps))


def message_lengths(lmax: int, count: int = MSG_LENGTHS, max_fact_2: int = MAX_FACT_2) -> list[int]:
    """The message lengths: 2^0 .. 2^max_fact_2, then geometric up to Lmax.

    The running product is rounded at each step (``floor(x + 0.5)``), not ``4096 a^k``
    recomputed, which is what the original does.
    """
    factor = geometric_factor(lmax, count, max_fact_2)
    lengths = [1 << i for i in range(max_fact_2 + 1)]
    x = float(lengths[-1])
    for _ in range(max_fact_2 + 1, count):
        x = x * factor
        lengths.append(int(x + 0.5))
    return lengths
