"""beff.render.tables.Table lays out the lines between rows itself (``end_section``, as
``beff show`` of a b_eff_io run prints them, ``show_lines``, ``leading``) and prints what
rich's Table prints; a footer or top and bottom padding go through rich's own code."""

from __future__ import annotations

import rich.table
from rich import box

from beff.render.tables import Table
from tests.unit.test_tables import same


def sections(cls: type[rich.table.Table], **options: object) -> rich.table.Table:
    """As beff.io.view: sections ended by a bold row, under several boxes and options."""
    t = cls(title="b_eff_io: 2 processes", **options)  # type: ignore[arg-type]
    t.add_column("chunk l [B]", justify="right")
    t.add_column("access")
    t.add_column("scatter", justify="right", no_wrap=True, min_width=9)
    for part in range(3):
        for i in range(3):
            t.add_row(f"{1 << (10 * i):,}", "write" if i % 2 else "read", f"{i * 104.858:.3f}")
        t.add_row("total", "", f"{part * 314.6:.3f}", end_section=True, style="bold")
    return t


def test_sections_and_lines_between_rows() -> None:
    for kind in (box.HEAVY_HEAD, box.SIMPLE_HEAD, box.ROUNDED, None):
        for edge in (True, False):
            same(lambda cls, k=kind, e=edge: sections(cls, box=k, show_edge=e), (20, 60, 100))
            same(lambda cls, k=kind, e=edge: sections(cls, box=k, show_edge=e,
                                                      show_lines=True), (60,))
            same(lambda cls, k=kind, e=edge: sections(cls, box=k, show_edge=e, leading=2,
                                                      border_style="cyan"), (60,))
    same(lambda cls: sections(cls, show_header=False, row_styles=["", "dim"]), (60,))


def test_which_tables_rich_lays_out() -> None:
    assert sections(Table)._fast()
    assert sections(Table, show_lines=True, leading=1)._fast()
    assert not sections(Table, show_footer=True)._fast()
    assert not sections(Table, padding=(1, 1))._fast()
    assert not sections(Table, padding=(0, 1, 1, 1))._fast()
