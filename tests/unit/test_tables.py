"""beff.render.tables.Table prints what rich's Table prints, byte for byte: plain text and a
terminal's escape codes, at wide and narrow consoles (where rich collapses the columns,
wraps headers and cuts cells with an ellipsis), for the tables beff prints and for the
options and cells they do not use (those go through rich's own code)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
import rich.table
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.padding import Padding
from rich.panel import Panel
from rich.text import Span, Text

from beff.render.tables import Table

WIDTHS = (8, 17, 30, 45, 60, 80, 100, 160)

Build = Callable[[type[rich.table.Table]], Any]


def printed(table: Any, width: int, terminal: bool, soft_wrap: bool) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=terminal,
                      no_color=not terminal, color_system="truecolor" if terminal else None,
                      highlight=False, soft_wrap=soft_wrap, legacy_windows=False)
    console.print(table)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def same(build: Build, widths: tuple[int, ...] = WIDTHS) -> None:
    for width in widths:
        for terminal in (False, True):
            for soft_wrap in (True, False):
                want = printed(build(rich.table.Table), width, terminal, soft_wrap)
                got = printed(build(Table), width, terminal, soft_wrap)
                assert got == want, (width, terminal, soft_wrap)


def imb_like(cls: type[rich.table.Table]) -> rich.table.Table:
    """As beff.bench.view.rich_table: right-justified numbers, no-wrap interval columns,
    styled cells as Text and as markup, a title and a caption of several lines."""
    t = cls(title="MPI1 PingPong — 2 processes", box=box.SIMPLE_HEAD,
            caption="ranks 0,1 on vm (intra-node)\nt = timed loop / repetitions × 0.5, over "
                    "ranks; MB/s with MB = 10^6 B\n95% CI: interval of t_avg; ! unstable")
    for label in ("bytes", "reps", "t_min [µs]", "t_max [µs]", "t_avg [µs]", "MB/s"):
        t.add_column(label, justify="right")
    t.add_column("95% CI", justify="right", no_wrap=True)
    t.add_column("cv", justify="right", no_wrap=True)
    t.add_column("defects", justify="right")
    for i in range(12):
        size = 4 ** i
        cv = f"{(i * 7.3) % 30:.1f}%"
        t.add_row(f"{size:,}", f"{1000 // (i + 1):,}", f"{0.8 + i * 1.7:,.2f}",
                  f"{0.9 + i * 1.9:,.2f}", f"{0.85 + i:,.2f}", f"{size / (i + 1):,.2f}",
                  f"−{i * 0.7:.1f}/+{i * 1.3:.1f}%",
                  Text(f"{cv} !", spans=[Span(0, len(cv) + 2, "yellow")]) if i % 3 == 1
                  else f"[yellow]{cv} ![/yellow]" if i % 3 == 2 else cv,
                  Text(str(i), spans=[Span(0, len(str(i)), "red")]) if i % 4 == 3 else "0")
    t.add_row("1,024", "[red]failed: MPI_ERR_OTHER, a long reason that wraps[/red]")
    return t


def test_imb_like_table() -> None:
    same(imb_like)


def test_an_empty_table_and_one_with_no_rows() -> None:
    same(lambda cls: cls())
    same(lambda cls: cls("a", "bee", title="none"))
    same(lambda cls: cls("", "x", show_header=False))


@pytest.mark.parametrize("justify", ["left", "center", "right", "full", "default"])
@pytest.mark.parametrize("overflow", ["fold", "crop", "ellipsis", "ignore"])
@pytest.mark.parametrize("no_wrap", [False, True])
def test_justify_overflow_and_wrapping(justify: Any, overflow: Any, no_wrap: bool) -> None:
    def build(cls: type[rich.table.Table]) -> rich.table.Table:
        t = cls(title="t")
        t.add_column("a long header", justify=justify, overflow=overflow, no_wrap=no_wrap)
        t.add_column("n", justify=justify, overflow=overflow, no_wrap=no_wrap)
        t.add_column("styled", justify=justify, overflow=overflow, style="bold blue")
        for row in (["x", "1", "y"], ["two words here", "12345678901234", "z z"],
                    ["  leading and trailing  ", "", "double  space"],
                    ["wide 漢字テキスト", "ünïcödé", "tab\there"],
                    ["line\nbreak", "[green]markup[/green] more", ":thumbs_up: emoji"],
                    [Text("text", style="red"), Text("t j", justify="left"),
                     Text("ov", overflow="ignore", no_wrap=True)]):
            t.add_row(*row)
        return t

    same(build, (5, 12, 20, 40, 90))


@pytest.mark.parametrize("kind", [box.SIMPLE_HEAD, box.HEAVY_HEAD, box.ROUNDED, box.MINIMAL,
                                  box.ASCII, None])
@pytest.mark.parametrize("edge", [True, False])
def test_boxes_and_edges(kind: box.Box | None, edge: bool) -> None:
    def build(cls: type[rich.table.Table]) -> rich.table.Table:
        t = cls(title="boxes", box=kind, show_edge=edge, border_style="cyan")
        t.add_column("figure")
        t.add_column("value", justify="right")
        for i in range(4):
            t.add_row(f"row {i}", f"{i * 1234.5:,.1f}")
        return t

    same(build, (10, 30, 80))


def test_table_options() -> None:
    def padded(cls: type[rich.table.Table]) -> rich.table.Table:
        t = cls(padding=(0, 2), pad_edge=False, collapse_padding=True, show_header=False,
                row_styles=["", "dim"], header_style="magenta", expand=True)
        t.add_column("a", min_width=6)
        t.add_column("b", max_width=5, justify="center")
        t.add_column("c", width=4)
        t.add_column("d", ratio=2)
        for i in range(5):
            t.add_row(f"{i}", "value " * i, "fixed", "flexible", style="on red" if i == 3
                      else None)
        return t

    def compare_like(cls: type[rich.table.Table]) -> rich.table.Table:
        # as beff.render.compare: no edge padding, right padding only, min widths
        t = cls(title="t_avg", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
        t.add_column("benchmark", overflow="fold")
        for col in ("np", "bytes", "A", "B"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("B is", min_width=11)
        for i in range(6):
            t.add_row(f"Allreduce_{i}", "2", f"{2 ** (i * 3):,}", f"{i * 1.5:.2f}",
                      f"{i * 1.4:.2f}", "[green]faster[/green]" if i % 2 else "[dim]same[/dim]")
        return t

    def fixed_table(cls: type[rich.table.Table]) -> rich.table.Table:
        t = cls("x", "y", width=30, min_width=20, title="fixed")
        t.add_row("1", "2")
        return t

    same(padded)
    same(compare_like)
    same(fixed_table)


def test_what_rich_lays_out_itself() -> None:
    def build(cls: type[rich.table.Table]) -> rich.table.Table:
        t = cls(show_lines=True, show_footer=True)
        t.add_column("a", footer="sum", highlight=True)
        t.add_column("b", vertical="middle")
        t.add_row("1 2.5 None 'x'", Panel("in a panel"))
        t.add_row(Padding("padded", (1, 2)), "b", end_section=True)
        t.add_row("x", Text("multi\nline"))
        return t

    def vertical(cls: type[rich.table.Table]) -> rich.table.Table:
        t = cls(padding=(1, 1))
        t.add_column("top", vertical="top")
        t.add_column("bottom", vertical="bottom")
        t.add_column("middle", vertical="middle")
        t.add_row("1\n2\n3", "x", "y")
        return t

    def tall_rows(cls: type[rich.table.Table]) -> rich.table.Table:
        t = cls()
        t.add_column("top", vertical="top")
        t.add_column("bottom", vertical="bottom")
        t.add_column("middle", vertical="middle", style="italic")
        t.add_row("1\n2\n3", Text("x", style="red"), "y")
        t.add_row("wrapping words in a narrow column", "b", "c")
        return t

    same(build)
    same(vertical)
    same(tall_rows)


def test_a_table_printed_twice_and_changed_between() -> None:
    t = imb_like(Table)
    r = imb_like(rich.table.Table)
    for _ in range(2):
        assert printed(t, 70, True, True) == printed(r, 70, True, True)
    t.add_row("more")
    r.add_row("more")
    assert printed(t, 200, False, True) == printed(r, 200, False, True)


def test_measured_inside_another_renderable() -> None:
    same(lambda cls: Panel(imb_like(cls), title="nested"), (40, 120))


@pytest.mark.parametrize("width", [6, 25, 50, 200])
def test_measure(width: int) -> None:
    """A table's own measure (its columns' narrowest and widest), as a container asks it."""
    console = Console(file=io.StringIO(), width=width)
    for build in (imb_like, lambda cls: cls("two words", "x y z", "a")):
        got, want = (Measurement.get(console, console.options, build(cls))
                     for cls in (Table, rich.table.Table))
        assert got == want
