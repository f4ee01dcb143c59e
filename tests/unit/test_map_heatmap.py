"""``beff map``'s heatmaps: the charts its view declares from a synthetic record (the
matrices, the node names, the named outliers outlined), drawn to SVG (one pixel per cell,
a colour bar with its unit), on a page with several runs (side by side, no ratio panel),
and the page of a map too large for stored matrices (it says why there is no heatmap)."""

from __future__ import annotations

import base64
import dataclasses
import io
import re

import numpy as np
import pytest

from beff.netmap.outliers import ACROSS, BANDWIDTH, LATENCY, WITHIN, Finding
from beff.netmap.record import MATRIX_MAX, MapRecord, derive
from beff.netmap.view import VIEW
from beff.render import plot, report
from beff.render.charts import HEATMAP, Chart, Figure, Matrix, collect
from beff.results.model import RunRecord
from tests.unit.test_map_record import SLOW_SENDER, synthetic

IDS = ["map/recv_bw", "map/send_bw", "map/latency", "map/nodes"]


def derived(rec: MapRecord | None = None) -> MapRecord:
    rec = synthetic() if rec is None else rec
    derive(rec)
    return rec


def charts(rec: MapRecord) -> dict[str, Chart]:
    return {c.id: c for c in VIEW.charts(rec, RunRecord(attrs={"suite": "map"},
                                                         results=[rec]))}


def images(svg: str) -> list[tuple[float, float, np.ndarray]]:
    """The SVG's embedded images: (width, height, RGB pixels)."""
    from matplotlib.image import imread

    out = []
    for tag in re.findall(r"<image [^>]*>", svg):
        w, h = (float(re.search(rf'\b{k}="([\d.]+)"', tag).group(1))  # type: ignore[union-attr]
                for k in ("width", "height"))
        data = re.search(r'base64,([^"]+)"', tag).group(1)  # type: ignore[union-attr]
        pixels = imread(io.BytesIO(base64.b64decode(data)), format="png")[..., :3]
        out.append((w, h, pixels))
    return out


def draw(chart: Chart) -> str:
    return plot.svg(Figure(chart, ((),), ("run",), run=0), {}, "t")


def test_the_view_declares_the_three_matrices_with_the_slow_node_marked() -> None:
    rec = derived()
    by_id = charts(rec)
    assert list(by_id) == IDS
    recv, send, lat = by_id["map/recv_bw"], by_id["map/send_bw"], by_id["map/latency"]
    assert all(c.kind == HEATMAP and c.section == "beff map" for c in (recv, send, lat))
    assert (recv.ylabel, recv.xlabel) == ("sender", "receiver")  # rows: the senders
    assert (lat.ylabel, lat.xlabel) == ("pinging", "answering")
    assert recv.higher_is_better and send.higher_is_better and lat.higher_is_better is False
    assert recv.matrix is not None and send.matrix is not None and lat.matrix is not None
    assert recv.matrix.rows == recv.matrix.cols == tuple(rec.hosts)
    assert rec.recv_bw is not None and rec.latency is not None
    np.testing.assert_allclose(recv.matrix.values, rec.recv_bw / 1e6)
    np.testing.assert_allclose(lat.matrix.values, rec.latency * 1e6)
    assert np.allclose(recv.matrix.values[SLOW_SENDER, [0, 1, 3]], 50.0)
    assert "MB/s" in recv.matrix.unit and "µs" in lat.matrix.unit
    # hostC sends slowly: its whole row is outlined, on the receive bandwidth only
    assert recv.matrix.marked_rows == (SLOW_SENDER,) and recv.matrix.marked_cols == ()
    assert recv.matrix.marked is not None and not recv.matrix.marked.any()
    assert "node hostC (its row)" in recv.note
    for other in (send, lat):
        assert other.matrix is not None and other.matrix.marked_rows == ()
        assert other.matrix.marked is not None and not other.matrix.marked.any()
    assert "no outlier named by latency" in lat.note
    assert recv.matrix.label_every == 1


def test_a_heatmap_is_drawn_cell_by_cell_with_a_colour_bar() -> None:
    rec = derived()
    svg = draw(charts(rec)["map/recv_bw"])
    (cells,) = [(w, h, px) for w, h, px in images(svg) if (w, h) == (4, 4)]
    px = cells[2]
    assert px.shape == (4, 4, 3)
    import matplotlib

    low, high = (np.array(matplotlib.colormaps["viridis"](v)[:3]) for v in (0.0, 1.0))
    grey = np.array(matplotlib.colors.to_rgb(plot.HEAT_BAD))
    for j in (0, 1, 3):  # hostC's row: the low end of the scale (dark)
        assert np.abs(px[SLOW_SENDER, j] - low).max() < 0.02, px[SLOW_SENDER]
    assert np.abs(px[3, 2] - high).max() < 0.02  # hostD -> hostC: the best pair
    for i in range(4):  # the diagonal: no pair
        assert np.abs(px[i, i] - grey).max() < 0.02
    assert "receive bandwidth [MB/s, 10^6 B/s]" in svg  # the colour bar's label
    assert ">1000<" in svg and ">100<" in svg  # a log scale: 50 to 1030 MB/s
    assert svg.count(">50.0<") == 3  # the values in the cells of a small matrix
    assert plot.HEAT_MARK in svg and "named outlier" in svg  # hostC's row outlined
    for host in rec.hosts:
        assert f">{host}<" in svg
    assert ">sender<" in svg and ">receiver<" in svg


