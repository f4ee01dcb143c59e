"""rich's :class:`~rich.table.Table`, printed in a fraction of the time.

rich measures and renders every cell as a renderable of its own: a Padding around a text,
measured, wrapped, justified, rendered to segments, split into lines and cropped, about
50 µs a cell, or 15 ms for one benchmark's table. :class:`Table` prints the same bytes,
doing the cells' share itself, through rich's public API only (the Table's attributes, its
columns' ``cells``, the ``__rich_console__`` and ``__rich_measure__`` protocol, Box,
Segment, Text, Measurement, Console):

* a cell's measure is its longest word and its longest line, and a column's measure that
  of its longest cell (rich's measure of a text grows with the text);
* the columns' widths are rich's: the widest that fit, else the widest columns that may
  wrap narrowed first, then all evenly (a narrow console), and ``expand``, ``ratio``,
  ``min_width`` as rich shares the room;
* a string of one printable line, no markup, no leading or trailing space, is justified
  with spaces, or cut as ``Text.truncate`` cuts it where it cannot wrap, and a row of such
  strings without style is one string; the lines without style go out as one segment;
* any other text is wrapped by rich's ``Text.wrap`` and laid out as the Padding and
  ``Console.render_lines`` of rich's Table lay it out;
* any other renderable, and a column that highlights, goes through rich's own code.

The title and the caption are printed as rich prints them. A table with top or bottom
padding or a footer is rendered by rich's own Table. ``tests/unit/test_tables.py`` compares
the output with rich's; a script in ``benchmarks/`` times it (24 to 2,000 rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from math import ceil
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from rich import table as rich_table
from rich.cells import cell_len, set_cell_size
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import DEFAULT_JUSTIFY, DEFAULT_OVERFLOW, Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, JustifyMethod, OverflowMethod, RenderResult

__all__ = ["EMPTY", "Table", "shown_columns"]

EMPTY = ("", "-")  # what a cell without a value prints


def shown_columns(rows: Iterable[Sequence[object]], count: int) -> list[bool]:
    """Which of ``count`` columns to show: those with a value (a cell other than
    :data:`EMPTY`, as text) in some row. A short row's cells are its first columns'."""
    shown = [False] * count
    for row in rows:
        for i, cell in enumerate(row[:count]):
            if not shown[i]:
                text = cell.plain if isinstance(cell, Text) else str(cell)
                shown[i] = text.strip() not in EMPTY
    return shown


Cell = str | Text | None  # a plain one-line string, another text, or a renderable for rich


class _Column(NamedTuple):
    """A column's cells (the header first, if shown) as given and as :func:`_text` reads
    them, their styles and padding, the longest word and line of the texts (None: there are
    none), the other cells as rich pads them (for their measure), and the longest of the
    cells below the header where all are figures (ASCII strings without space, markup or
    control codes: the usual column; else None)."""

    cells: list[Any]
    texts: list[Cell]
    header_style: Style
    style: Style
    left: int
    right: int
    extent: tuple[int, int] | None
    others: list[Any]
    head: int
    figures: int | None


def _text(console: Console, options: ConsoleOptions, cell: Any) -> Cell:
    """A cell as rich reads it: a string that prints as it is (one printable line, no
    markup, no emoji code), a :class:`Text` (markup read as rich reads it), or None."""
    if isinstance(cell, str):
        if "[" not in cell and ":" not in cell and cell.isprintable():
            return cell
        return console.render_str(cell, markup=options.markup, highlight=False)
    return cell if isinstance(cell, Text) else None


def _extent(plain: str) -> tuple[int, int]:
    """The longest word and the longest line of a text (``Text.__rich_measure__``)."""
    if plain.isprintable():  # one line, and no whitespace but spaces
        whole = len(plain) if plain.isascii() else cell_len(plain)
        if " " not in plain:
            return whole, whole
        words = plain.split()
        return (max(cell_len(word) for word in words) if words else whole), whole
    lines = plain.splitlines()
    whole = max(cell_len(line) for line in lines) if lines else 0
    words = plain.split()
    return (max(cell_len(word) for word in words) if words else whole), whole


def _measure(word: int, whole: int, max_width: int, extra: int) -> tuple[int, int]:
    """rich's ``Measurement.get`` of a Padding of width ``extra`` around a text with this
    longest word and line (its normalize and with_maximum steps, in integers;
    ``max_width`` is at least 1)."""
    if max_width - extra < 1:
        return max_width, max_width
    low, high = min(word, whole, max_width), min(whole, max_width)
    low, high = min(low + extra, max_width), min(high + extra, max_width)
    return (0, 0) if high < 1 else (low, high)


class Table(rich_table.Table):
    """A :class:`rich.table.Table` that prints the same, faster (see the module)."""

    def _fast(self) -> bool:
        """Whether this module lays the table out (else rich's own code)."""
        return not (self.padding[0] or self.padding[2] or self.show_footer)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        if not self._fast():
            return super().__rich_measure__(console, options)
        max_width = options.max_width if self.width is None else self.width
        if max_width < 0:
            return Measurement(0, 0)
        extra = self._extra_columns()
        found = self._found(console, options)
        at = options.update_width(sum(self._widths(console, options.update_width(
            max_width - extra), found)))
        measures = [self._measure(console, at, index, column, found[index])
                    for index, column in enumerate(self.columns)]
        return Measurement(
            sum(m.minimum for m in measures) + extra,
            sum(m.maximum for m in measures) + extra if self.width is None else self.width,
        ).clamp(self.min_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self._fast():
            yield from super().__rich_console__(console, options)
            return
        if not self.columns:
            yield Segment("\n")
            return
        max_width = options.max_width if self.width is None else self.width
        extra = self._extra_columns()
        found = self._found(console, options)
        widths = self._widths(console, options.update_width(max_width - extra), found)
        render_options = options.update(width=sum(widths) + extra, highlight=self.highlight,
                                        height=None)
        if self.title:
            yield from _annotation(console, render_options, self.title,
                                   Style.pick_first(self.title_style, "table.title"),
                                   self.title_justify)
        yield from self._rows(console, render_options, widths, found)
        if self.caption:
            yield from _annotation(console, render_options, self.caption,
                                   Style.pick_first(self.caption_style, "table.caption"),
                                   self.caption_justify)

    def _extra_columns(self) -> int:
        """The table's own width beside its columns: the box's edges and dividers."""
        if not self.box:
            return 0
        return (2 if self.show_edge else 0) + len(self.columns) - 1

    def _padding_width(self, index: int) -> int:
        """A column's padding as rich counts it for a fixed or a minimum width (with
        ``collapse_padding``, the right padding alone)."""
        _, right, _, left = self.padding
        if self.collapse_padding:
            left = 0
        if not self.pad_edge:
            left = 0 if index == 0 else left
            right = 0 if index == len(self.columns) - 1 else right
        return left + right

    def _found(self, console: Console, options: ConsoleOptions) -> list[_Column]:
        """Every column's cells, read once for its measures and its rows."""
        return [self._column(console, options, index, column)
                for index, column in enumerate(self.columns)]

    def _column(self, console: Console, options: ConsoleOptions, index: int,
                column: rich_table.Column) -> _Column:
        """A column's cells, their padding, and their extent."""
        _, right, _, left = self.padding
        if self.collapse_padding and index:
            left = max(0, left - right)
        if not self.pad_edge:
            left = 0 if index == 0 else left
            right = 0 if index == len(self.columns) - 1 else right
        get_style = console.get_style
        cells: list[Any] = ([column.header, *column.cells] if self.show_header
                            else list(column.cells))
        texts: list[Cell] = []
        word = whole = 0
        others = []
        head = 1 if self.show_header else 0
        body = cells[head:]
        figures = None
        if body and set(map(type, body)) == {str}:
            joined = "".join(body)
            if (joined.isascii() and joined.isprintable() and " " not in joined
                    and "[" not in joined and ":" not in joined):
                figures = word = whole = max(map(len, body))
        for cell in cells[:head] if figures is not None else cells:
            if (type(cell) is str and cell.isascii() and " " not in cell and "[" not in cell
                    and ":" not in cell and cell.isprintable()):  # the usual: a figure
                texts.append(cell)
                whole = max(whole, len(cell))
                word = max(word, len(cell))
                continue
            text = _text(console, options, cell)
            texts.append(text)
            if text is None:
                others.append(Padding(cell, (0, right, 0, left)) if left or right else cell)
                continue
            w, n = _extent(text if isinstance(text, str) else text.plain)
            word, whole = max(word, min(w, n)), max(whole, n)
        if figures is not None:
            texts += body
        return _Column(cells, texts,
                       get_style(self.header_style or "") + get_style(column.header_style),
                       get_style(column.style or ""), left, right,
                       (word, whole) if len(others) < len(cells) else None, others, head,
                       figures)

    def _measure(self, console: Console, options: ConsoleOptions, index: int,
                 column: rich_table.Column, found: _Column) -> Measurement:
        """A column's narrowest and widest, with its padding, at ``options.max_width``."""
        max_width = options.max_width
        if max_width < 1:
            return Measurement(0, 0)
        padding_width = self._padding_width(index)
        if column.width is not None:
            fixed = column.width + padding_width
            return Measurement(fixed, fixed).with_maximum(max_width)
        widths = [Measurement.get(console, options, cell) for cell in found.others]
        if found.extent is not None:  # the texts' measure is that of the longest
            widths.append(Measurement(*_measure(*found.extent, max_width,
                                                found.left + found.right)))
        measurement = Measurement(max((w.minimum for w in widths), default=1),
                                  max((w.maximum for w in widths), default=max_width))
        return measurement.with_maximum(max_width).clamp(
            None if column.min_width is None else column.min_width + padding_width,
            None if column.max_width is None else column.max_width + padding_width)

    def _widths(self, console: Console, options: ConsoleOptions,
                found: list[_Column]) -> list[int]:
        """The columns' widths with their padding, without the box: their widest where
        they fit, else the widest columns that may wrap narrowed first, then all evenly
        (rich's layout)."""
        max_width = options.max_width
        columns = self.columns
        ranges = [self._measure(console, options, index, column, found[index])
                  for index, column in enumerate(columns)]
        widths = [r.maximum or 1 for r in ranges]
        if self.expand:
            ratios = [column.ratio or 0 for column in columns if column.flexible]
            if any(ratios):
                fixed = [0 if column.flexible else r.maximum
                         for r, column in zip(ranges, columns, strict=True)]
                minimums = [(column.width or 1) + self._padding_width(index)
                            for index, column in enumerate(columns) if column.flexible]
                flexible = iter(_distribute(max_width - sum(fixed), ratios, minimums))
                for index, column in enumerate(columns):
                    if column.flexible:
                        widths[index] = fixed[index] + next(flexible)
        table_width = sum(widths)
        if table_width > max_width:
            widths = _collapse(widths, [column.width is None and not column.no_wrap
                                        for column in columns], max_width)
            table_width = sum(widths)
            if table_width > max_width:  # the last resort: all narrower evenly
                widths = _reduce(table_width - max_width, [1] * len(widths), widths, widths)
                table_width = sum(widths)
            widths = [self._measure(console, options.update_width(width), index, column,
                                    found[index]).maximum or 0
                      for index, (width, column) in enumerate(zip(widths, columns,
                                                                  strict=True))]
        extra = self._extra_columns()
        if (table_width < max_width and self.expand) or (
                self.min_width is not None and table_width < self.min_width - extra):
            wanted = max_width if self.min_width is None else min(self.min_width - extra,
                                                                  max_width)
            widths = [width + pad for width, pad in
                      zip(widths, _distribute(wanted - table_width, widths), strict=True)]
        return widths

    def _rows(self, console: Console, options: ConsoleOptions, widths: list[int],
              found: list[_Column]) -> RenderResult:
        """The box and the rows: lines without style gathered in one segment."""
        get_style = console.get_style
        border_style = get_style(self.style or "") + get_style(self.border_style or "")
        _box = (self.box.substitute(options, safe=(console.safe_box if self.safe_box is None
                                                   else self.safe_box))
                if self.box else None)
        _box = _box.get_plain_headed_box() if _box and not self.show_header else _box
        show_edge, show_header = self.show_edge, self.show_header
        out: list[str] = []  # lines (each with its "\n") not yet yielded

        def styled(segments: Iterable[Segment]) -> Iterator[Segment]:
            if out:
                yield Segment("".join(out))
                out.clear()
            yield from segments

        def border(line: str) -> Iterator[Segment]:
            if border_style:
                yield from styled((Segment(line, border_style), Segment.line()))
            else:
                out.append(line + "\n")

        if _box and show_edge:
            yield from border(_box.get_top(widths))
        layouts = [_Layout(console, options, width, column, column_found)
                   for width, column, column_found in zip(widths, self.columns, found,
                                                          strict=True)]
        rows = len(layouts[0].cells) if layouts else 0
        strings = list(zip(*(layout.strings() for layout in layouts), strict=True))
        separator = bool(_box and (self.show_lines or self.leading))
        data_rows = self.rows
        for index in range(rows):
            first, last = index == 0, index == rows - 1
            header_row = first and show_header
            row_style = Style.null() if header_row else get_style(
                self.get_row_style(console, index - 1 if show_header else index))
            if _box:
                left, right, vertical = (
                    (_box.head_left, _box.head_right, _box.head_vertical),
                    (_box.mid_left, _box.mid_right, _box.mid_vertical),
                    (_box.foot_left, _box.foot_right, _box.foot_vertical),
                )[0 if first else (2 if last else 1)]
                if not show_edge:
                    left = right = ""
            else:
                left = right = vertical = ""
            plain = strings[index] if not (header_row or row_style or border_style) else ()
            if plain and None not in plain:  # the usual row
                out.append(f"{left}{vertical.join(cast('tuple[str, ...]', plain))}{right}\n")
            else:
                cells = [layout.lines(index, header_row, row_style) if line is None else line
                         for layout, line in zip(layouts, plain or [None] * len(layouts),
                                                 strict=True)]
                if not border_style and all(isinstance(cell, str) for cell in cells):
                    out.append(f"{left}{vertical.join(cast('list[str]', cells))}{right}\n")
                else:
                    yield from styled(_row_lines(layouts, index, header_row, row_style, cells,
                                                 border_style, left, right, vertical))
            if _box and header_row:
                yield from border(_box.get_row(widths, "head", edge=show_edge))
            elif _box and not last and (separator or data_rows[
                    index - 1 if show_header else index].end_section):
                yield from border(_box.get_row(widths, "mid", edge=show_edge) * self.leading
                                  if self.leading else
                                  _box.get_row(widths, "row", edge=show_edge))
        if _box and show_edge:
            yield from border(_box.get_bottom(widths))
        yield from styled(())


def _annotation(console: Console, options: ConsoleOptions, text: str | Text,
                style: str | Style, justify: JustifyMethod) -> RenderResult:
    """A title or a caption, as rich's Table prints it."""
    rendered = (console.render_str(text, style=style, highlight=False)
                if isinstance(text, str) else text)
    return console.render(rendered, options=options.update(justify=justify))


def _collapse(widths: list[int], wrapable: list[bool], max_width: int) -> list[int]:
    """The widths narrowed to ``max_width``, widest wrapable columns first, each no
    narrower than the next widest (rich's ``Table`` does this)."""
    total = sum(widths)
    excess = total - max_width
    if any(wrapable):
        while total and excess > 0:
            widest = max(width for width, wraps in zip(widths, wrapable, strict=True) if wraps)
            second = max(width if wraps and width != widest else 0
                         for width, wraps in zip(widths, wrapable, strict=True))
            ratios = [1 if width == widest and wraps else 0
                      for width, wraps in zip(widths, wrapable, strict=True)]
            if not any(ratios) or not widest - second:
                break
            widths = _reduce(excess, ratios, [min(excess, widest - second)] * len(widths),
                             widths)
            total = sum(widths)
            excess = total - max_width
    return widths


def _reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]
            ) -> list[int]:
    """``values`` less ``total`` shared by ``ratios``, no value less more than its maximum
    (rich's ``ratio_reduce``)."""
    ratios = [ratio if maximum else 0 for ratio, maximum in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result = []
    for ratio, maximum, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            share = min(maximum, round(ratio * remaining / total_ratio))
            result.append(value - share)
            remaining -= share
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _distribute(total: int, ratios: list[int], minimums: list[int] | None = None
                ) -> list[int]:
    """``total`` shared by ``ratios``, rounded up, each share at least its minimum (rich's
    ``ratio_distribute``)."""
    if minimums:
        ratios = [ratio if minimum else 0
                  for ratio, minimum in zip(ratios, minimums, strict=True)]
    total_ratio = sum(ratios)
    remaining = total
    shares = []
    for ratio, minimum in zip(ratios, minimums or [0] * len(ratios), strict=True):
        share = max(minimum, ceil(ratio * remaining / total_ratio)) if total_ratio > 0 \
            else remaining
        shares.append(share)
        total_ratio -= ratio
        remaining -= share
    return shares

class _Layout:
    """How one column lays its cells out at its width."""

    def __init__(self, console: Console, options: ConsoleOptions, width: int,
                 column: rich_table.Column, found: _Column) -> None:
        self.console, self.options, self.width, self.column = console, options, width, column
        self.cells, self.texts = found.cells, found.texts
        self.header_style, self.style = found.header_style, found.style
        self.left, self.right = found.left, found.right
        self.inner = width - found.left - found.right
        self.pads = " " * found.left, " " * found.right
        self.justify, self.overflow = column.justify, column.overflow
        # strings are justified here; everything else is rich's, and highlighting too
        self.plain = (self.inner >= 1 and self.justify in ("left", "center", "right")
                      and self.overflow != "ignore" and not column.highlight)
        self.textual = self.inner >= 1 and not column.highlight
        self.head, self.figures = found.head, found.figures

    def strings(self) -> list[str | None]:
        """Each cell's line where it is a string and the column has no style (None where it
        is not), as :meth:`lines` makes it, quicker: most cells are short ASCII that fits."""
        if not self.plain or self.style:
            return [None] * len(self.texts)
        inner, justify, body = self.inner, self.justify, self._body
        pad_left, pad_right = self.pads
        out: list[str | None] = []
        texts = self.texts
        rest: list[str | None] = []
        if self.figures is not None and self.figures <= inner and justify != "center":
            fill = str.rjust if justify == "right" else str.ljust  # figures fit: no cut
            rest = [f"{pad_left}{fill(text, inner)}{pad_right}"
                    for text in cast("list[str]", texts[self.head:])]
            texts = texts[:self.head]
        for text in texts:
            if type(text) is not str:
                out.append(None)
            elif (len(text) <= inner and text.isascii() and text[:1] != " "
                    and text[-1:] != " "):
                spare = inner - len(text)
                before = spare if justify == "right" else (
                    0 if justify == "left" else spare // 2)
                out.append(f"{pad_left}{' ' * before}{text}{' ' * (spare - before)}{pad_right}")
            else:
                line = body(text)
                out.append(None if line is None else pad_left + line + pad_right)
        out += rest
        return out

    def lines(self, index: int, header_row: bool,
              row_style: Style) -> str | list[list[Segment]]:
        """The cell's lines, as ``Console.render_lines`` of the cell in rich's Table gives
        them; a string for one line without style."""
        style = self.header_style if header_row else self.style
        if row_style:
            style = style + row_style
        text = self.texts[index]
        if type(text) is str and self.plain:
            body = self._body(text)
            if body is not None:
                if not style:
                    return self.pads[0] + body + self.pads[1]
                line = [Segment(self.pads[0], style)] if self.left else []
                line.append(Segment(body, style))
                if self.right:
                    line.append(Segment(self.pads[1], style))
                return [line]
        if (isinstance(text, Text) and self.plain and not text.justify
                and text.overflow != "ignore" and text.end in ("\n", "")):
            plain = text.plain
            spare = self.inner - cell_len(plain)
            if (spare >= 0 and plain.isprintable() and plain[:1] != " "
                    and plain[-1:] != " "):
                return [self._justified(text, spare, style)]
        if text is not None and self.textual:
            return self._wrapped(Text(text) if isinstance(text, str) else text, style)
        render_options = self.options.update(
            width=self.width, justify=self.justify, no_wrap=self.column.no_wrap,
            overflow=self.overflow, height=None, highlight=self.column.highlight)
        cell = self.cells[index]
        padded = Padding(cell, (0, self.right, 0, self.left)) if self.left or self.right \
            else cell
        return self.console.render_lines(padded, render_options, style=style)

    def _body(self, text: str) -> str | None:
        """A one-line string justified to the inner width: as it is with spaces where it
        fits, cut where wrapping cannot break it (None: wrapping decides)."""
        inner = self.inner
        if text[:1] == " " or text[-1:] == " ":
            return None  # justifying strips them
        spare = inner - (len(text) if text.isascii() else cell_len(text))
        if spare < 0:
            if self.overflow == "fold" or (" " in text and not self.column.no_wrap):
                return None
            text = (set_cell_size(text, inner - 1) + "…" if self.overflow == "ellipsis"
                    else set_cell_size(text, inner))
            spare = inner - cell_len(text)
        justify = self.justify
        before = spare if justify == "right" else (spare // 2 if justify == "center" else 0)
        return " " * before + text + " " * (spare - before)

    def _justified(self, text: Text, spare: int, style: Style) -> list[Segment]:
        """A one-line text that fits, justified with ``spare`` spaces (as ``Text.wrap``
        justifies it), and padded."""
        justify = self.justify
        before = spare if justify == "right" else (spare // 2 if justify == "center" else 0)
        padded = text.copy()
        padded.pad_left(before)
        padded.pad_right(spare - before)
        line = [Segment(self.pads[0], style)] if self.left else []
        line += Segment.apply_style(Text("\n").join([padded]).render(self.console), style)
        if self.right:
            line.append(Segment(self.pads[1], style))
        return line

    def _wrapped(self, text: Text, style: Style) -> list[list[Segment]]:
        """The lines of a text as rich's Text, Padding and ``Console.render_lines`` make
        them in a table's cell."""
        console, column = self.console, self.column
        justify: JustifyMethod = text.justify or self.justify or DEFAULT_JUSTIFY
        overflow: OverflowMethod = text.overflow or self.overflow or DEFAULT_OVERFLOW
        tab_size = console.tab_size if text.tab_size is None else text.tab_size
        no_wrap = text.no_wrap if text.no_wrap is not None else bool(column.no_wrap)
        wrapped = text.wrap(console, self.inner, justify=justify, overflow=overflow,
                            tab_size=tab_size or 8, no_wrap=no_wrap)
        segments = Text("\n").join(wrapped).render(console, end=text.end)
        pad_style = console.get_style("none")  # the Padding's
        lines = []
        for line in Segment.split_and_crop_lines(segments, self.inner, style=pad_style,
                                                 pad=True, include_new_lines=False):
            if self.left:
                line.insert(0, Segment(self.pads[0], pad_style))
            if self.right:
                line.append(Segment(self.pads[1], pad_style))
            lines.append(list(Segment.apply_style(line, style)) if style else line)
        return lines

    def vertical(self, index: int) -> str:
        return getattr(self.cells[index], "vertical", None) or self.column.vertical


def _row_lines(layouts: list[_Layout], index: int, header_row: bool, row_style: Style,
               cells: list[str | list[list[Segment]]], border_style: Style, left: str,
               right: str, vertical: str) -> Iterator[Segment]:
    """The lines of one row, its cells aligned and joined as rich's Table does it."""
    rendered = [[[Segment(cell)]] if isinstance(cell, str) else cell for cell in cells]
    row_height = max(len(lines) for lines in rendered)
    height = max(1, row_height)
    if any(len(lines) != 1 for lines in rendered):
        rendered = [Segment.set_shape(
            _align(lines, "bottom" if header_row else layout.vertical(index), layout.width,
                   row_height, (layout.header_style if header_row else layout.style)
                   + row_style), layout.width, height)
            for layout, lines in zip(layouts, rendered, strict=True)]
    divider = Segment(vertical, border_style if vertical.strip()
                      else row_style.background_style + border_style)
    for line_no in range(height):
        line: list[Segment] = []
        if left:
            line.append(Segment(left, border_style))
        for k, lines in enumerate(rendered):
            if k and vertical:
                line.append(divider)
            line += lines[line_no]
        if right:
            line.append(Segment(right, border_style))
        yield from _joined(line)
        yield Segment.line()


def _align(lines: list[list[Segment]], vertical: str, width: int, height: int,
           style: Style) -> list[list[Segment]]:
    if vertical == "top":
        return Segment.align_top(lines, width, height, style)
    if vertical == "middle":
        return Segment.align_middle(lines, width, height, style)
    return Segment.align_bottom(lines, width, height, style)


def _joined(line: Iterable[Segment]) -> Iterator[Segment]:
    """The segments of a line, neighbours without style (nor control codes) joined: they
    print the same bytes."""
    run: list[str] = []
    for segment in line:
        if segment.style or segment.control:
            if run:
                yield Segment("".join(run))
                run = []
            yield segment
        else:
            run.append(segment.text)
    if run:
        yield Segment("".join(run))
