"""``--strict``: whether a run's figures can be trusted, judged from its record alone.

One pure function, :func:`reasons`, serves the end of a run (rank 0, on the file it has just
finished) and ``beff show --strict`` alike, so that both say the same. A run fails the
judgement (exit code :data:`beff.core.errors.STRICT`, one ``beff: strict:`` line made by
:func:`line`) when

* its status is not ``complete`` (a failed, killed or still running run; an imported text
  that ended early);
* a row ended ``time-out``, ``out-of-mem`` or ``failed``, or a benchmark could not run at all
  (``unsupported``: the MPI library lacks a call it needs);
* ``--check`` found corrupted data: a result's ``defects`` (IMB-style rows; b_eff_io's
  doubles read back wrong) or b_eff_io's stamp ``errors``; a typed result that failed says
  so in its ``failure``;
* a requested benchmark (the file's ``benchmarks``) has no result;
* a warning voids the figures (:data:`VOIDING`: the oversubscription warning, whose timings
  "are not representative"). The one-node warning does not: intra-node figures are figures.

Results are read by what every record has (``Measurement``'s fields; a typed record's
``suite``, ``failure``, ``defects``, ``errors``), never through a family's code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from beff.results import warnings
from beff.results.model import (
    FAILED,
    OUT_OF_MEM,
    TIME_OUT,
    UNSUPPORTED,
    Measurement,
    RunRecord,
)

ENDING = (TIME_OUT, OUT_OF_MEM, FAILED)  # the rows that end a benchmark unmeasured
VOIDING = (warnings.OVERSUBSCRIBED,)  # the warnings that make a run's figures void
SHOWN = 3  # reasons the one line spells out; the rest are counted


def reasons(record: RunRecord) -> list[str]:
    """Why ``record``'s figures cannot be trusted, in words; [] when they can."""
    found: list[str] = []
    status = str(record.attrs.get("status", "complete"))
    if status != "complete":
        found.append(f"the run's status is {status!r}, not 'complete'")
    for result in record.results:
        found += (_measurement(result) if isinstance(result, Measurement)
                  else _typed(result))
    found += _missing(record)
    found += [f"warning: {w}" for w in warnings.of_record(record) if w in VOIDING]
    return found


def line(found: list[str]) -> str:
    """The one stderr line of a failed judgement (without its newline)."""
    more = len(found) - SHOWN
    return "beff: strict: " + "; ".join(found[:SHOWN]) + (
        f"; and {more} more" if more > 0 else "")


def _what(m: Measurement) -> str:
    return f"{m.benchmark}{f' ({m.mode})' if m.mode else ''} at {m.nprocs} processes"


def _measurement(m: Measurement) -> list[str]:
    if m.unsupported:
        return [f"{_what(m)}: not measured ({UNSUPPORTED})"]
    out = []
    ended = next((i for i, s in enumerate(m.status) if s in ENDING), None)
    if ended is not None:
        out.append(f"{_what(m)}: {m.status[ended]} at {int(m.sizes[ended])} bytes")
    if m.defects is not None and np.any(m.defects > 0):
        bad = [int(s) for s, d in zip(m.sizes, m.defects, strict=True) if d > 0]
        out.append(f"{_what(m)}: --check found {int(np.sum(m.defects))} corrupted bytes "
                   f"(sizes {', '.join(map(str, bad[:4]))}{' ...' if len(bad) > 4 else ''})")
    return out


def _count(value: Any) -> int:
    try:
        return int(np.sum(np.asarray(value, dtype=np.float64)))
    except (TypeError, ValueError):
        return 0


def _typed(result: Any) -> list[str]:
    """A typed record's (b_eff's, b_eff_io's, the map's) trouble, by the fields it has."""
    name = str(getattr(result, "suite", "?"))
    out = []
    failure = getattr(result, "failure", "")
    if failure:
        out.append(f"{name}: failed ({failure})")
    defects = _count(getattr(result, "defects", None))
    if defects:
        out.append(f"{name}: --check found {defects} values read back wrong")
    errors = _count(getattr(result, "errors", None))
    if errors:
        out.append(f"{name}: {errors} errors (stamp mismatches or failed calls)")
    return out


def _missing(record: RunRecord) -> list[str]:
    """The requested benchmarks that have no result: by name for IMB-style results; a typed
    suite's run (one named benchmark) must have a result."""
    requested = [str(n) for n in record.attrs.get("benchmarks", [])]
    if not requested:
        return []
    if record.results and not record.measurements:
        return []  # a typed suite's one record
    present = {m.benchmark.lower() for m in record.measurements}
    absent = [n for n in requested if n.lower() not in present]
    return [f"{n}: requested, not measured" for n in absent]
