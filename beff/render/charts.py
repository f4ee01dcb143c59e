"""Declarative figures: what a suite's view says to draw (:class:`Chart`), never how.

A view returns the charts of one result (``View.charts``); ``beff report`` and ``beff plot``
draw them with matplotlib (:mod:`beff.render.plot`), the same way for every suite. Charts of
the same ``id`` are one figure: from several results of one run (a benchmark at each process
count) their series are drawn together, and from several runs they are overlaid, with a ratio
panel against the first run. Nothing here imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

LINE = "line"
BAR = "bar"


@dataclass(frozen=True)
class Series:
    """One line (or one set of bars) of a chart.

    ``x`` and ``y`` are aligned; ``lo``/``hi`` (optional) bound a band drawn around the line
    (e.g. the 10-90 % range over timed batches); ``marked`` (optional, booleans) flags points
    drawn with a warning marker (e.g. unstable sizes). ``compare_key`` names the
    (benchmark, process count) of ``beff compare``'s rows, whose per-size significance marks
    the ratio panel when two runs are overlaid (x is then the message size in bytes).
    """

    label: str
    x: np.ndarray
    y: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    marked: np.ndarray | None = None
    compare_key: tuple[str, int] | None = None

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
class Chart:
    """One figure: axes with their units, log scales, and its series.

    ``id`` is stable across runs (e.g. ``mpi1/PingPong/time``): charts of the same id are
    drawn as one figure. ``subject`` is what ``beff plot --benchmark`` selects (a benchmark
    name, ``b_eff``, ``b_eff_io``), ``section`` the heading it goes under in the report.
    A ``bar`` chart has one bar per entry of ``categories`` (the series' x are their indices);
    ``xticks`` (position, label) replaces the x axis' ticks of a line chart.
    ``marked_label`` names the marked points in the legend.
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

    def __post_init__(self) -> None:
        if self.kind not in (LINE, BAR):
            raise ValueError(f"chart {self.id!r}: kind must be {LINE!r} or {BAR!r}")
        object.__setattr__(self, "series", tuple(self.series))


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


def collect(per_run: Sequence[Sequence[Chart]], labels: Sequence[str]) -> list[Figure]:
    """The figures of several runs: charts grouped by id, in the order they first appear."""
    order: list[str] = []
    first: dict[str, Chart] = {}
    series: dict[str, list[list[Series]]] = {}
    for i, charts in enumerate(per_run):
        for c in charts:
            if c.id not in first:
                first[c.id] = c
                order.append(c.id)
                series[c.id] = [[] for _ in per_run]
            series[c.id][i].extend(c.series)
    figures = []
    for cid in order:
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
