"""Draw declared figures (:mod:`beff.render.charts`) with matplotlib, as HPC papers print
them: labelled axes with units, log scales, a legend naming the run and the process count,
the spread over timed batches as a band; several runs overlaid, with a ratio panel against
the first run where ``beff compare`` marks the significant differences. A heatmap (a matrix
of pairs) is drawn cell by cell with a colour bar, one run per figure.

matplotlib is an extra (``pip install matplotlib``, or a checkout's ``report`` extra): it is
imported, with the Agg backend, only when something is drawn (:func:`require` says so in one
line before).
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from beff.core.config import check_output_kind, describe_existing
from beff.core.errors import UsageError
from beff.render import compare
from beff.render.charts import BAR, HEATMAP, LINE, Figure, Matrix, Series
from beff.results.model import RunRecord

FORMATS = (".png", ".svg", ".pdf")
# (run index) -> (benchmark, process count, bytes, group) -> significant: beff compare's rows
# of each run against the first (group: None, or a group of a -multi 1 run).
Significance = dict[int, dict[tuple[str, int, int, int | None], bool]]

STYLE: dict[str, Any] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica", "Liberation Sans"],
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "axes.grid": True,
    "axes.grid.which": "major",
    "grid.color": "#d9d9d9",
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.fontsize": 8.0,
    "legend.frameon": False,
    "lines.linewidth": 1.5,
    "lines.markersize": 4.0,
    "svg.fonttype": "none",  # text stays text: small pages, searchable labels
    "svg.hashsalt": "beff",  # the same ids for the same figure: reproducible pages
    "pdf.fonttype": 42,  # TrueType in PDFs, as publishers ask
    "ps.fonttype": 42,
}
# Every colour means one thing. The series take matplotlib's tab10 without its red and its
# grey: red (FLAG) marks what a figure flags (an unstable size, a heatmap's named outlier),
# black (SIGNIFICANT_COLOUR, as stars) the significant differences of the ratio panel, grey
# its line at 1. Past 8 series the colours come round again with another line style.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
           "#17becf")
FLAG = "#d62728"
SIGNIFICANT_COLOUR = "#000000"
SIGNIFICANT_MARKER = "*"
MARKERS = ("o", "s", "^", "D", "v", "P")  # one per run (no star: that is significance's)
LINESTYLES = ("-", "--", ":", "-.")
HATCHES = ("", "//", "..", "xx")  # a run's bars after the first
HEAT_BAD = "#e0e0e0"  # a heatmap's cells without a value
HEAT_MARK = FLAG  # the outline of its marked cells
LEGEND_INSIDE = 3  # a legend of more entries, or longer ones, or of bars, goes under the
LEGEND_INSIDE_CHARS = 32  # figure
TITLE_SHARE = 0.8  # a title wider than this share of its figure is wrapped
HEAT_VALUES_MAX = 12  # cells show their values up to this many rows and columns
MAX_SIZE_TICKS = 8  # labelled ticks of a byte axis at most (size_ticks)
MAX_CATEGORY_LABELS = 48  # a bar chart's categories named at most
SIGNIFICANT = "significant (Mann-Whitney U on the batches, Holm-corrected, as beff compare)"


def require(command: str, load: bool = True) -> None:
    """UsageError in one line when matplotlib is missing, or (``load``) installed but
    broken, before anything is read or measured. A run's ``--report`` looks without loading
    it: every rank checks, and only rank 0 draws."""
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError(f"{command} needs matplotlib: pip install matplotlib")
    if not load:
        return
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except Exception as exc:  # a broken install can raise anything on import
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise UsageError(f"{command}: matplotlib is installed but cannot be loaded "
                         f"({type(exc).__name__}: {reason}); reinstall it: pip install "
                         "--force-reinstall matplotlib") from None


@contextmanager
def style() -> Iterator[Any]:
    """matplotlib with the Agg backend and :data:`STYLE`, for drawing and saving."""
    import matplotlib

    matplotlib.use("Agg")
    params: Any = STYLE
    with matplotlib.rc_context(params):
        yield matplotlib


def significance(records: Sequence[RunRecord]) -> Significance:
    """For every run after the first of its kind (suite): which (benchmark, nprocs, size)
    differ significantly from that first run
    (:func:`beff.render.compare.compare_records`)."""
    out: Significance = {}
    kinds = [compare.kind_of_run(r) for r in records]
    for k in range(len(records)):
        base = kinds.index(kinds[k])
        if base != k:
            rows = compare.compare_records(records[base], records[k])
            out[k] = {(r.benchmark, r.nprocs, r.nbytes, r.group): r.significant
                      for r in rows}
    return out


def size_label(v: float, pos: object = None) -> str:
    """Tick labels of a byte axis: 1, 16, 256, 4K, 64K, 1M (binary multiples)."""
    if v == 0:
        return "0"
    if v < 0 or not np.isfinite(v):
        return ""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= scale:
            q = v / scale
            return f"{q:.0f}{unit}" if abs(q - round(q)) < 1e-9 else f"{q:.3g}{unit}"
    return f"{v:.0f}" if abs(v - round(v)) < 1e-9 else f"{v:.3g}"


def _label(figure: Figure, run: int, series: Series) -> str:
    if len(figure.runs) == 1:
        return series.label
    return f"{figure.labels[run]}: {series.label}"


def _finite(*arrays: np.ndarray) -> np.ndarray:
    ok = np.ones(len(arrays[0]), dtype=bool)
    for a in arrays:
        ok &= np.isfinite(a)
    return ok


Drawn = list[tuple[int, Series, str, str, str]]


def _look(run: int, n: int) -> tuple[str, str, str]:
    """Colour, marker and line style of the ``n``-th series drawn, of run ``run``: a colour
    per series (round again past 8, with another line style), a marker per run."""
    return (COLOURS[n % len(COLOURS)], MARKERS[run % len(MARKERS)],
            LINESTYLES[(run + n // len(COLOURS)) % len(LINESTYLES)])


def _draw_lines(ax: Any, figure: Figure) -> Drawn:
    """The runs' series; returns what the ratio panel needs (run, series, colour, marker,
    line style)."""
    chart = figure.chart
    drawn = []
    n = 0
    marked_any = False
    for k, runs in enumerate(figure.runs):
        for s in runs or ():
            ok = _finite(s.x, s.y) & (s.y > 0 if chart.ylog else True)
            if chart.xlog:
                ok &= s.x >= 0
            if not ok.any():
                continue
            c, m, ls = _look(k, n)
            n += 1
            ax.plot(s.x[ok], s.y[ok], color=c, marker=m, linestyle=ls,
                    label=_label(figure, k, s))
            if s.lo is not None and s.hi is not None:
                band = ok & _finite(s.lo, s.hi)
                if band.any():
                    ax.fill_between(s.x[band], s.lo[band], s.hi[band], color=c, alpha=0.18,
                                    linewidth=0)
            if s.marked is not None and (s.marked & ok).any():
                hit = s.marked & ok
                ax.plot(s.x[hit], s.y[hit], linestyle="none", marker="o", markersize=9,
                        markerfacecolor="none", markeredgecolor=FLAG, markeredgewidth=1.2)
                marked_any = True
            drawn.append((k, s, c, m, ls))
    if marked_any:
        ax.plot([], [], linestyle="none", marker="o", markersize=9, markerfacecolor="none",
                markeredgecolor=FLAG, label=chart.marked_label)
    return drawn


def _slots(figure: Figure) -> list[tuple[int, list[Series]]]:
    """The bars' places side by side in each category: per run, its series, those that
    share no category (b_eff's rings and random patterns) in one place."""
    slots: list[tuple[int, list[Series]]] = []
    for k, runs in enumerate(figure.runs):
        layers: list[tuple[set[float], list[Series]]] = []
        for s in runs or ():
            xs = set(s.x[np.isfinite(s.y)].tolist())
            for used, members in layers:
                if not used & xs:
                    used |= xs
                    members.append(s)
                    break
            else:
                layers.append((xs, [s]))
        slots += [(k, members) for _, members in layers]
    return slots


def _draw_bars(ax: Any, figure: Figure) -> Drawn:
    """A bar per series and category, the runs' side by side (a hatch for each run after
    the first), each series its colour; the values written on the bars when few."""
    chart = figure.chart
    slots = _slots(figure)
    width = 0.8 / max(1, len(slots))
    drawn = []
    n = 0
    marked = False
    for i, (k, members) in enumerate(slots):
        shift = (i - (len(slots) - 1) / 2) * width
        for s in members:
            c, m, ls = _look(k, n)
            n += 1
            ok = np.isfinite(s.y)
            ax.bar(s.x[ok] + shift, s.y[ok], width=width, color=c,
                   label=_label(figure, k, s), hatch=HATCHES[k % len(HATCHES)],
                   edgecolor="white" if k == 0 else "#333333", linewidth=0.4)
            if s.lo is not None and s.hi is not None:  # a one-point series' band: whiskers
                w = ok & _finite(s.lo, s.hi)
                if w.any():
                    ax.errorbar(s.x[w] + shift, s.y[w], fmt="none", ecolor="#333333",
                                yerr=np.abs(np.vstack([s.y[w] - s.lo[w], s.hi[w] - s.y[w]])),
                                elinewidth=1.0, capsize=3)
            if s.marked is not None and (s.marked & ok).any():
                hit = s.marked & ok
                ax.plot(s.x[hit] + shift, s.y[hit], linestyle="none", marker="o",
                        markersize=9, markerfacecolor="none", markeredgecolor=FLAG,
                        markeredgewidth=1.2)
                marked = True
            drawn.append((k, s, c, m, ls))
    if marked:
        ax.plot([], [], linestyle="none", marker="o", markersize=9, markerfacecolor="none",
                markeredgecolor=FLAG, label=chart.marked_label)
    if len(slots) * len(chart.categories) <= 8:  # few bars: their values, over whiskers
        for i, (_, members) in enumerate(slots):
            shift = (i - (len(slots) - 1) / 2) * width
            for s in members:
                top = s.y if s.hi is None else np.fmax(s.y, s.hi)
                for x, y, t in zip(s.x + shift, s.y, top, strict=True):
                    if np.isfinite(y):
                        ax.annotate(f"{y:.4g}", (x, t), xytext=(0, 2), ha="center",
                                    va="bottom", textcoords="offset points", fontsize=7)
    _categories(ax, chart.categories)
    if len(chart.categories) == 1:  # one category (Barrier at one process count): not
        ax.set_xlim(-1.0, 1.0)  # a bar as wide as the figure
    ax.grid(axis="x", visible=False)
    return drawn


def _categories(ax: Any, names: Sequence[str]) -> None:
    """A bar chart's category ticks: few wrap onto lines, more stand upright (in smaller
    print for many; past MAX_CATEGORY_LABELS, every k-th is written)."""
    n = len(names)
    ax.set_xticks(np.arange(n))
    if n <= 4:
        ax.set_xticklabels(["\n".join(textwrap.wrap(c, 16)) or c for c in names], fontsize=8)
        return
    every = -(-n // MAX_CATEGORY_LABELS)
    ax.set_xticklabels([c if i % every == 0 else "" for i, c in enumerate(names)],
                       rotation=90, fontsize=8 if n <= 12 else 7 if n <= 40 else 6)


def _one_point(figure: Figure) -> Figure:
    """A chart against a linear x (Barrier's time against the process count) whose every
    series has one point is drawn as bars, a category per x: one dot on an axis of
    1.9 to 2.1 processes says nothing."""
    chart = figure.chart
    if chart.kind != LINE or chart.xlog or chart.xticks:
        return figure
    series = [s for runs in figure.runs for s in runs or ()]
    points = [s.x[_finite(s.x, s.y)] for s in series]
    if not series or any(len(x) > 1 for x in points) or not any(len(x) for x in points):
        return figure
    xs = sorted({float(x[0]) for x in points if len(x)})
    where = {x: float(i) for i, x in enumerate(xs)}

    def bar(s: Series) -> Series:
        ok = _finite(s.x, s.y)
        return replace(s, x=np.array([where[float(x)] for x in s.x[ok]]), y=s.y[ok],
                       lo=None if s.lo is None else s.lo[ok],
                       hi=None if s.hi is None else s.hi[ok],
                       marked=None if s.marked is None else s.marked[ok])

    unit = chart.xlabel.split(" [")[0]
    names = tuple(f"{x:g} {unit}".strip() for x in xs)
    runs = tuple(None if r is None else tuple(bar(s) for s in r) for r in figure.runs)
    return replace(figure, runs=runs, chart=replace(
        chart, kind=BAR, xlog=False, ylog=False, categories=names, xlabel=""))


def _heat_norm(values: np.ndarray, log: bool | None) -> tuple[Any, bool]:
    """The colour scale of a heatmap: logarithmic when asked, or (None) when the values are
    positive and span a decade or more; (norm, is it logarithmic)."""
    from matplotlib.colors import LogNorm, Normalize

    finite = values[np.isfinite(values)]
    positive = finite[finite > 0]
    if log is None:
        log = bool(positive.size) and positive.size == finite.size and \
            float(positive.max()) >= 10 * float(positive.min())
    if log and positive.size:
        lo, hi = float(positive.min()), float(positive.max())
        return (LogNorm(lo / 1.5, hi * 1.5) if lo == hi else LogNorm(lo, hi)), True
    if not finite.size:
        return Normalize(0.0, 1.0), False
    lo, hi = float(finite.min()), float(finite.max())
    if lo == hi:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    return Normalize(lo, hi), False


def _cell_text(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"


def _two_five(v: float, pos: object = None) -> str:
    """Minor tick labels of a log colour bar: 2 and 5 times a power of ten only."""
    if v <= 0 or not np.isfinite(v):
        return ""
    lead = v / 10 ** np.floor(np.log10(v) + 1e-9)
    return number_label(v) if min(abs(lead - 2), abs(lead - 5)) < 1e-6 else ""


def _heat_ticks(ax: Any, m: Matrix) -> None:
    """Every ``label_every``-th row and column named; small print for many, sideways for
    many or long column names."""
    step = m.label_every
    cols, rows = m.cols[::step], m.rows[::step]
    n = max(len(cols), len(rows))
    size = 8.0 if n <= 16 else 6.5 if n <= 32 else 5.0
    sideways = len(cols) > 8 or max((len(c) for c in cols), default=0) * len(cols) > 48
    ax.set_xticks(np.arange(0, len(m.cols), step))
    ax.set_xticklabels(cols, fontsize=size, rotation=90 if sideways else 0)
    ax.set_yticks(np.arange(0, len(m.rows), step))
    ax.set_yticklabels(rows, fontsize=size)
    ax.tick_params(length=2, pad=2)


def _draw_heatmap(target: Any, ax: Any, figure: Figure) -> None:
    """The matrix cell by cell (an image: one pixel per cell, not smoothed), its colour bar
    with the unit, the values in the cells of small matrices, the marked cells, rows and
    columns outlined. Without a value, the chart's note says why."""
    import matplotlib
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import FuncFormatter, NullFormatter

    chart, m = figure.chart, figure.chart.matrix
    ax.grid(False)
    if m is None or not np.isfinite(m.values).any():
        ax.set_axis_off()
        ax.text(0.5, 0.5, textwrap.fill(chart.note or "nothing measured", 70),
                transform=ax.transAxes, ha="center", va="center", color="#555555")
        return
    norm, log = _heat_norm(m.values, m.log)
    bad = ~np.isfinite(m.values) | ((m.values <= 0) if log else False)
    cells = np.ma.masked_array(m.values, mask=bad)
    # the worse end dark: low bandwidth, high latency
    cmap = matplotlib.colormaps["viridis_r" if chart.higher_is_better is False else "viridis"]
    cmap = cmap.with_extremes(bad=HEAT_BAD)
    nrows, ncols = m.values.shape
    # aspect "auto": constrained layout leaves no room for the row labels of an "equal"
    # one; the figure's size keeps the cells about square
    image = ax.imshow(cells, cmap=cmap, norm=norm, interpolation="none", aspect="auto")
    bar = target.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label(m.unit)
    bar.outline.set_visible(False)
    if log:  # powers of ten labelled; 2 and 5 times them too where fewer than 3 are shown
        bar.ax.yaxis.set_major_formatter(FuncFormatter(number_label))
        powers = np.floor(np.log10(norm.vmax)) - np.ceil(np.log10(norm.vmin)) + 1
        bar.ax.yaxis.set_minor_formatter(FuncFormatter(_two_five) if powers < 3
                                         else NullFormatter())
    for spine in ax.spines.values():
        spine.set_visible(False)
    _heat_ticks(ax, m)
    if nrows <= HEAT_VALUES_MAX and ncols <= HEAT_VALUES_MAX:
        for i, j in zip(*np.nonzero(~bad), strict=True):
            r, g, b, _ = cmap(norm(m.values[i, j]))
            ax.text(j, i, _cell_text(float(m.values[i, j])), ha="center", va="center",
                    fontsize=8 if ncols <= 6 else 6,
                    color="white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.55 else "black")
    boxes = [(-0.5, i - 0.5, ncols, 1) for i in m.marked_rows]
    boxes += [(j - 0.5, -0.5, 1, nrows) for j in m.marked_cols]
    if m.marked is not None:
        boxes += [(j - 0.5, i - 0.5, 1, 1) for i, j in zip(*np.nonzero(m.marked), strict=True)]
    for x, y, w, h in boxes:
        ax.add_patch(Rectangle((x, y), w, h, fill=False, edgecolor=HEAT_MARK, linewidth=2.0,
                               zorder=3, clip_on=False))
    if boxes:
        target.legend(handles=[Patch(facecolor="none", edgecolor=HEAT_MARK, linewidth=2.0,
                                     label=chart.marked_label)],
                      loc="outside lower center", frameon=False)


Ratios = list[tuple[int, Series, np.ndarray, np.ndarray, np.ndarray]]


def ratios(figure: Figure, sig: Significance) -> Ratios:
    """Each later run's series over the first run's series of the same label, at the x both
    have where the ratio is finite and positive: (run, series, x, ratio, significant: beff
    compare's noise check, per x)."""
    present = [k for k, r in enumerate(figure.runs) if r]
    if len(present) < 2:
        return []
    first = present[0]
    base = {s.label: s for s in figure.runs[first] or ()}
    out: Ratios = []
    for k in present[1:]:
        for s in figure.runs[k] or ():
            ref = base.get(s.label)
            if ref is None:
                continue
            common, i, j = np.intersect1d(s.x, ref.x, return_indices=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = s.y[i] / ref.y[j]
            ok = np.isfinite(r) & (r > 0)
            if not ok.any():
                continue
            hit = np.zeros(int(ok.sum()), dtype=bool)
            if s.compare_key is not None and k in sig:
                bench, nprocs, *group = s.compare_key
                at = group[0] if group else None
                hit = np.array([sig[k].get((bench, nprocs, int(x), at), False)
                                for x in common[ok]], dtype=bool)
            out.append((k, s, common[ok], r[ok], hit))
    return out


def significant_points(figure: Figure, sig: Significance) -> int:
    """How many points the ratio panel of ``figure`` marks significant."""
    return sum(int(hit.sum()) for *_, hit in ratios(figure, sig))


# The ratio axis' ticks, by preference: 1, decades (every k-th where many), then pairs as
# far below 1 as above.
RATIO_TICKS = ((0.5, 2.0), (0.2, 5.0), (0.8, 1.25), (0.9, 1.1))
RATIO_TICKS_MAX = 4  # the panel is short: more would run together


def _ratio_axis(ax: Any, values: np.ndarray) -> None:
    """A logarithmic ratio axis, symmetric about 1 (half and double as far from it), with
    a few plain ticks: a ratio of 0.01 is as far below 1 as 100 is above, not flattened
    to 0."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    v = values[np.isfinite(values) & (values > 0)]
    # room above and below the farthest point for its marker (a star is large)
    reach = max(float(np.abs(np.log10(v)).max()) if v.size else 0.0, np.log10(1.12)) * 1.3
    ax.set_yscale("log")
    ax.set_ylim(10 ** -reach, 10 ** reach)
    top = int(np.floor(reach + 1e-9))  # the decades inside: 10^-top ... 10^top
    step = -(-top // max(1, (RATIO_TICKS_MAX - 1) // 2)) if top else 1
    ticks = [1.0] + [10.0 ** (sign * k) for k in range(step, top + 1, step) for sign in (-1, 1)]
    for level in RATIO_TICKS:
        inside = [t for t in level if abs(np.log10(t)) <= reach]
        if len(ticks) + len(inside) > RATIO_TICKS_MAX:
            break
        ticks += inside
    ax.yaxis.set_major_locator(FixedLocator(sorted(ticks)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(number_label))


def _ratio(ax: Any, figure: Figure, drawn: Drawn, sig: Significance) -> None:
    """Each later run's series over the first run's series of the same label (:func:`ratios`)
    on a log axis, in the series' colours; significant differences (beff compare's noise
    check) drawn as black stars, a mark no series uses."""
    chart = figure.chart
    look = {(k, s.label): (c, m, ls) for k, s, c, m, ls in drawn}
    first = min(k for k, *_ in drawn)
    shown = False
    drawn_ratios = []
    for k, s, x, r, hit in ratios(figure, sig):
        if (k, s.label) not in look:
            continue
        c, m, ls = look[(k, s.label)]
        ax.plot(x, r, color=c, marker=m, linestyle="none" if chart.kind == BAR else ls)
        drawn_ratios.append(r)
        if hit.any():
            ax.plot(x[hit], r[hit], linestyle="none", marker=SIGNIFICANT_MARKER,
                    markersize=9, color=SIGNIFICANT_COLOUR, zorder=5,
                    label=SIGNIFICANT if not shown else None)
            shown = True
    ax.axhline(1.0, color="#555555", linewidth=0.8)
    _ratio_axis(ax, np.concatenate(drawn_ratios) if drawn_ratios else np.empty(0))
    ax.set_ylabel("ratio")
    what = f"each run / {figure.labels[first]}"
    if chart.higher_is_better is not None:
        what += "; above 1: " + ("better" if chart.higher_is_better else "slower")
    ax.set_title(_fitted(ax, what, 7), fontsize=7, loc="right", pad=2)


def number_label(v: float, pos: object = None, digits: int = 4) -> str:
    """Tick labels of a log axis: plain numbers (0.5, 2, 300, 2500), powers of ten beyond;
    ``digits`` significant digits (more where the ticks are closer together)."""
    if v <= 0 or not np.isfinite(v):
        return ""
    e = float(np.log10(v))
    if abs(e - round(e)) < 1e-9 and (v >= 1e4 or v < 1e-2):
        return f"$10^{{{round(e)}}}$"
    if v >= 1000:
        return f"{v:.{max(0, digits - 1 - int(np.floor(e))) if digits > 4 else 0}f}"
    return f"{v:.{digits}g}"


def _numbers(minor: bool = False) -> Any:
    """A matplotlib formatter of :func:`number_label` with as many digits as the ticks need
    to read differently (a log axis over a narrow range has ticks 34.15, 34.155, ...).
    ``minor``: of a log axis' minor ticks, those far enough (a line and a half of their
    print) from the labelled ticks and each other, 2 and 5 times a power of ten first; the
    others unlabelled ("90" does not sit on "100")."""
    import matplotlib
    from matplotlib.ticker import Formatter

    class Numbers(Formatter):
        digits = 4
        keep: set[float] | None = None

        def set_locs(self, locs: Sequence[float]) -> None:
            shown = sorted({float(v) for v in locs if v > 0 and np.isfinite(v)})
            if minor:
                shown = self._apart(shown)
                self.keep = set(shown)
            for self.digits in range(4, 12):
                if len({number_label(v, digits=self.digits) for v in shown}) == len(shown):
                    break

        def _apart(self, locs: list[float]) -> list[float]:
            axis: Any = self.axis
            if axis is None or getattr(axis, "axes", None) is None:
                return locs
            ax: Any = axis.axes
            upright = axis is ax.yaxis
            lo, hi = sorted(axis.get_view_interval())

            def at(v: float) -> float:
                point = ax.transData.transform((1.0, v) if upright else (v, 1.0))
                return float(point[1] if upright else point[0])

            labels = matplotlib.rcParams["ytick.labelsize"] if upright else \
                matplotlib.rcParams["xtick.labelsize"]
            size = matplotlib.font_manager.FontProperties(size=labels) \
                .get_size_in_points() * ax.get_figure().dpi / 72
            need = size * 1.5 if upright else size * 3.0
            taken = [at(v) for v in axis.get_majorticklocs() if lo <= v <= hi]
            lead = {2: 0, 5: 1, 3: 2, 4: 3, 6: 4, 7: 5, 8: 6, 9: 7}

            def rank(v: float) -> int:
                return lead.get(round(v / 10 ** np.floor(np.log10(v) + 1e-9)), 9)

            out = []
            for v in sorted((v for v in locs if lo <= v <= hi), key=rank):
                p = at(v)
                if all(abs(p - q) >= need for q in taken):
                    taken.append(p)
                    out.append(v)
            return sorted(out)

        def __call__(self, x: float, pos: object = None) -> str:
            if self.keep is not None and float(x) not in self.keep:
                return ""
            return number_label(x, digits=self.digits)

    return Numbers()


def size_ticks(xs: np.ndarray, most: int = MAX_SIZE_TICKS) -> tuple[list[float], list[float]]:
    """The labelled and the other ticks of a byte axis through the sizes ``xs``: 0 when
    drawn, and the powers of two from the smallest positive size to the largest, every
    other one (powers of four), every fourth (of sixteen) ... so that at most ``most`` are
    labelled and no labels run together ("64K128K256K512K1M"); the others unlabelled."""
    xs = np.asarray(xs, dtype=np.float64)
    xs = xs[np.isfinite(xs)]
    positive = xs[xs > 0]
    zero = [0.0] if (xs == 0).any() else []
    if not positive.size:
        return zero, []
    lo = int(np.floor(np.log2(positive.min()) + 1e-9))
    hi = int(np.ceil(np.log2(positive.max()) - 1e-9))
    step = 1
    while len(zero) + sum(e % step == 0 for e in range(lo, hi + 1)) > max(2, most) \
            and step < hi - lo + 1:
        step *= 2
    major = [2.0 ** e for e in range(lo, hi + 1) if e % step == 0]
    minor = [2.0 ** e for e in range(lo, hi + 1) if e % step]
    return zero + major, minor


def _axes(ax: Any, figure: Figure, zero: bool, xs: np.ndarray) -> None:
    """Scales and ticks: a byte axis in powers of two, thinned to at most
    :data:`MAX_SIZE_TICKS` labels (:func:`size_ticks`; symmetric log when 0 B is drawn: it
    sits at 0), a log bandwidth or time axis with plain numbers (minor ticks labelled when
    the axis spans less than a decade and a half)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    chart = figure.chart
    if chart.xlog:
        if zero:
            ax.set_xscale("symlog", base=2, linthresh=1, linscale=0.4)
        else:
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_locator(LogLocator(base=2, numticks=9))
        major, minor = size_ticks(xs)
        if major:
            ax.xaxis.set_major_locator(FixedLocator(major))
            ax.xaxis.set_minor_locator(FixedLocator(minor))
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        ax.xaxis.set_minor_formatter(NullFormatter())
    if chart.ylog:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(_numbers())
        lo, hi = ax.get_ylim()
        few = lo > 0 and np.log10(hi / lo) < 1.5
        ax.yaxis.set_minor_formatter(_numbers(minor=True) if few else NullFormatter())
    if chart.xticks:
        ax.set_xticks([p for p, _ in chart.xticks])
        ax.set_xticklabels([t for _, t in chart.xticks])


def draw(target: Any, figure: Figure, sig: Significance) -> None:
    """Draw ``figure`` into a matplotlib Figure or SubFigure: the chart, and with several
    runs a ratio panel under it. One-point series are drawn as bars (:func:`_one_point`);
    a title too wide for the figure is wrapped (:func:`_fitted`)."""
    figure = _one_point(figure)
    chart = figure.chart
    if chart.kind == HEATMAP:
        ax = target.subplots(1, 1)
        _draw_heatmap(target, ax, figure)
        title = chart.title
        if figure.run is not None and len(figure.labels) > 1:
            title = f"{figure.labels[figure.run]}: {title}"  # one run per heatmap
        ax.set_title(_fitted(ax, title))
        if chart.matrix is not None:
            ax.set_xlabel(chart.xlabel)
            ax.set_ylabel(chart.ylabel)
        return
    several = sum(r is not None for r in figure.runs) > 1
    if several:
        ax, rax = target.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    else:
        ax, rax = target.subplots(1, 1), None
    drawn = _draw_bars(ax, figure) if chart.kind == BAR else _draw_lines(ax, figure)
    shown = [s.x[np.isfinite(s.y) & ((s.y > 0) if chart.ylog else True)]
             for _, s, *_ in drawn]
    xs = np.concatenate(shown) if shown else np.empty(0)
    # 0 B is drawn: a symmetric log axis puts it at 0
    zero = chart.kind != BAR and bool((xs == 0).any())
    _axes(ax, figure, zero, xs)
    ax.set_title(_fitted(ax, chart.title))
    ax.set_ylabel(_fitted(ax, chart.ylabel, upright=True))
    if not drawn:
        ax.text(0.5, 0.5, "nothing measured", transform=ax.transAxes, ha="center",
                va="center", color="#777777")
    if rax is not None and drawn:
        _ratio(rax, figure, drawn, sig)
        rax.set_xlabel(chart.xlabel)
        ax.tick_params(labelbottom=False)
        if chart.kind == BAR:
            _categories(rax, chart.categories)
        elif chart.xticks:
            rax.set_xticks([p for p, _ in chart.xticks])
            rax.set_xticklabels([t for _, t in chart.xticks])
    else:
        ax.set_xlabel(chart.xlabel)
    if drawn:
        _legend(target, [ax] if rax is None else [ax, rax], chart.kind == BAR)
    if hasattr(target, "align_ylabels"):
        target.align_ylabels()


def _legend(target: Any, axes: Sequence[Any], bars: bool) -> None:
    """One legend of the panels' entries (the ratio panel's significance marks too): every
    line is named (a line of one series too: its process count, its pattern type); the bars
    of one series are named by their categories. A few short entries go inside the axes
    where they hide the least; more, longer ones, or bars (they fill the axes), under the
    figure."""
    handles: list[Any] = []
    labels: list[str] = []
    for ax in axes:
        h, lb = ax.get_legend_handles_labels()
        handles += h
        labels += lb
    if not labels or (bars and len(labels) == 1):
        return
    longest = max(len(t) for t in labels)
    if len(labels) <= LEGEND_INSIDE and longest <= LEGEND_INSIDE_CHARS and not bars:
        axes[0].legend(handles, labels, loc="best", frameon=True, framealpha=0.85,
                       edgecolor="none")
        return
    target.legend(handles, labels, loc="outside lower center",
                  ncol=1 if longest > 40 else 2 if longest > 20 or len(labels) < 6 else 3)


def _fitted(ax: Any, text: str, fontsize: float | None = None, upright: bool = False) -> str:
    """``text`` as a title of ``ax`` (``upright``: as its y label), wrapped onto more lines
    where it is wider than :data:`TITLE_SHARE` of the figure (or subfigure) the axes are in
    (taller than the axes): a long run name before a heatmap's title, a long title or a y
    label beside a ratio panel is not cut at the figure's edge, nor runs into the panel."""
    import matplotlib

    target = ax.get_figure()
    size = fontsize if fontsize is not None else matplotlib.rcParams["axes.labelsize"] \
        if upright else matplotlib.rcParams["axes.titlesize"]
    probe = target.text(0, 0, text, fontsize=size)
    canvas = target.canvas
    if hasattr(canvas, "get_renderer"):
        wide = probe.get_window_extent(canvas.get_renderer()).width
    else:  # about 0.6 em a character
        wide = len(text) * 0.6 * probe.get_fontsize() * target.dpi / 72
    probe.remove()
    if upright:  # the axes' height as laid out before the layout, a little less
        room = ax.get_position().height * target.bbox.height * 0.9
    else:
        room = target.bbox.width * TITLE_SHARE
    if wide <= room:
        return text
    return textwrap.fill(text, max(12, int(len(text) * room / wide)))


def _size(figure: Figure) -> tuple[float, float]:
    figure = _one_point(figure)
    if figure.chart.kind == HEATMAP:
        return (6.4, 5.6) if figure.chart.matrix is not None else (6.4, 1.6)
    several = sum(r is not None for r in figure.runs) > 1
    tall = figure.chart.kind == BAR and len(figure.chart.categories) > 4
    return 6.4, 4.0 + (1.4 if several else 0.0) + (0.8 if tall else 0.0)


def render(figure: Figure, sig: Significance) -> Any:
    """``figure`` drawn into a matplotlib Figure of its own, in :func:`style`, with an Agg
    canvas (its texts measured as they will print); save it in :func:`style` too."""
    with style():
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure as MplFigure

        fig = MplFigure(figsize=_size(figure), layout="constrained")
        FigureCanvasAgg(fig)
        draw(fig, figure, sig)
    return fig


_ID = re.compile(r'id="([^"]+)"')


def svg(figure: Figure, sig: Significance, prefix: str) -> str:
    """The figure as an inline SVG element: its ids prefixed (one page holds many figures),
    sized by its container (width 100 %)."""
    with style():
        fig = render(figure, sig)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    ids = set(_ID.findall(text))
    for old in sorted(ids, key=len, reverse=True):
        new = f"{prefix}-{old}"
        text = text.replace(f'id="{old}"', f'id="{new}"').replace(f"#{old})", f"#{new})") \
            .replace(f'href="#{old}"', f'href="#{new}"')
    text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"',
                  r'<svg\1 width="100%" preserveAspectRatio="xMidYMid meet"', text, count=1)
    return text


def check_output(path: str, flag: str, formats: Sequence[str] = (),
                 inputs: Sequence[str | os.PathLike[str]] = (), force: bool = False) -> Path:
    """An output file that can be written (one line, exit 2 otherwise): not empty, not a
    directory, none of ``inputs``, not an existing file unless ``force``, in an existing,
    writable directory, with one of ``formats``' suffixes if given."""
    if not path.strip():
        raise UsageError(f"{flag}: the file name is empty")
    target = Path(path)
    check_output_kind(path, flag, "figure" + formats[0] if formats else "report.html")
    if target.exists():
        for source in inputs:
            if Path(source).exists() and os.path.samefile(source, target):
                raise UsageError(f"{flag} {path}: that is an input file ({source}); give "
                                 "another name")
    if formats and target.suffix.lower() not in formats:
        raise UsageError(f"{flag} {path}: give a file ending in "
                         f"{', '.join(formats[:-1])} or {formats[-1]}")
    if target.exists():
        if not force:
            raise UsageError(f"{flag} {path}: the file exists ({describe_existing(target)}); "
                             "use --force to replace it, or another name")
    parent = target.resolve().parent
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: the directory {parent} does not exist")
    try:
        if target.exists():
            with open(target, "ab"):
                pass
        else:
            probe = parent / f".beff-write-test-{os.getpid()}"
            probe.touch()
            probe.unlink()
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write there ({exc.strerror or exc})") \
            from None
    return target


def save(figures: Sequence[Figure], path: Path, sig: Significance) -> None:
    """``beff plot``: the figures as panels of one image (PNG, SVG or PDF by the suffix)."""
    n = len(figures)
    cols = 1 if n == 1 else 2
    rows = (n + cols - 1) // cols
    width, height = _size(figures[0])
    with style():
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure as MplFigure

        fig = MplFigure(figsize=(width * cols * 0.85, height * rows * 0.85),
                        layout="constrained")
        FigureCanvasAgg(fig)  # its texts measured (titles fitted) as they will print
        subs: list[Any] = [fig] if n == 1 else list(
            np.asarray(fig.subfigures(rows, cols, squeeze=False)).ravel())
        for sub, figure in zip(subs, figures, strict=False):
            draw(sub, figure, sig)
        # Written beside it and renamed: a failed or killed write leaves no half image.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            fig.savefig(tmp, format=path.suffix.lower().lstrip("."), dpi=200)
            os.replace(tmp, path)
        except OSError as exc:
            raise UsageError(f"-o {path}: cannot write: {exc.strerror or exc}") from None
        finally:
            tmp.unlink(missing_ok=True)
