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
from pathlib import Path
from typing import Any

import numpy as np

from beff.core.config import check_output_kind, describe_existing
from beff.core.errors import UsageError
from beff.render import compare
from beff.render.charts import BAR, HEATMAP, Figure, Matrix, Series
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
MARKERS = ("o", "s", "^", "D", "v", "P")
LINESTYLES = ("-", "--", ":", "-.")
HEAT_BAD = "#e0e0e0"  # a heatmap's cells without a value
HEAT_MARK = "#d62728"  # the outline of its marked cells
HEAT_VALUES_MAX = 12  # cells show their values up to this many rows and columns
MAX_SIZE_TICKS = 8  # labelled ticks of a byte axis at most (size_ticks)
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
def _style() -> Iterator[Any]:
    import matplotlib

    matplotlib.use("Agg")
    style: Any = STYLE
    with matplotlib.rc_context(style):
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


def _draw_lines(ax: Any, figure: Figure) -> Drawn:
    """The runs' series; returns what the ratio panel needs (run, series, colour, marker,
    line style)."""
    chart = figure.chart
    drawn = []
    colour = 0
    marked_any = False
    for k, runs in enumerate(figure.runs):
        for s in runs or ():
            ok = _finite(s.x, s.y) & (s.y > 0 if chart.ylog else True)
            if chart.xlog:
                ok &= s.x >= 0
            if not ok.any():
                continue
            c = f"C{colour % 10}"
            colour += 1
            m, ls = MARKERS[k % len(MARKERS)], LINESTYLES[k % len(LINESTYLES)]
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
                        markerfacecolor="none", markeredgecolor="#d62728",
                        markeredgewidth=1.2)
                marked_any = True
            drawn.append((k, s, c, m, ls))
    if marked_any:
        ax.plot([], [], linestyle="none", marker="o", markersize=9, markerfacecolor="none",
                markeredgecolor="#d62728", label=chart.marked_label)
    return drawn


def _draw_bars(ax: Any, figure: Figure) -> Drawn:
    chart = figure.chart
    bars = [(k, s) for k, runs in enumerate(figure.runs) for s in runs or ()]
    width = 0.8 / max(1, len(bars))
    drawn = []
    for i, (k, s) in enumerate(bars):
        c = f"C{i % 10}"
        ax.bar(s.x + (i - (len(bars) - 1) / 2) * width, np.nan_to_num(s.y), width=width,
               color=c, label=_label(figure, k, s), hatch=("", "//", "..", "xx")[k % 4],
               edgecolor="white" if k == 0 else "#333333", linewidth=0.4)
        drawn.append((k, s, c, MARKERS[k % len(MARKERS)], LINESTYLES[k % len(LINESTYLES)]))
    if len(bars) == 1 and len(chart.categories) <= 8:
        ax.bar_label(ax.containers[0], fmt="%.4g", fontsize=7, padding=1)
    _categories(ax, chart.categories)
    ax.grid(axis="x", visible=False)
    return drawn


def _categories(ax: Any, names: Sequence[str]) -> None:
    """A bar chart's category ticks: few wrap onto lines, many turn sideways."""
    import textwrap

    n = len(names)
    ax.set_xticks(np.arange(n))
    if n <= 4:
        ax.set_xticklabels(["\n".join(textwrap.wrap(c, 16)) or c for c in names], fontsize=8)
    else:
        ax.set_xticklabels(names, rotation=60, ha="right", fontsize=7 if n > 12 else 8)


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


