"""Figures and tables of imported IMB text (``beff import``; no MPI): every table gets a
figure, a table that prints only ``t[usec]`` draws that t, labelled as IMB's, ``-multi 1``
tables show every group, captions say nothing of batches an imported text does not have, and
the byte axis' labels do not run together."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from rich.console import Console

from beff.bench.charts import measurement_charts
from beff.render import charts, plot, report, view
from beff.results import imported, stats
from beff.results.archive import load
from beff.results.model import OK, Measurement, RunRecord
from tests.mpirun import beff

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLES = DATA / "imb-samples"
LOGS = sorted(SAMPLES.glob("*.txt")) + sorted((DATA / "imported").glob("*.txt"))
PT2PT = SAMPLES / "mpi1-np2-pt2pt-time1-quiet.txt"
MULTI = SAMPLES / "format-sample-mpi1-np4-multi1.txt"


def imported_file(src: Path, tmp_path: Path) -> tuple[Path, RunRecord]:
    """``src`` imported into a result file, and that file read back."""
    out = tmp_path / (src.stem + ".h5")
    imported.write(imported.read(src), out)
    return out, load(out)


def printed_rows(text: str, name: str) -> list[list[float]]:
    """The rows of benchmark ``name``'s table in IMB's text, as numbers (read here, not by
    the importer; time-out rows left out)."""
    lines = text.split(f"# Benchmarking {name} \n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if "#repetitions" in line) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("#"))
    return [[float(x) for x in line.split()] for line in lines[start:end]
            if line.strip() and "time-out" not in line]


@pytest.mark.parametrize("src", LOGS, ids=[p.stem for p in LOGS])
def test_every_imported_table_has_a_figure_with_its_values(src: Path, tmp_path: Path) -> None:
    _, record = imported_file(src, tmp_path)
    drawn = {c.id: c for c in report.charts_of(record)}
    for m in record.measurements:
        if m.unsupported or OK not in m.status:
            continue
        mine = [c for c in measurement_charts(m) if c.id in drawn]
        points = sum(int(np.isfinite(s.y).sum()) for c in mine for s in c.series)
        assert mine and points, (m.key, sorted(m.printed))
        for c in mine:  # no batches behind an imported text: no band of them, no marks
            assert "batch" not in c.note and c.note.startswith("imported")
            assert all(s.marked is None and s.compare_key is None for s in c.series)


def test_the_report_page_has_a_figure_for_every_table(tmp_path: Path) -> None:
    paths, records = [], []
    for src in (PT2PT, MULTI):
        path, record = imported_file(src, tmp_path)
        paths.append(path)
        records.append(record)
    page = report.build(records, paths)
    figures = re.findall(r'<figure class="chart" id="figure-\d+" data-chart="([^"]+)">', page)
    per_benchmark = {name: sum(f.split("/")[1] == name for f in figures)
                     for name in ("PingPong", "PingPing", "Sendrecv", "Exchange", "Uniband",
                                  "Biband", "Allreduce", "Barrier")}
    assert per_benchmark == {"PingPong": 2, "PingPing": 2, "Sendrecv": 2, "Exchange": 2,
                             "Uniband": 2, "Biband": 2, "Allreduce": 1, "Barrier": 1}
    assert page.count('<figure class="chart"') == len(figures) == 14
    captions = re.findall(r"<figcaption>([^<]*)</figcaption>", page)
    assert captions and all("imported" in c for c in captions)
    assert not any("batch" in c or "bootstrap" in c or "red dots" in c for c in captions)
    assert "t [usec] (IMB's t)" in page  # the y axis of t-only tables, in the SVG's text


def test_plot_of_pingpong_draws_the_t_the_log_printed(tmp_path: Path) -> None:
    path, _ = imported_file(PT2PT, tmp_path)
    rows = printed_rows(PT2PT.read_text(), "PingPong")  # bytes, repetitions, t, Mbytes/sec
    assert len(rows) == 24
    targets: list[Any] = []
    real = plot.draw

    def spy(target: Any, figure: charts.Figure, sig: plot.Significance) -> None:
        targets.append(target)
        real(target, figure, sig)

    png = tmp_path / "pingpong.png"
    with mock.patch.object(plot, "draw", spy):
        r = beff("plot", str(path), "-b", "PingPong", "-o", str(png))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes().startswith(b"\x89PNG")
    time_ax, bw_ax = (t.axes[0] for t in targets)
    assert time_ax.get_ylabel() == "t [usec] (IMB's t)"
    (line,) = [ln for ln in time_ax.get_lines() if ln.get_label() == "np=2"]
    assert line.get_xdata().tolist() == [row[0] for row in rows]
    assert line.get_ydata().tolist() == [row[2] for row in rows]
    (bw,) = [ln for ln in bw_ax.get_lines() if ln.get_label() == "np=2"]
    assert bw.get_ydata().tolist() == [row[3] for row in rows if row[3] > 0]  # log axis


def test_multi_mode_tables_and_figures_show_every_group(tmp_path: Path) -> None:
    _, record = imported_file(MULTI, tmp_path)
    rows = printed_rows(MULTI.read_text(), "Multi-PingPong")  # group, bytes, reps, t, MB/s
    console = Console(record=True, width=200)
    view.table(record, console)
    text = console.export_text()
    table = text.split("MPI1 PingPong — 2 processes × 2 groups", 1)[1].split("MPI1 ", 1)[0]
    shown = [line.split() for line in table.splitlines()
             if re.match(r"^\s+[01]\s+\d+\s+20\s", line)]
    assert [[float(x) for x in row[:4]] for row in shown] == [row[:4] for row in rows]
    assert re.search(r"group\s+bytes\s+reps\s+t \[µs\]\s+MB/s", table)
    assert "t_min" not in table  # IMB printed t only
    biband = text.split("MPI1 Biband", 1)[1].split("MPI1 ", 1)[0]
    assert re.search(r"\ball\s+2\s+time-out", biband)  # once for every group
    figures = {f.chart.id: f for f in report.figures_of([record], ["multi"])}
    series = {cid: f.runs[0] or () for cid, f in figures.items()}  # merged over results
    time = series["mpi1/PingPong/time"]
    assert [s.label for s in time] == ["np=2, group 0", "np=2, group 1"]
    for g, s in enumerate(time):
        assert s.y.tolist() == [row[3] for row in rows if row[0] == g]
    assert figures["mpi1/PingPong/time"].chart.ylabel == "t [usec] (IMB's t)"
    allreduce = series["mpi1/Allreduce/time"]
    assert [s.label for s in allreduce] == ["np=2, group 0", "np=2, group 1", "np=4"]
    g1 = allreduce[1]  # t_avg, with t_min to t_max as its band: 1.23, 18.51, 9.87
    assert g1.lo is not None and g1.hi is not None
    assert (g1.y[-1], g1.lo[-1], g1.hi[-1]) == (9.87, 1.23, 18.51)
    assert [s.label for s in series["mpi1/Barrier/time"]] == [
        "Barrier, group 0", "Barrier, group 1", "Barrier"]
    assert [s.label for s in series["mpi1/Uniband/msgrate"]] == [
        "np=2, group 0", "np=2, group 1", "np=4"]


def _multi_measured(shift: float) -> Measurement:
    """A measured ``-multi 1`` PingPong: 2 groups of 2 ranks, group 1 twice as slow, three
    batches per size (times ``shift``)."""
    sizes = np.array([1, 2, 4])
    per_iter = np.array([1.0, 1.0, 2.0, 2.0]) * 1e-6 * shift  # seconds, rank by rank
    iters = np.full((3, 4, 3), 100, dtype=np.int64)
    samples = np.broadcast_to(per_iter[None, :, None] * 100, (3, 4, 3)).copy()
    return Measurement(
        suite="mpi1", benchmark="PingPong", kind="single_transfer", nprocs=2, ngroups=2,
        multi=1, idle=0, sizes=sizes, repetitions=np.full(3, 300), status=[OK] * 3,
        times=np.broadcast_to(per_iter, (3, 4)).copy(), group=np.array([0, 0, 1, 1]),
        world_ranks=np.arange(4), samples=samples, batch_iters=iters)


def test_a_measured_multi_mode_run_draws_a_series_per_group() -> None:
    m = _multi_measured(1.0)
    time, _ = measurement_charts(m)
    assert [s.label for s in time.series] == ["np=2, group 0", "np=2, group 1"]
    assert [s.compare_key for s in time.series] == [("PingPong", 2, 0), ("PingPong", 2, 1)]
    for g, s in enumerate(time.series):
        np.testing.assert_allclose(s.y, stats.summarize(m, g).t_avg)
    assert time.series[1].y[0] == pytest.approx(2 * time.series[0].y[0])
    assert "batches" in time.note  # a measured run has them


def test_overlaid_measured_and_imported_runs_say_which_y_is_which(tmp_path: Path) -> None:
    path, record = imported_file(PT2PT, tmp_path)
    golden = DATA / "golden-schema-v3-imb.h5"
    figures = report.figures_of([load(golden), record], ["beff", "imb"])
    (time,) = [f for f in figures if f.chart.id == "mpi1/PingPong/time"]
    assert all(r is not None for r in time.runs)
    assert "y: time per iteration, mean over ranks [µs] for beff; t [usec] (IMB's t) " \
           "for imb" in time.chart.note
    assert "beff: band: 10-90 %" in time.chart.note and "imb: imported" in time.chart.note
    page = report.build([load(golden), record], [golden, path])
    pingpong = page[page.index('data-chart="mpi1/PingPong/time"'):]
    caption = pingpong[pingpong.index("<figcaption>"):pingpong.index("</figcaption>")]
    assert "lower panel" in caption and "red dots" not in caption  # imb has no batches


@pytest.mark.parametrize("sizes, labels", [
    ([0, *(1 << k for k in range(23))], ["0", "1", "16", "256", "4K", "64K", "1M"]),
    ([1 << k for k in range(16, 23)], ["64K", "128K", "256K", "512K", "1M", "2M", "4M"]),
    ([0, 1, 2, 4], ["0", "1", "2", "4"]),
    ([1 << k for k in range(31)], ["1", "16", "256", "4K", "64K", "1M", "16M", "256M"]),
])
def test_byte_axis_ticks_are_thinned(sizes: list[int], labels: list[str]) -> None:
    major, minor = plot.size_ticks(np.array(sizes, dtype=float))
    assert [plot.size_label(v) for v in major] == labels
    assert len(major) <= plot.MAX_SIZE_TICKS
    assert sorted(major + minor) == sorted(float(s) for s in set(sizes))


def test_size_labels_of_a_drawn_figure_do_not_overlap(tmp_path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    _, record = imported_file(PT2PT, tmp_path)
    (figure,) = [f for f in report.figures_of([record], ["imb"])
                 if f.chart.id == "mpi1/Sendrecv/time"]  # 0 B to 4 MiB: 24 sizes
    fig = MplFigure(figsize=(5.4, 3.4), layout="constrained")
    canvas = FigureCanvasAgg(fig)
    plot.draw(fig, figure, {})
    canvas.draw()
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    shown = [t for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]
    assert [t.get_text() for t in shown] == ["0", "1", "16", "256", "4K", "64K", "1M"]
    boxes = sorted((b.x0, b.x1) for b in (t.get_window_extent(canvas.get_renderer())
                                          for t in shown))
    assert all(left[1] < right[0] for left, right in zip(boxes, boxes[1:], strict=False))
