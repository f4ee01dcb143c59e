"""Every kind of figure ``beff report`` and ``beff plot`` draw, checked from matplotlib's
artists as a reviewer would look at them (issue 35): texts inside the figure and not on
top of each other, tick labels that read differently, a legend wherever a panel has more
than one series (and on every line chart), a logarithmic ratio panel, colours that never
mean two things (no series takes the significance marks' or the unstable marks' colour),
bars instead of a lone dot, captions that describe only what is drawn, and headline tables
and run headers in words.

The figures come from the golden files (one run, and overlays with significance marks),
imported IMB texts (MPI-1, MT, P2P), runs of one batch per size (as IMB-MT and IMB-P2P
measure), b_eff 3.6's protocol at 2 processes (36 pattern bars) and a synthetic map."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from beff.api import load
from beff.render import plot, report
from beff.render.charts import BAR, HEATMAP, LINE, Figure, collect
from beff.results import imported
from beff.results.model import Measurement, RunRecord
from tests.unit.test_mt import measurement as mt_measurement
from tests.unit.test_report import _batches

matplotlib = pytest.importorskip("matplotlib")

from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.text import Text  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
IMB, BEFF, BEFFIO = (DATA / f"golden-schema-v3-{k}.h5" for k in ("imb", "beff", "beffio"))
JUNO = DATA / "real-logs" / "imb-4.1-mpi1-all-openmpi1.6-np2-aarch64-juno.txt"
MT_SAMPLE = DATA / "imb-samples" / "format-sample-mt-np2.txt"
P2P_SAMPLE = DATA / "imb-samples" / "format-sample-p2p-np2.txt"
BEFF_PROT = DATA / "beff-3.6-reference" / "np2-run1" / "b_eff.prot"  # 6 rings, 30 random


def scaled(record: RunRecord, factor: float, seed: int) -> RunRecord:
    """The IMB golden run with 10 batches per size, PingPong's size 4 ``factor`` times
    longer in its batches and in its times (the figure's line)."""
    record = _batches(record, factor, seed)
    out: list[Any] = []
    for m in record.results:
        if isinstance(m, Measurement) and m.benchmark == "PingPong":
            times = m.times.copy()
            times[3] *= factor
            m = dataclasses.replace(m, times=times)
        out.append(m)
    return dataclasses.replace(record, results=out)


def one_batch(record: RunRecord) -> RunRecord:
    """The IMB golden run as IMB-MT and IMB-P2P measure: one timed batch per size."""
    out: list[Any] = [dataclasses.replace(m, samples=m.samples[..., :1],
                                          batch_iters=m.batch_iters[..., :1],
                                          more_samples={k: v[..., :1] for k, v in
                                                        m.more_samples.items()})
                      if isinstance(m, Measurement) else m for m in record.results]
    return dataclasses.replace(record, results=out)


def mt_run() -> RunRecord:
    """An IMB-MT run of one batch per size: PingPongMT over three sizes, BarrierMT."""
    pingpong = mt_measurement("PingPongMT", [[10.1, 10.7], [12.9, 13.0], [40.0, 41.0]],
                              [1, 64, 4096], 1, "parallel_transfer",
                              ("bytes", "repetitions", "t", "mbytes_per_sec"), bw=2.0)
    barrier = mt_measurement("BarrierMT", [[34.15, 34.19]], [0], 1, "sync",
                             ("repetitions", "t_min", "t_max", "t_avg"))
    return RunRecord(attrs={"suite": "mt", "nprocs": 2}, results=[pingpong, barrier])


def map_charts() -> list[Any]:
    from tests.unit.test_map_heatmap import charts, derived

    return list(charts(derived()).values())


Case = tuple[str, Figure, plot.Significance]


def figures(records: list[RunRecord], labels: list[str], only: tuple[str, ...] = ()
            ) -> Iterator[Case]:
    sig = plot.significance(records) if len(records) > 1 else {}
    for f in report.figures_of(records, labels):
        if not only or f.chart.id in only:
            yield f"{'+'.join(labels)}:{f.chart.id}", f, sig


def cases() -> list[Case]:
    imb, beff, beffio = load(IMB), load(BEFF), load(BEFFIO)
    juno = imported.read(JUNO)
    mt_sample, p2p_sample = imported.read(MT_SAMPLE), imported.read(P2P_SAMPLE)
    prot = imported.read(BEFF_PROT)
    pingpong = ("mpi1/PingPong/time", "mpi1/PingPong/bandwidth")
    out = [*figures([imb], ["imb"]), *figures([beff], ["beff"]),
           *figures([beffio], ["beffio"]),
           # four runs, one much faster (a ratio of 0.02) and one slower, with marks
           *figures([scaled(imb, 1.0, 1), scaled(imb, 1.5, 2), scaled(imb, 0.02, 3),
                     scaled(imb, 1.0, 4)], ["base", "slower", "much-faster", "same"],
                    pingpong),
           *figures([beff, beff], ["beff-a", "beff-b"]),
           *figures([beffio, beffio], ["beffio-a", "beffio-b"], ("b_eff_io/n1/rewrite",)),
           *figures([juno], ["juno"], (*pingpong, "mpi1/Barrier/time")),
           *figures([imb, juno], ["golden", "juno"], pingpong),  # ratios about 100
           *figures([mt_sample], ["mt-sample"]), *figures([p2p_sample], ["p2p-sample"]),
           *figures([one_batch(imb)], ["one-batch"]), *figures([mt_run()], ["mt"]),
           *figures([mt_run(), mt_run()], ["mt-a", "mt-b"], ("mt/BarrierMT/time",)),
           *figures([prot], ["np2"]), *figures([prot, prot], ["np2", "np2-again"],
                                               ("b_eff/patterns",))]
    maps = map_charts()
    labels = ["a-map-run-with-a-long-name-on-cluster-one", "second-map-run-on-cluster-two"]
    out += [(f"map:{f.chart.id}", f, {}) for f in collect([maps, maps], labels)]
    return out


@pytest.fixture(scope="module")
def drawn() -> list[tuple[str, Figure, plot.Significance, Any]]:
    out = []
    for name, figure, sig in cases():
        fig = plot.render(figure, sig)
        with plot.style():
            fig.canvas.draw()
        out.append((name, figure, sig, fig))
    return out


def test_every_kind_of_figure_is_drawn(drawn: list[Any]) -> None:
    kinds = {f.chart.kind for _, f, _, _ in drawn}
    assert kinds == {LINE, BAR, HEATMAP}
    assert sum(len([r for r in f.runs if r is not None]) > 1 for _, f, _, _ in drawn) >= 5


# ----------------------------------------------------------------------------- helpers
def renderer(fig: Any) -> Any:
    return fig.canvas.get_renderer()


def shown_ticks(ax: Any, axis: str) -> list[Text]:
    """The tick labels an axis shows: non-empty, visible, inside its view."""
    a = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(a.get_view_interval())
    span = (hi - lo) * 1e-9
    return [t for t in a.get_ticklabels(minor=False) + a.get_ticklabels(minor=True)
            if t.get_visible() and t.get_text().strip()
            and lo - span <= t.get_position()[0 if axis == "x" else 1] <= hi + span]


def texts(fig: Any) -> list[Text]:
    """Every text the figure shows: titles, labels, legends, annotations, and the tick
    labels inside the axes' views."""
    ticks = {id(t) for ax in fig.axes for a in (ax.xaxis, ax.yaxis)
             for t in a.get_ticklabels(minor=False) + a.get_ticklabels(minor=True)}
    out = [t for t in fig.findobj(Text)
           if id(t) not in ticks and t.get_visible() and t.get_text().strip()]
    return out + [t for ax in fig.axes for axis in ("x", "y") for t in shown_ticks(ax, axis)]


def overlap(a: Any, b: Any, slack: float = 0.5) -> bool:
    return (a.x0 + slack < b.x1 and b.x0 + slack < a.x1 and a.y0 + slack < b.y1
            and b.y0 + slack < a.y1)


def legend_texts(fig: Any, ax: Any) -> set[str]:
    texts = set()
    for legend in [ax.get_legend(), *fig.legends]:
        if legend is not None:
            texts |= {t.get_text() for t in legend.get_texts()}
    return texts


def main_axes(fig: Any) -> list[Any]:
    """The figure's panels, without colour bars."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


# ----------------------------------------------------------------------------- checks
def test_texts_stay_inside_the_figure(drawn: list[Any]) -> None:
    """Titles (a heatmap's with a long run name before it), labels and legends are not
    cut at the figure's edge."""
    for name, _, _, fig in drawn:
        box = fig.bbox
        for t in texts(fig):
            e = t.get_window_extent(renderer(fig))
            assert e.x0 >= box.x0 - 1 and e.x1 <= box.x1 + 1 and e.y0 >= box.y0 - 1 \
                and e.y1 <= box.y1 + 1, (name, t.get_text(), e, box)


def test_no_labels_collide(drawn: list[Any]) -> None:
    """Tick labels of an axis do not run together (64K128K256K), nor do the y labels of a
    panel and its ratio panel, nor a title and any label."""
    for name, _, _, fig in drawn:
        r = renderer(fig)
        axes = main_axes(fig)
        for ax in fig.axes:
            for axis in ("x", "y"):
                boxes = [(t.get_text(), t.get_window_extent(r)) for t in shown_ticks(ax, axis)]
                for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
                    assert not overlap(a, b), (name, axis, ta, tb)
        ylabels = [(ax.yaxis.label.get_text(), ax.yaxis.label.get_window_extent(r))
                   for ax in axes if ax.yaxis.label.get_text()]
        for (ta, a), (tb, b) in itertools.combinations(ylabels, 2):
            assert not overlap(a, b), (name, ta, tb)
        titles = [t for ax in axes for t in (ax.title, *ax.texts) if t.get_text()]
        labels = [t for ax in axes for t in (*shown_ticks(ax, "x"), *shown_ticks(ax, "y"),
                                            ax.xaxis.label, ax.yaxis.label) if t.get_text()]
        for t in titles:
            for lb in labels:
                assert not overlap(t.get_window_extent(r), lb.get_window_extent(r)), \
                    (name, t.get_text(), lb.get_text())


def test_tick_labels_read_differently(drawn: list[Any]) -> None:
    """No two ticks of an axis say the same (b_eff's 36 pattern bars, a log axis over a
    narrow range)."""
    for name, _, _, fig in drawn:
        for ax in fig.axes:
            for axis in ("x", "y"):
                texts = [t.get_text() for t in shown_ticks(ax, axis)]
                assert len(texts) == len(set(texts)), (name, axis, texts)


def test_every_panel_with_series_has_a_legend(drawn: list[Any]) -> None:
    """A legend names every series of a panel with more than one, and the one line of a
    line chart (b_eff_io's rewrite panels: its pattern type)."""
    for name, figure, _, fig in drawn:
        for ax in main_axes(fig):
            labels = [t for t in ax.get_legend_handles_labels()[1] if not t.startswith("_")]
            lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
            if len(labels) > 1 or (figure.chart.kind == LINE and lines and ax is fig.axes[0]):
                assert set(labels) <= legend_texts(fig, ax), (name, labels)


def test_the_ratio_panel_is_logarithmic(drawn: list[Any]) -> None:
    """A ratio of 0.02 sits as far below 1 as 50 above, not flattened onto 0."""
    checked = 0
    for name, figure, _, fig in drawn:
        several = sum(r is not None for r in figure.runs) > 1
        if figure.chart.kind == HEATMAP or not several:
            continue
        _, rax = main_axes(fig)
        assert rax.get_yscale() == "log", name
        lo, hi = rax.get_ylim()
        ratios = np.concatenate([ln.get_ydata() for ln in rax.get_lines()
                                 if ln.get_marker() not in ("None", "", None, " ")])
        ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
        assert lo < ratios.min() and ratios.max() < hi, name
        assert np.isclose(np.log10(lo), -np.log10(hi)), name  # symmetric about 1
        checked += 1
    assert checked >= 5


def _colour(c: Any) -> str | None:
    if c is None or (isinstance(c, str) and c.lower() == "none"):
        return None
    try:
        return to_hex(c, keep_alpha=False)
    except ValueError:
        return None


def test_no_colour_means_two_things(drawn: list[Any]) -> None:
    """The significance marks and the unstable marks each have a colour no series has; a
    legend's entries look different from each other."""
    marks = 0
    for name, _, _, fig in drawn:
        series: set[str] = set()
        significant: set[str] = set()
        unstable: set[str] = set()
        for ax in main_axes(fig):
            for ln in ax.get_lines():
                face, edge = _colour(ln.get_markerfacecolor()), _colour(ln.get_markeredgecolor())
                if ln.get_label() == plot.SIGNIFICANT or ln.get_marker() == "*":
                    significant |= {c for c in (face, edge, _colour(ln.get_color())) if c}
                elif face is None and ln.get_marker() == "o":  # an open ring: unstable
                    unstable |= {edge} if edge else set()
                elif ln.get_marker() not in ("None", "") or len(ln.get_xdata()) != 2:
                    series.add(_colour(ln.get_color()) or "")  # not the ratio's line at 1
            for container in ax.containers:
                if isinstance(container, BarContainer):
                    series |= {_colour(p.get_facecolor()) or "" for p in container}
        assert not significant & series, (name, significant & series)
        assert not unstable & series, (name, unstable & series)
        assert not significant & unstable, name
        marks += bool(significant)
        for legend in [*(ax.get_legend() for ax in fig.axes), *fig.legends]:
            if legend is None:
                continue
            looks = []
            for h in legend.legend_handles:
                if isinstance(h, Line2D):
                    looks.append(("line", _colour(h.get_color()), h.get_marker(),
                                  h.get_linestyle(), _colour(h.get_markeredgecolor())))
                else:
                    looks.append(("patch", _colour(h.get_facecolor()), h.get_hatch(),
                                  _colour(h.get_edgecolor()), None))
            assert len(looks) == len(set(looks)), (name, looks)
    assert marks >= 2  # the significance marks were drawn, and checked


def test_a_one_point_series_is_a_bar(drawn: list[Any]) -> None:
    """MT's Barrier at one process count is a bar over "2 processes", not one dot on an
    axis from 1.9 to 2.1 processes."""
    bars = 0
    for name, figure, _, fig in drawn:
        ax = fig.axes[0]
        if figure.chart.kind != LINE or figure.chart.xlog:
            continue
        points = [len(ln.get_xdata()) for ln in ax.get_lines()
                  if not ln.get_label().startswith("_")]
        assert not points or max(points) > 1 or ax.containers, name
        if "Barrier" in figure.chart.id:
            assert [c for c in ax.containers if isinstance(c, BarContainer)], name
            ticks = [t.get_text() for t in shown_ticks(main_axes(fig)[-1], "x")]
            assert ticks == ["2 processes"], (name, ticks)
            bars += 1
    assert bars >= 3


def test_beff_pattern_bars_are_told_apart() -> None:
    """36 bars (6 rings, 30 random at 2 processes): a name each, a colour per kind."""
    chart = next(c for c in report.charts_of(imported.read(BEFF_PROT))
                 if c.id == "b_eff/patterns")
    assert len(chart.categories) == 36 == len(set(chart.categories))
    assert [s.label for s in chart.series] == ["ring patterns", "random patterns"]
    assert [len(s.x) for s in chart.series] == [6, 30]


def test_captions_describe_what_is_drawn(drawn: list[Any]) -> None:
    """A band, red circles and black stars are named in a caption only where drawn: runs of
    one batch per size (IMB-MT, IMB-P2P) have no band and no marks."""
    for name, figure, sig, fig in drawn:
        if figure.chart.kind == HEATMAP:
            continue
        ax = fig.axes[0]
        text = report.caption(figure, ["k"] * len(figure.runs), sig)
        bands = [c for c in ax.collections if c.get_paths()] + \
            [c for c in ax.containers if not isinstance(c, BarContainer)]
        rings = [ln for ln in ax.get_lines() if ln.get_marker() == "o"
                 and _colour(ln.get_markerfacecolor()) is None and len(ln.get_xdata())]
        stars = [ln for a in fig.axes for ln in a.get_lines() if ln.get_marker() == "*"]
        assert ("band" in text and "no band" not in text) == bool(bands), (name, text)
        assert ("red circles" in text) == bool(rings), (name, text)
        assert ("black stars" in text) == bool(stars), (name, text)
        assert "open markers" not in text and "red dots" not in text
    one = [f for name, f, _, _ in drawn if name.startswith(("mt:", "one-batch:"))]
    assert one and all("one timed batch per size" in f.chart.note for f in one)


def test_headline_tables_and_run_headers_in_words(tmp_path: Path) -> None:
    records = [load(BEFF), load(BEFFIO)]
    page = report.headline(records, ["beff", "beffio"])
    for words in ("b_eff at Lmax [MB/s]", "ping-pong latency, half round trip [µs]",
                  "b_eff_io [MB/s]", "2 processes: write, weighted average [MB/s]"):
        assert f"<td>{words}</td>" in page, words
    assert "_MBps" not in page and "_us<" not in page
    juno = imported.read(JUNO)
    head = report.header(juno, JUNO, "juno")
    assert "? node" not in head and "<th>nodes</th><td>not recorded</td>" in head
    assert "timed loops: timed loops" not in report.header(load(IMB), IMB, "imb")
