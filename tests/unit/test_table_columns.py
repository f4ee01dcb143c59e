"""The IMB-style tables show only columns with a value and only the caption lines about
columns shown (issue 35): a run of one timed batch per size (IMB-MT, IMB-P2P) has no
interval and no cv column and no legend for them; two batches give a cv but no interval;
ten give both."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from beff.api import load
from beff.bench.view import rich_table
from beff.imb.mt.view import VIEW as MT_VIEW
from beff.render.tables import shown_columns
from beff.results.model import Measurement, RunRecord
from tests.unit.test_figure_properties import IMB, mt_run, one_batch
from tests.unit.test_report import _batches

CI_LINE = "95% CI: interval of"
CV_LINE = "cv: spread (std/mean)"


def printed(record: RunRecord, benchmark: str) -> tuple[list[str], str]:
    """The header cells and the whole text of one benchmark's table."""
    m = next(r for r in record.results
             if isinstance(r, Measurement) and r.benchmark == benchmark)
    table = rich_table(m, record.ranks)
    out = io.StringIO()
    Console(file=out, width=250, color_system=None).print(table)
    return [str(c.header) for c in table.columns], out.getvalue()


def test_which_columns_have_values() -> None:
    rows = [["1", "-", Text("-"), ""], ["2", "3.0", Text("-"), "-"], ["4", "time-out"]]
    assert shown_columns(rows, 4) == [True, True, False, False]
    assert shown_columns([], 2) == [False, False]


def test_one_batch_per_size_has_no_interval_nor_cv_nor_their_legend() -> None:
    heads, text = printed(one_batch(load(IMB)), "PingPong")
    assert heads == ["bytes", "reps", "t_min [µs]", "t_max [µs]", "t_avg [µs]", "MB/s"]
    assert CI_LINE not in text and CV_LINE not in text and "! unstable" not in text
    assert "MB/s with MB = 10^6 B" in text  # its column is shown
    heads, text = printed(one_batch(load(IMB)), "Sendrecv")  # a time-out row stays whole
    assert "time-out" in text and heads[-1] == "MB/s"


def test_two_batches_give_a_cv_and_ten_an_interval_too() -> None:
    heads, text = printed(load(IMB), "PingPong")  # the golden file: 2 batches per size
    assert heads[-1] == "cv" and "95% CI" not in heads
    assert CV_LINE in text and CI_LINE not in text
    heads, text = printed(_batches(load(IMB), 1.0, 1), "PingPong")
    assert heads[-2:] == ["95% CI", "cv"] and CI_LINE in text and CV_LINE in text


def test_a_column_without_any_value_goes_with_its_legend_line() -> None:
    heads, text = printed(load(IMB), "Overlap")  # the golden file stores no t_ovrl ...
    assert heads == ["bytes", "reps"] and "t_ovrl, t_pure, t_CPU" not in text
    assert "MB/s with MB" not in text  # no MB/s column


def test_mt_tables_name_only_their_columns() -> None:
    out = io.StringIO()
    record = mt_run()
    console = Console(file=out, width=250, color_system=None)
    for m in record.results:
        MT_VIEW.table(m, record, console)
    pingpong, barrier = " ".join(out.getvalue().split()).split("MT BarrierMT")
    assert "95% CI" not in out.getvalue() and CV_LINE not in out.getvalue()
    assert "t_avg over every thread of every rank; bytes = count × type size × threads" \
        in pingpong
    assert "t_min, t_max, t_avg over every thread of every rank" in barrier
    assert "bytes =" not in barrier  # Barrier has no bytes column
