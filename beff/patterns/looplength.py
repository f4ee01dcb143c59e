"""Loop-length control and the 60-second rule of b_eff 3.6 (spec §8), as pure functions.

Rank 0 computes these per (length index, repetition, method) from its own accumulated loop
times and broadcasts the result.  Times are in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PRE_MSG_LOOPS = 10
TIME_PER_LOOP = 0.5
TIME_PER_LOOP_SHORT = 0.05
MIN_LOOPS = 1
MAX_FOR_LAST_TWO = 60.0
# Repetitions kept for the largest length once the 60-second rule fired.
MIN_REPETITIONS = 2
MAX_FACT_2 = 12
INT_MAX = 2**31 - 1
PRE_LOOPS = 1
# One unmeasured warm-up iteration for the length indices below this (not the 3 largest).
WITH_PRELOOPS = 18
# What the original uses when a bandwidth is not positive in the elapsed-time estimate.
NO_ESTIMATE = 999990.0


@dataclass(frozen=True)
class FirstLoop:
    """Loop length of the 1-byte messages and the cap it sets for this method."""

    looplng: int
    max_loops: int


def first_looplng(t0: float, time_per_loop: float = TIME_PER_LOOP,
                  pre_msg_loops: int = PRE_MSG_LOOPS) -> FirstLoop:
    """From the calibration pass (``pre_msg_loops`` iterations, all patterns) of one method.

    ``t0`` is that pass's time summed over the patterns.  ``max_loops =
    int(pre_msg_loops * time_per_loop / t0)``, at least ``pre_msg_loops``; the 1-byte loop
    length is half of it.  ``t0 <= 0`` has no defined result in the original (a division by
    zero); it raises here.  The C int conversion is mirrored by a cap at INT_MAX.
    """
    if not t0 > 0:
        raise ValueError(f"calibration time must be positive, got {t0}")
    ratio = pre_msg_loops * (time_per_loop / t0)
    max_loops = int(min(ratio, INT_MAX))
    max_loops = max(max_loops, pre_msg_loops)
    return FirstLoop(max_loops // 2, max_loops)


def length_divisor(index: int, factor: float, max_fact_2: int = MAX_FACT_2) -> float:
    """d of the loop-length rule: 2 while lengths double (index <= 12), else the factor a."""
    return 2.0 if index <= max_fact_2 else factor


def next_looplng(n_prev: int, t_prev: float, d: float, max_loops: int,
                 time_per_loop: float = TIME_PER_LOOP) -> int:
    """Loop length for the next length: ``int(max(1, min(n/d * max(1, tpl/T), max_loops)))``.

    ``t_prev`` is the previous length's time for this method summed over all patterns (for
    index 1 including the calibration pass); ``t_prev <= 0`` keeps ``n_prev``.
    """
    if not t_prev > 0:
        return n_prev
    value = min(n_prev / d * max(1.0, time_per_loop / t_prev), float(max_loops))
    return int(max(float(MIN_LOOPS), value))


def predict_last_two(min_looptime: float, looplng: int, n_patterns: int, factor: float,
                     repetitions: int, n_methods: int) -> float:
    """Predicted seconds of the two largest lengths, from index MSGLENGTHS-3 (spec §8).

    ``min_looptime * n_patterns * 4 * (a + a^2) * repetitions * n_methods / looplng``, with
    the shortest single-pattern loop time and the loop length of that index.
    """
    return (min_looptime * n_patterns * 4.0 * (factor + factor * factor)
            * repetitions * n_methods / looplng)


def last_two_shortened(predictions: Sequence[float], limit: float = MAX_FOR_LAST_TWO) -> bool:
    """Whether the 60-second rule fires for this repetition: any method above the limit.

    Then the two largest lengths use loop length 1 and only each pattern's
    :func:`best_method` (its value copied to the other methods); the largest length is
    re-adapted by :func:`next_looplng` and keeps only MIN_REPETITIONS repetitions, later
    ones copying repetition 0.
    """
    return any(p > limit for p in predictions)


def best_method(bandwidths: Sequence[float], measured: Sequence[bool]) -> int:
    """Method with the highest own (local) bandwidth at the third-largest length.

    Method 0 is the start; a later measured method replaces it on ``>=``, so ties go to
    the higher index, as in the original.
    """
    best = 0
    for m in range(1, len(bandwidths)):
        if measured[m] and bandwidths[m] >= bandwidths[best]:
            best = m
    return best


def warmup_iterations(index: int) -> int:
    """Unmeasured iterations before the timed loop of length index ``index``."""
    return PRE_LOOPS if index < WITH_PRELOOPS else 0


def elapsed_estimate(length: int, minbw: float, looplng: int, sr_count: int,
                     index: int) -> float:
    """Seconds that one (repetition, length, pattern, method) took, by its bandwidth.

    ``length / minbw * (looplng + warm-up) * sr_count``, with rank 0's sr_count; summed
    over the repetitions it is the "(elapsed time)" of the .prot file and feeds the time
    consistency check of the .short file.  NO_ESTIMATE where ``minbw <= 0``.
    """
    if not minbw > 0:
        return NO_ESTIMATE
    return length / minbw * (looplng + warmup_iterations(index)) * sr_count

