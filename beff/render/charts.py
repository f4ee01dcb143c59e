"""Declarative figures: what a suite's view says to draw (:class:`Chart`), never how.

A view returns the charts of one result (``View.charts``); ``beff report`` and ``beff plot``
draw them with matplotlib (:mod:`beff.render.plot`), the same way for every suite. Charts of
the same ``id`` are one figure: from several results of one run (a benchmark at each process
count) their series are drawn together, and from several runs they are overlaid, with a ratio
panel against the first run. A heatmap (a matrix: ``beff map``'s pairs) is never overlaid nor
joined: each is its own figure (:func:`collect`). Nothing here imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

LINE = "line"
BAR = "bar"
HEATMAP = "heatmap"
KINDS = (LINE, BAR, HEATMAP)


@dataclass(frozen=True)
class Series:
    """One line (or one set of bars) of a chart.

    ``x`` and ``y`` are aligned; ``lo``/``hi`` (optional) bound a band drawn around the line
    (e.g. the 10-90 % range over timed batches); ``marked`` (optional, booleans) flags points
    drawn with a warning marker (e.g. unstable sizes). ``compare_key`` names the
    (benchmark, process count) of ``beff compare``'s rows (and the group, for a group of a
    ``-multi 1`` run), whose per-size significance marks the ratio panel when two runs are
    overlaid (x is then the message size in bytes).
    """

    label: str
    x: np.ndarray
    y: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    marked: np.ndarray | None = None
    compare_key: tuple[str, int] | tuple[str, int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("x", "y", "lo", "hi"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, np.asarray(value, dtype=np.float64))
        if self.marked is not None:
            object.__setattr__(self, "marked", np.asarray(self.marked, dtype=bool))
        n = len(self.x)
        for name in ("y", "lo", "hi", "marked"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"series {self.label!r}: {name} has {len(value)} points, "
                                 f"x has {n}")


@dataclass(frozen=True)
class Matrix:
    """The cells of a heatmap: ``values[i, j]`` in row i, column j (NaN: no value, drawn
    grey), e.g. a pair's bandwidth with the sender's row and the receiver's column.

    ``rows`` and ``cols`` name the rows and columns (node names); every ``label_every``-th
    is written on its axis (all of them by default). ``unit`` labels the colour bar.
    ``marked`` (booleans like ``values``, optional) outlines single cells,
    ``marked_rows``/``marked_cols`` whole rows and columns (e.g. a node whose every pair
    is slow). ``log``: a logarithmic colour scale; None: when the positive values span a
    decade or more.
    """

    values: np.ndarray
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    unit: str
    marked: np.ndarray | None = None
    marked_rows: tuple[int, ...] = ()
    marked_cols: tuple[int, ...] = ()
    label_every: int = 1
    log: bool | None = None

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "rows", tuple(self.rows))
        object.__setattr__(self, "cols", tuple(self.cols))
        if values.ndim != 2 or values.shape != (len(self.rows), len(self.cols)):
            raise ValueError(f"matrix of shape {values.shape}: expected "
                             f"({len(self.rows)}, {len(self.cols)}), one row and one column "
                             "per label")
        if self.marked is not None:
            marked = np.asarray(self.marked, dtype=bool)
            if marked.shape != values.shape:
                raise ValueError(f"marked has shape {marked.shape}, the matrix {values.shape}")
            object.__setattr__(self, "marked", marked)
        for name, n in (("marked_rows", len(self.rows)), ("marked_cols", len(self.cols))):
            index = tuple(int(i) for i in getattr(self, name))
            if any(not 0 <= i < n for i in index):
                raise ValueError(f"{name} {index}: out of range 0 to {n - 1}")
            object.__setattr__(self, name, index)
        if self.label_every < 1:
            raise ValueError(f"label_every must be at least 1, got {self.label_every}")


@dataclass(frozen=True)
class Chart:
    """One figure: axes with their units, log scales, and its series.

    ``id`` is stable across runs (e.g. ``mpi1/PingPong/time``): charts of the same id are
    drawn as one figure. ``subject`` is what ``beff plot --benchmark`` selects (a benchmark
    name, ``b_eff``, ``b_eff_io``), ``section`` the heading it goes under in the report.
    A ``bar`` chart has one bar per entry of ``categories`` (the series' x are their indices);
    ``xticks`` (position, label) replaces the x axis' ticks of a line chart.
    ``marked_label`` names the marked points (a heatmap's marked cells) in the legend.
    A ``heatmap`` chart draws its ``matrix`` (no series; x is its columns, y its rows, with
    a colour bar; ``higher_is_better`` picks the colours: the worse end is dark); without a
    matrix it says why, in its ``note``.
    """

    id: str
    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    subject: str = ""
    section: str = ""
    kind: str = LINE
    xlog: bool = True
    ylog: bool = True
    categories: tuple[str, ...] = ()
    xticks: tuple[tuple[float, str], ...] = ()
    marked_label: str = "unstable"
    note: str = ""
    higher_is_better: bool | None = None  # for the ratio panel's caption
    matrix: Matrix | None = None  # a heatmap's cells

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"chart {self.id!r}: kind must be one of {', '.join(KINDS)}")
        object.__setattr__(self, "series", tuple(self.series))
        if self.kind == HEATMAP and self.series:
            raise ValueError(f"chart {self.id!r}: a heatmap draws its matrix, not series")
        if self.kind != HEATMAP and self.matrix is not None:
            raise ValueError(f"chart {self.id!r}: only a heatmap has a matrix")


def merge_series(series: Sequence[Series]) -> list[Series]:
    """Series of the same label are one series (e.g. a benchmark's single point at each
    process count, from one result per count): their points joined, sorted by x."""
    out: dict[str, Series] = {}
    for s in series:
        old = out.get(s.label)
        if old is None:
            out[s.label] = s
            continue
        out[s.label] = _join(old, s)
    return list(out.values())


def _cat(a: np.ndarray | None, b: np.ndarray | None, na: int, nb: int,
         fill: float | bool) -> np.ndarray | None:
    if a is None and b is None:
        return None
    left = a if a is not None else np.full(na, fill)
    right = b if b is not None else np.full(nb, fill)
    return np.concatenate([left, right])


def _join(a: Series, b: Series) -> Series:
    na, nb = len(a.x), len(b.x)
    x = np.concatenate([a.x, b.x])
    order = np.argsort(x, kind="stable")
    parts = {name: _cat(getattr(a, name), getattr(b, name), na, nb, np.nan)
             for name in ("lo", "hi")}
    marked = _cat(a.marked, b.marked, na, nb, False)
    return replace(a, x=x[order], y=np.concatenate([a.y, b.y])[order],
                   lo=None if parts["lo"] is None else parts["lo"][order],
                   hi=None if parts["hi"] is None else parts["hi"][order],
                   marked=None if marked is None else marked[order])


@dataclass(frozen=True)
class Figure:
    """A chart as drawn: its id and layout from the first run that has it, and per run (in
    file order) its series, merged by label. ``runs[i]`` is None where run i lacks it."""

    chart: Chart
    runs: tuple[tuple[Series, ...] | None, ...]
    labels: tuple[str, ...]  # the runs' names, for legends
    run: int | None = None  # a heatmap's figure: the run whose matrix it draws (chart's)


def collect(per_run: Sequence[Sequence[Chart]], labels: Sequence[str]) -> list[Figure]:
    """The figures of several runs: charts grouped by id, in the order they first appear.

    Heatmaps are not grouped: two runs' matrices cannot be overlaid (one cell has one
    colour), and a ratio of two maps would hide which run a slow node was slow in. So every
    heatmap is its own figure, with its own colour scale and no ratio panel, placed with
    the other runs' heatmaps of the same id, in file order.

    Charts of one id from runs that label their y axis or note differently (a measured run's
    t_avg, an imported text's IMB t) keep the first run's axis; the figure's note then says
    every note once, and which y each run has.
    """
    order: list[str] = []
    first: dict[str, Chart] = {}
    series: dict[str, list[list[Series]]] = {}
    heatmaps: dict[str, list[tuple[int, Chart]]] = {}
    axes: dict[str, dict[str, list[str]]] = {}  # id -> y label -> the runs with it
    notes: dict[str, dict[str, list[str]]] = {}  # id -> note -> the runs with it
    for i, charts in enumerate(per_run):
        for c in charts:
            if c.id not in first:
                first[c.id] = c
                order.append(c.id)
                series[c.id] = [[] for _ in per_run]
            if c.kind == HEATMAP:
                heatmaps.setdefault(c.id, []).append((i, c))
                continue
            series[c.id][i].extend(c.series)
            for said, text in ((axes, c.ylabel), (notes, c.note)):
                names = said.setdefault(c.id, {}).setdefault(text, [])
                if labels[i] not in names:
                    names.append(labels[i])
    for cid, ylabels in axes.items():  # runs that say different things (measured, imported)
        texts = {t: names for t, names in notes[cid].items() if t}
        if len(notes[cid]) > 1:
            parts = [f"{', '.join(names)}: {t}" for t, names in texts.items()]
        else:
            parts = list(texts)
        if len(ylabels) > 1:
            parts.append("y: " + "; ".join(f"{y} for {', '.join(names)}"
                                           for y, names in ylabels.items()))
        if parts != ([first[cid].note] if first[cid].note else []):
            first[cid] = replace(first[cid], note="; ".join(parts))
    figures = []
    for cid in order:
        for i, c in heatmaps.get(cid, ()):
            alone: tuple[tuple[Series, ...] | None, ...] = tuple(
                () if k == i else None for k in range(len(per_run)))
            figures.append(Figure(c, alone, tuple(labels), run=i))
        if cid not in heatmaps or any(series[cid]):
            runs = tuple(tuple(merge_series(s)) if s else None for s in series[cid])
            figures.append(Figure(first[cid], runs, tuple(labels)))
    return figures


def select(figures: Sequence[Figure], name: str) -> list[Figure]:
    """The figures ``beff plot --benchmark NAME`` means: those of subject NAME, or the one of
    id NAME or ending in ``/NAME`` (case-insensitive)."""
    want = name.lower()
    hits = [f for f in figures if f.chart.subject.lower() == want]
    if hits:
        return hits
    return [f for f in figures if f.chart.id.lower() == want
            or f.chart.id.lower().endswith("/" + want)]


def subjects(figures: Sequence[Figure]) -> list[str]:
    """The subjects of ``figures``, in order, once each."""
    return list(dict.fromkeys(f.chart.subject for f in figures if f.chart.subject))
