"""The figures of an imported result: what the original printed, with no samples behind them.

``beff import`` of IMB's text stores each table column as printed
(:attr:`beff.results.model.Measurement.printed`); the columns, the statistics and the views
read them here instead of deriving them from samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from beff.results.model import Measurement

# IMB's single-transfer t[usec] is the t_max over ranks.
SAME = {"t": "t_max", "t_max": "t"}


def column(m: Measurement, id: str, group: int | None) -> np.ndarray:
    """Column ``id`` as printed, per size (of ``group``, or of the only group printed); NaN
    where the original printed none."""
    values = m.printed.get(id, m.printed.get(SAME.get(id, "")))
    if values is None:
        return np.full(len(m.sizes), np.nan)
    at = 0 if group is None else min(group, values.shape[1] - 1)
    return np.asarray(values[:, at], dtype=np.float64)


def figures(m: Measurement, group: int | None = None, metric: str | None = None,
            ) -> tuple[np.ndarray, ...]:
    """t_min, t_max, t_avg (µs), Mbytes/sec and Msg/sec as printed (of the first metric;
    NaN for another)."""
    if metric is not None and metric != m.metric:
        return tuple(np.full(len(m.sizes), np.nan) for _ in range(5))
    return tuple(column(m, k, group) for k in ("t_min", "t_max", "t_avg", "mbytes_per_sec",
                                                "msg_per_sec"))


def note(attrs: dict[str, Any]) -> str:
    """One line on an imported run ("" for a measured one), for the headers of tables."""
    imported = attrs.get("imported")
    if not isinstance(imported, dict):
        return ""
    return (f"imported from {imported.get('from', '?')} ({imported.get('format', '?')}): the "
            "figures as printed, no raw samples")
