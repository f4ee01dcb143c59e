"""Who talks to whom in IMB-MT: pure functions (no MPI), as IMB-MT's ``set_stride``.

With P ranks and ``-stride s`` (0 means P/2), ranks form groups of s consecutive ranks,
``group = rank div s``; an even group talks to the next one: rank r with r + s, an odd group
with r - s. PingPongMT, PingPingMT, UniBandMT and BiBandMT run only where
0 < s <= P/2 and the rank's pair of groups is complete (a rank in a trailing, incomplete
pair of groups sits out: IMB-MT counts no result from it). SendRecvMT and ExchangeMT run on
every rank, on the ring r -> r + s -> ... (mod P), whatever the stride (at P = 1 a rank
talks to itself).
"""

from __future__ import annotations

PAIRED = frozenset({"PingPongMT", "PingPingMT", "UniBandMT", "BiBandMT"})
RING = frozenset({"SendRecvMT", "ExchangeMT"})


def stride_of(size: int, stride: int) -> int:
    """The stride in effect: ``-stride``, or P/2 when it is 0."""
    return size // 2 if stride == 0 else stride


def pair(rank: int, size: int, stride: int) -> int | None:
    """The partner of ``rank`` in the paired benchmarks, or None where IMB-MT's set_stride
    fails (the rank sits out)."""
    s = stride_of(size, stride)
    if s <= 0 or s > size // 2:
        return None
    group = rank // s
    if group // 2 == size // (2 * s) and size % (2 * s) != 0:
        return None
    return rank + s if group % 2 == 0 else rank - s


def first(rank: int, size: int, stride: int) -> bool:
    """Whether ``rank`` is on the even (sending first) side of its pair."""
    s = stride_of(size, stride)
    return s > 0 and (rank // s) % 2 == 0


def ring(rank: int, size: int, stride: int) -> tuple[int, int]:
    """(left, right) = (rank - s, rank + s) mod P: SendRecvMT sends right and receives from
    the left; ExchangeMT sends to both and receives from both."""
    s = stride_of(size, stride)
    return (rank + size - s) % size, (rank + s) % size


def participants(name: str, size: int, stride: int) -> list[int]:
    """The ranks that take part in benchmark ``name`` (every rank but in the paired ones)."""
    if name in PAIRED:
        return [r for r in range(size) if pair(r, size, stride) is not None]
    return list(range(size))