def test_links_and_nodes_within_a_node_mark_their_cells() -> None:
    rec = synthetic()
    rec.per_node, rec.node = 2, np.array([0, 0, 1, 1])
    derive(rec)

    def found(**kw: object) -> dict[str, object]:
        base = {"kind": "node", "figure": BANDWIDTH, "side": "receive", "rank": 1, "peer": -1,
                "value": 1.0, "reference": 2.0, "ratio": 2.0, "scope": WITHIN}
        return Finding(**{**base, **kw}).to_json()  # type: ignore[arg-type]

    rec.outliers = [found(), found(kind="link", side="link", rank=3, peer=0, scope=ACROSS),
                    found(figure=LATENCY, side="both", rank=2, scope=ACROSS)]
    by_id = charts(rec)
    recv, lat = by_id["map/recv_bw"].matrix, by_id["map/latency"].matrix
    assert recv is not None and lat is not None
    assert recv.marked is not None and lat.marked is not None
    # rank 1 receives slowly from its node's other rank only; the link 3 -> 0 is one cell
    assert sorted(zip(*np.nonzero(recv.marked), strict=True)) == [(0, 1), (3, 0)]
    assert recv.marked_rows == recv.marked_cols == ()
    # rank 2, across nodes: the pairs with ranks 0 and 1, as pinging and as answering
    assert sorted(zip(*np.nonzero(lat.marked), strict=True)) == [(0, 2), (1, 2), (2, 0),
                                                                (2, 1)]
    assert "hostB:1 (its column)" in by_id["map/recv_bw"].note
    assert "link hostD:3 -> hostA:0" in by_id["map/recv_bw"].note
    svg = draw(by_id["map/recv_bw"])
    assert svg.count(f"stroke: {plot.HEAT_MARK}") >= 2  # two outlines at least


def many(P: int, shifts: list[int]) -> MapRecord:
    """A map of P ranks on P hosts, every pair at 1 GB/s and 10 us, ``shifts`` measured."""
    K, R = len(shifts), 3
    times = np.full((K, P, R), 2 * (1 << 20) / 1e9)
    rec = dataclasses.replace(
        synthetic(), nprocs=P, nmapped=P, hosts=[f"n{i:04d}" for i in range(P)],
        world_rank=np.arange(P), node=np.arange(P), shifts=np.array(shifts),
        send_time=times, recv_time=times.copy(), latency_time=np.full((K, P, R), 2e-5))
    derive(rec)
    return rec


def test_many_ranks_label_every_kth_node() -> None:
    rec = many(100, [1, 2, 50])
    by_id = charts(rec)
    assert list(by_id) == IDS[:3]  # no bars above 64 mapped ranks
    recv = by_id["map/recv_bw"]
    assert recv.matrix is not None and recv.matrix.label_every == 2
    assert "one node in 2 labelled" in recv.note and "or not measured" in recv.note
    svg = draw(recv)
    assert ">n0000<" in svg and ">n0098<" in svg and ">n0001<" not in svg
    (cells,) = [px for w, h, px in images(svg) if (w, h) == (100, 100)]
    assert np.isfinite(cells).all()
    assert svg.count(">1000<") <= 1  # no values in the cells (1000 MB/s each)


def test_above_the_stored_matrices_the_page_says_why_there_is_no_heatmap() -> None:
    P = MATRIX_MAX + 1
    rec = many(P, [1])
    assert rec.recv_bw is None
    (chart,) = VIEW.charts(rec, RunRecord(attrs={"suite": "map"}, results=[rec]))
    assert chart.kind == HEATMAP and chart.matrix is None
    page = report.build([RunRecord(attrs={"suite": "map"}, results=[rec])], ["big.h5"])
    why = f"No heatmap: {P} ranks were mapped, and the P x P matrices are stored up to 1024"
    assert why in page  # in the caption
    svg = draw(chart)
    assert "No heatmap" in svg and "<image" not in svg


def test_two_runs_draw_their_heatmaps_side_by_side_without_a_ratio_panel() -> None:
    a, b = derived(), derived()
    records = [RunRecord(attrs={"suite": "map"}, results=[r]) for r in (a, b)]
    figures = collect([report.charts_of(r) for r in records], ["one", "two"])
    heat = [(f.chart.id, f.run) for f in figures if f.chart.kind == HEATMAP]
    assert heat == [(cid, k) for cid in IDS[:3] for k in (0, 1)]
    (bars,) = [f for f in figures if f.chart.id == "map/nodes"]  # bars overlay as before
    assert bars.run is None and all(r is not None for r in bars.runs)
    page = report.build(records, ["one.h5", "two.h5"])
    recv = page[page.index('data-chart="map/recv_bw"'):page.index('data-chart="map/send_bw"')]
    assert recv.count("<svg") == 2 and ">one: receive bandwidth per pair" in recv
    assert ">two: receive bandwidth per pair" in recv
    assert "lower panel" not in recv and "each run /" not in recv and "not in " not in recv


def test_a_matrix_must_match_its_labels() -> None:
    with pytest.raises(ValueError, match=r"expected \(2, 3\)"):
        Matrix(np.zeros((2, 2)), ("a", "b"), ("a", "b", "c"), "u")
    with pytest.raises(ValueError, match="marked has shape"):
        Matrix(np.zeros((2, 2)), ("a", "b"), ("a", "b"), "u", marked=np.zeros(3, bool))
    with pytest.raises(ValueError, match="marked_rows"):
        Matrix(np.zeros((2, 2)), ("a", "b"), ("a", "b"), "u", marked_rows=(2,))
    with pytest.raises(ValueError, match="only a heatmap has a matrix"):
        Chart("x", "x", "x", "y", (), matrix=Matrix(np.zeros((1, 1)), ("a",), ("a",), "u"))
