"""``--format lines``: one figure a line, ``NAME VALUE UNIT``, for frameworks that read
results with a regular expression (JUBE, ReFrame, shell scripts). share/docs/lines.md is the
scheme's documentation; tests/unit/test_lines.py keeps the names stable.

* NAME: dotted parts of ``[A-Za-z0-9_+-]`` (:data:`NAME`), unique within a file. It starts
  with the suite (``mpi1``, ``beff``, ``beffio``, ``map``, ...) or with ``run`` (the run's
  own lines, last).
* VALUE: a plain number (:func:`number`: no exponent, no thousands separator, at most
  :data:`SIGNIFICANT` significant digits, integers in full), or one word on a ``.status``
  line. A figure that was not measured is left out; NaN is never printed.
* UNIT: ``us``, ``MB/s`` (10^6 B/s), ``msg/s``, ``%``, ``count``, ``s``, ``B``, ``1`` (a
  ratio), or ``-`` after a status word.

An IMB-style view names its rows itself (``lines`` of :class:`beff.bench.view.ImbView`);
any other view gives its headline figures (``figures``, those of ``beff compare``), each
named ``SUITE.FIGURE``, the figure's name made dotted by the view's ``line_name`` where it
has one."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from beff.results.model import RunRecord

# A name: dotted parts, each of these characters only.
NAME = re.compile(r"[A-Za-z0-9_+-]+(\.[A-Za-z0-9_+-]+)*")
# A value: a plain number, or a word on a status line.
NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")
SIGNIFICANT = 6
WORD = "-"  # the unit of a status line: its value is a word
# The unit of a figure, by the last of its name's underscore-separated words that is one.
UNIT_WORDS = {"us": "us", "MBps": "MB/s", "pct": "%", "s": "s", "B": "B"}
# Figures named in full (IMB's CSV columns).
UNIT_KEYS = {"mbytes_per_sec": "MB/s", "msg_per_sec": "msg/s", "repetitions": "count",
             "defects": "count", "batches": "count"}

Line = tuple[str, Any, str]  # name, value (a number or a status word), unit


def part(text: object) -> str:
    """``text`` as one part of a name: characters outside the allowed ones become ``_``."""
    return re.sub(r"[^A-Za-z0-9_+-]", "_", str(text)) or "_"


def unit_of(figure: str) -> str:
    """A figure's unit, from its name (``t_avg_us``: us, ``recv_MBps_median``: MB/s)."""
    if figure in UNIT_KEYS:
        return UNIT_KEYS[figure]
    for word in reversed(figure.split("_")):
        if word in UNIT_WORDS:
            return UNIT_WORDS[word]
    return "1"


def number(value: Any) -> str | None:
    """A value as a plain number: an integer in full; else at most SIGNIFICANT significant
    digits, all of the integer part kept, trailing zeros dropped. None for NaN and
    infinities (and for what is no number)."""
    if isinstance(value, bool):
        return str(int(value))
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(v):
        return None
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    decimals = SIGNIFICANT - (math.floor(math.log10(abs(v))) + 1)
    text = f"{v:.{min(max(decimals, 0), 15)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def line(name: str, value: Any, unit: str) -> str | None:
    """One line; None for a figure without a value (not measured)."""
    shown = value if unit == WORD else number(value)
    if shown is None:
        return None
    return f"{name} {shown} {unit}\n"


def figure_lines(view: Any, result: Any) -> list[Line]:
    """A view's headline figures as lines (the fallback for views without ``lines``):
    ``SUITE.FIGURE``, a result that failed also ``SUITE.status failed``."""
    named = getattr(view, "line_name", None)
    prefix = part(result.suite)
    out: list[Line] = []
    if getattr(result, "failure", ""):
        out.append((f"{prefix}.status", "failed", WORD))
    for figure, value, _ in view.figures(result):
        dotted = named(figure) if named is not None else ".".join(
            part(word) for word in figure.split())
        out.append((f"{prefix}.{dotted}", value, unit_of(dotted.rsplit(".", 1)[-1])))
    return out


def result_lines(view: Any, result: Any, record: RunRecord) -> list[Line]:
    """The lines of one result: the view's own (``lines``), else its headline figures."""
    own = getattr(view, "lines", None)
    return own(result, record) if own is not None else figure_lines(view, result)


def text_of(found: Iterable[Line]) -> str:
    return "".join(t for name, value, unit in found if (t := line(name, value, unit)))


def result_text(view: Any, result: Any, record: RunRecord) -> str:
    """What ``--format lines`` prints for one result (live: as it arrives)."""
    return text_of(result_lines(view, result, record))


def footer(record: RunRecord) -> str:
    """The run's own lines, after its results: ``run.status``."""
    return text_of([("run.status", part(record.attrs.get("status", "complete")), WORD)])


def text(view: Any, record: RunRecord) -> str:
    """``--format lines`` of a whole run."""
    return "".join(result_text(view, r, record) for r in record.results) + footer(record)
