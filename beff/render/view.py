"""A suite's renderers (:class:`View`), and the documents every family shares: one JSON shape,
CSV, the original's text, one figure a line (:mod:`beff.render.lines`) and the rich tables of
a whole run.

A live run and ``beff show`` of its file call the same functions on the same records, so
they print the same bytes in every format but the table (a live table has no run header).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any, Protocol

from rich.console import Console

from beff.core import suite as suites
from beff.render import common, lines
from beff.render.charts import Chart
from beff.results import startup, warnings
from beff.results.model import RunRecord

# The original's text: IMB's output (imb), b_eff's and b_eff_io's .sum file (sum).
TEXT_FORMATS = ("imb", "sum")
LINES = "lines"  # one figure a line: NAME VALUE UNIT (beff.render.lines, share/docs/lines.md)
UNITS = {"time": "us", "bandwidth": "MB/s (1 MB = 10^6 B)", "msg_rate": "1/s", "bytes": "B"}


class View(Protocol):
    """How a suite renders its results. ``result`` is one of the suite's records."""

    csv_fields: tuple[str, ...]
    # The table's footer (warnings, the loops' cost) comes before the results: the last line
    # is then the result's own (b_eff's and b_eff_io's final line, which scripts grep).
    footer_first: bool

    def text_header(self, record: RunRecord) -> str:
        """The original's text before the first result ("" for none)."""

    def text(self, result: Any, record: RunRecord) -> str:
        """The original's text of one result."""

    def text_footer(self, record: RunRecord) -> str:
        """The original's text after the last result."""

    def table(self, result: Any, record: RunRecord, console: Console) -> None:
        """Rich tables of one result."""

    def csv_rows(self, result: Any) -> list[dict[str, Any]]:
        """CSV rows of one result, keyed by :attr:`csv_fields`."""

    def summary(self, result: Any, record: RunRecord) -> dict[str, Any]:
        """The JSON entry of one result: what it measured and every derived figure."""

    def result_warnings(self, result: Any, record: RunRecord) -> list[str]:
        """Warnings a result gives (printed when it arrives, stored with the run)."""

    def figures(self, result: Any) -> list[tuple[str, float, bool]]:
        """Headline figures for ``beff compare``: (name, value, higher is better). A view
        may also have ``figure_label(name) -> str``, the name in words with its unit (the
        report's headline table; else made from the name's parts).

        ``--format lines`` prints them (``SUITE.FIGURE``) unless the view has
        ``lines(result, record) -> list[beff.render.lines.Line]`` of its own (the IMB-style
        views: every row); a view may also have ``line_name(name) -> str``, the figure's
        name in dots where it has words (b_eff_io's "n=2 write_MBps")."""

    def settings(self, result: Any) -> list[tuple[str, Any]]:
        """What must match for ``beff compare`` to compare the figures fairly."""

    def charts(self, result: Any, record: RunRecord) -> list[Chart]:
        """The figures of one result, declared (``beff report``, ``beff plot`` draw them)."""


def view_of(record: RunRecord) -> View:
    """The view of the suite that wrote ``record``."""
    view: View = suites.get(record.suite).load("view")
    return view


def csv_header(view: View) -> str:
    buf = io.StringIO()
    csv.DictWriter(buf, fieldnames=list(view.csv_fields), lineterminator="\n").writeheader()
    return buf.getvalue()


def csv_rows(view: View, results: Iterable[Any]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(view.csv_fields), lineterminator="\n",
                            extrasaction="ignore")
    for result in results:
        writer.writerows(view.csv_rows(result))
    return buf.getvalue()


def csv_text(record: RunRecord) -> str:
    view = view_of(record)
    return csv_header(view) + csv_rows(view, record.results)


def text(record: RunRecord) -> str:
    """The original's text of a whole run."""
    view = view_of(record)
    return view.text_header(record) + "".join(view.text(r, record) for r in record.results) \
        + view.text_footer(record)


def json_doc(record: RunRecord) -> dict[str, Any]:
    """One shape for every family: schema, units, run metadata, ranks, and the results, each
    with its suite, key and summary."""
    view = view_of(record)
    return {
        "schema_version": record.attrs.get("schema_version"),
        "units": UNITS,
        "run": {k: v for k, v in record.attrs.items() if k != "env"},
        "ranks": record.ranks,
        # each rank's start-up (the ranks' startup_* columns) per phase: median, max, where
        "startup": {p.key.removeprefix("startup_").removesuffix("_s"): p.summary()
                    for p in startup.phases(record.ranks)},
        "results": [{"suite": r.suite, "key": r.key, **view.summary(r, record)}
                    for r in record.results],
    }


def json_text(record: RunRecord) -> str:
    return json.dumps(json_doc(record), indent=2, default=common._json_default) + "\n"


def table(record: RunRecord, console: Console) -> None:
    """A stored run: its header, each result's tables, its warnings and the loops' cost."""
    view = view_of(record)
    common.render_header(record, console)
    if view.footer_first:
        common.footer(record.attrs, console, warnings.of_record(record))
    for r in record.results:
        view.table(r, record, console)
    if not view.footer_first:
        common.footer(record.attrs, console, warnings.of_record(record))


def render(record: RunRecord, fmt: str) -> str | None:
    """``fmt`` of a stored run as text, or None for the table (printed to a console)."""
    if fmt == "json":
        return json_text(record)
    if fmt == "csv":
        return csv_text(record)
    if fmt in TEXT_FORMATS:
        return text(record)
    if fmt == LINES:
        return lines.text(view_of(record), record)
    return None