def _ratio(ax: Any, figure: Figure, drawn: Drawn, sig: Significance) -> None:
    """Each later run's series over the first run's series of the same label, at the x both
    have; significant differences (beff compare's noise check) drawn as filled red dots."""
    chart = figure.chart
    first = min(k for k, *_ in drawn)
    base = {s.label: s for k, s, *_ in drawn if k == first}
    shown = False
    for k, s, c, m, ls in drawn:
        ref = base.get(s.label)
        if k == first or ref is None:
            continue
        common, i, j = np.intersect1d(s.x, ref.x, return_indices=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = s.y[i] / ref.y[j]
        ok = np.isfinite(r) & (r > 0)
        if not ok.any():
            continue
        if chart.kind == BAR:
            ax.plot(common[ok], r[ok], color=c, marker=m, linestyle="none")
        else:
            ax.plot(common[ok], r[ok], color=c, marker=m, linestyle=ls)
        if s.compare_key is not None and k in sig:
            bench, nprocs, *group = s.compare_key
            at = group[0] if group else None
            hit = np.array([sig[k].get((bench, nprocs, int(x), at), False)
                            for x in common]) & ok
            if hit.any():
                ax.plot(common[hit], r[hit], linestyle="none", marker="o", markersize=7,
                        color="#d62728", zorder=5,
                        label=SIGNIFICANT if not shown else None)
                shown = True
    ax.axhline(1.0, color="#555555", linewidth=0.8)
    ax.set_ylabel("ratio")
    what = f"each run / {figure.labels[first]}"
    if chart.higher_is_better is not None:
        what += "; above 1: " + ("better" if chart.higher_is_better else "slower")
    ax.set_title(what, fontsize=7, loc="right", pad=2)
    if shown:
        ax.legend(loc="best")


def number_label(v: float, pos: object = None) -> str:
    """Tick labels of a log axis: plain numbers (0.5, 2, 300, 2500), powers of ten beyond."""
    if v <= 0 or not np.isfinite(v):
        return ""
    e = float(np.log10(v))
    if abs(e - round(e)) < 1e-9 and (v >= 1e4 or v < 1e-2):
        return f"$10^{{{round(e)}}}$"
    return f"{v:.0f}" if v >= 1000 else f"{v:.4g}"


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
        ax.yaxis.set_major_formatter(FuncFormatter(number_label))
        lo, hi = ax.get_ylim()
        few = lo > 0 and np.log10(hi / lo) < 1.5
        ax.yaxis.set_minor_formatter(FuncFormatter(number_label) if few else NullFormatter())
    if chart.xticks:
        ax.set_xticks([p for p, _ in chart.xticks])
        ax.set_xticklabels([t for _, t in chart.xticks])


def draw(target: Any, figure: Figure, sig: Significance) -> None:
    """Draw ``figure`` into a matplotlib Figure or SubFigure: the chart, and with several
    runs a ratio panel under it."""
    chart = figure.chart
    if chart.kind == HEATMAP:
        ax = target.subplots(1, 1)
        _draw_heatmap(target, ax, figure)
        title = chart.title
        if figure.run is not None and len(figure.labels) > 1:
            title = f"{figure.labels[figure.run]}: {title}"  # one run per heatmap
        ax.set_title(title)
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
    ax.set_title(chart.title)
    ax.set_ylabel(chart.ylabel)
    if not drawn:
        ax.text(0.5, 0.5, "nothing measured", transform=ax.transAxes, ha="center",
                va="center", color="#777777")
    elif len(drawn) > 1 or chart.marked_label in ax.get_legend_handles_labels()[1]:
        ax.legend(loc="best", ncol=2 if len(drawn) > 6 else 1, frameon=True, framealpha=0.85,
                  edgecolor="none")
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
    if hasattr(target, "align_ylabels"):
        target.align_ylabels()


def _size(figure: Figure) -> tuple[float, float]:
    if figure.chart.kind == HEATMAP:
        return (6.4, 5.6) if figure.chart.matrix is not None else (6.4, 1.6)
    several = sum(r is not None for r in figure.runs) > 1
    tall = figure.chart.kind == BAR and len(figure.chart.categories) > 4
    return 6.4, 4.0 + (1.4 if several else 0.0) + (0.8 if tall else 0.0)


_ID = re.compile(r'id="([^"]+)"')


def svg(figure: Figure, sig: Significance, prefix: str) -> str:
    """The figure as an inline SVG element: its ids prefixed (one page holds many figures),
    sized by its container (width 100 %)."""
    with _style():
        from matplotlib.figure import Figure as MplFigure

        fig = MplFigure(figsize=_size(figure), layout="constrained")
        draw(fig, figure, sig)
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
    with _style():
        from matplotlib.figure import Figure as MplFigure

        fig = MplFigure(figsize=(width * cols * 0.85, height * rows * 0.85),
                        layout="constrained")
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
