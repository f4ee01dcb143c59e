"""The CPU kernel that overlap benchmarks run between starting a transfer and waiting for it
(IMB's CPU_Exploit), compiled like the timed loops.

What it computes: rows of the product of a 10x10 single-precision matrix with a 10-vector,
one row (10 multiply-adds into x[i]) per unit, cycling through the rows, as IMB's
x[i] += a[i][j] * y[j]. Its 480 bytes of data stay in the L1 cache: it loads the core, not
the memory.

How it is calibrated: once per process, the kernel alone is timed (the units doubled until a
run takes at least 10 ms; the best of three runs) to get units per second. At each message
size and batch it then gets round(t_pure * units per second) units, at least one, where
t_pure is this rank's own time per iteration from the pure pass; the units and the rate are
stored with each size (cpu_units, cpu_units_per_s). IMB's unit is the whole 10x10 product
(about 0.3 us in its default -O0 build) and it truncates, so its t_CPU tends to fall short of
t_pure; beff's finer unit follows t_pure more closely.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from beff.core.capi import F32Array, helper, loop

C: Any = None  # the C bindings, substituted by the backend
# What the kernel computes and how it is calibrated, for ``beff describe`` of the benchmarks
# that use it (this docstring without its first paragraph).
DESCRIPTION = (__doc__ or "").split("\n\n", 1)[-1].strip()

N = 10
CALIBRATION_S = 0.01
TRIES = 3


@helper
def cpu_exploit(units: int, work: F32Array) -> None:
    """``units`` rows of the matrix-vector product; ``work`` = a (N*N), x (N), y (N)."""
    for u in range(units):
        i = u % 10
        acc = work[100 + i]
        for j in range(10):
            acc += work[i * 10 + j] * work[110 + j]
        work[100 + i] = acc


@loop
def cpu_loop(units: int, work: F32Array) -> tuple[float, int]:
    """The kernel alone: ``units`` units timed as one run."""
    t0 = C.Wtime()
    C.cpu_exploit(units, work)
    return C.Wtime() - t0, 0


def workspace() -> np.ndarray:
    """A fresh work array: a = 1, x = y = 0 (as IMB), so x stays finite."""
    work = np.zeros(N * N + 2 * N, dtype=np.float32)
    work[: N * N] = 1.0
    return work


_RATE: dict[str, float] = {}


def rate(backend: str) -> float:
    """Units per second of this process's kernel under ``backend`` (measured once)."""
    if backend not in _RATE:
        work = workspace()
        best = 0.0
        for _ in range(TRIES):
            units = 1000
            while True:
                seconds, _ = cpu_loop(units, work)
                if seconds >= CALIBRATION_S or units >= 1 << 40:
                    break
                units *= 2
            best = max(best, units / max(seconds, 1e-9))
        _RATE[backend] = best
    return _RATE[backend]


def units_for(seconds: float, per_second: float) -> int:
    """Units that take ``seconds`` at ``per_second`` units/s: rounded, at least one."""
    if not np.isfinite(seconds) or seconds <= 0:
        return 1
    return max(1, int(round(seconds * per_second)))
