"""The figures each suite's view declares (View.charts), built from the golden files; how
charts of several results and runs are joined; the band and the unstable marks."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from beff.api import load
from beff.bench.charts import UNSTABLE_CV, bandwidth, batch_band, measurement_charts, unstable
from beff.core import suite as suites
from beff.effbw.record import summarize as beff_summary
from beff.io.record import summarize as io_summary
from beff.io.view import GNUPLOT_X
from beff.render.charts import BAR, Chart, Series, collect, merge_series, select, subjects
from beff.render.report import charts_of
from beff.results import stats
from beff.results.model import OK, Measurement

DATA = Path(__file__).resolve().parents[1] / "data"
IMB, BEFF, BEFFIO = (DATA / f"golden-schema-v3-{k}.h5" for k in ("imb", "beff", "beffio"))


def test_every_suite_view_declares_its_charts() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugin"))
    try:
        from beff_toy.view import VIEW as toy
    finally:
        sys.path.pop(0)
    views = [s.load("view") for s in suites.suites()] + [toy]
    for view in views:
        assert callable(getattr(view, "charts", None)), view


def test_imb_charts_time_and_bandwidth_per_benchmark() -> None:
    record = load(IMB)
    by_id = {c.id: c for c in charts_of(record)}
    assert list(by_id) == ["mpi1/PingPong/time", "mpi1/PingPong/bandwidth",
                           "mpi1/Sendrecv/time", "mpi1/Sendrecv/bandwidth",
                           "golden/Overlap/time"]  # Overlap has no MB/s column
    pp = next(m for m in record.measurements if m.benchmark == "PingPong")
    (time,) = by_id["mpi1/PingPong/time"].series
    assert time.label == "np=2" and time.compare_key == ("PingPong", 2)
    assert time.x.tolist() == [0, 1, 2, 4]
    np.testing.assert_allclose(time.y, stats.summarize(pp).t_avg)
    (bw,) = by_id["mpi1/PingPong/bandwidth"].series
    np.testing.assert_allclose(bw.y, stats.summarize(pp).mbytes_per_sec)
    assert by_id["mpi1/PingPong/time"].xlog and by_id["mpi1/PingPong/time"].ylog
    assert "[µs]" in by_id["mpi1/PingPong/time"].ylabel
    assert "MB/s" in by_id["mpi1/PingPong/bandwidth"].ylabel
    assert by_id["mpi1/PingPong/time"].subject == "PingPong"
    # Sendrecv: the time-out and skipped sizes are not drawn
    (sr,) = by_id["mpi1/Sendrecv/time"].series
    assert sr.x.tolist() == [0, 1] and sr.label == "np=3"
    assert by_id["golden/Overlap/time"].series[0].label == "np=2, aggregate"


def _noisy(m: Measurement, factors: list[float]) -> Measurement:
    """``m`` with its batch times at size 1 scaled by ``factors`` (one per batch)."""
    samples = m.samples.copy()
    samples[1] = samples[1] * np.asarray(factors)[None, :]
    return dataclasses.replace(m, samples=samples)


def test_the_band_spans_the_batches_and_wide_spreads_are_marked() -> None:
    pp = next(m for m in load(IMB).measurements if m.benchmark == "PingPong")
    m = _noisy(pp, [1.0, 2.0])
    lo, hi = batch_band(m)
    per_batch = (m.samples[1] / m.batch_iters[1]).mean(axis=0) * m.time_scale * 1e6
    assert (lo[1], hi[1]) == pytest.approx(tuple(np.percentile(per_batch, [10, 90])))
    assert lo[1] < hi[1]
    shaky = unstable(m)
    assert stats.certainty(m).cv[1] > UNSTABLE_CV and shaky[1]
    assert not shaky[0] and not shaky[2]  # the golden batches are equal there
    (time, bw) = measurement_charts(m)
    assert time.series[0].marked is not None and time.series[0].marked.tolist() == \
        shaky.tolist()
    # the bandwidth band is the time band turned over (the slow end gives the low MB/s)
    np.testing.assert_allclose(bw.series[0].lo[1:], bandwidth(m, hi)[1:])
    assert bw.series[0].lo[1] < bw.series[0].hi[1]


def test_a_benchmark_that_measured_nothing_has_no_chart() -> None:
    pp = next(m for m in load(IMB).measurements if m.benchmark == "PingPong")
    assert measurement_charts(dataclasses.replace(pp, status=["time-out"] * 4)) == []
    assert measurement_charts(dataclasses.replace(pp, status=[OK] + ["skipped"] * 3)) != []


def test_beff_charts_lengths_methods_patterns_latencies() -> None:
    record = load(BEFF)
    result = record.results[0]
    s = beff_summary(result)
    charts = {c.id: c for c in charts_of(record)}
    assert list(charts) == ["b_eff/length", "b_eff/methods", "b_eff/patterns", "b_eff/latency"]
    length = charts["b_eff/length"]
    assert [x.label for x in length.series] == ["rings", "random", "b_eff(L)"]
    b_eff = length.series[2]
    np.testing.assert_allclose(b_eff.y, [r.b_eff_MBps for r in s.per_length])
    np.testing.assert_allclose(length.series[0].y, [r.ring_MBps for r in s.per_length])
    np.testing.assert_allclose(b_eff.x, s.lengths)
    methods = charts["b_eff/methods"].series
    assert [x.label for x in methods] == list(result.methods)
    for one in methods:  # one method alone never beats the best of all methods
        assert np.all(one.y <= b_eff.y * (1 + 1e-12))
    bars = charts["b_eff/patterns"]
    assert bars.kind == BAR and bars.categories == ("ring-1*2fix", "random-cyc-1dim")
    lat = charts["b_eff/latency"]
    assert lat.series[0].y.tolist() == [s.latency_us, s.latency_ring_us,
                                        s.pingpong_latency_us]
    assert {c.subject for c in charts.values()} == {"b_eff"}


def test_beffio_charts_follow_the_gnuplot_layout() -> None:
    record = load(BEFFIO)
    s = io_summary(record.results[0])
    charts = charts_of(record)
    assert [c.id for c in charts] == [f"b_eff_io/n{n}/{a}" for n in (1, 2)
                                      for a in ("write", "rewrite", "read")]
    write = charts[0]
    assert [x.label for x in write.series] == ["scatter", "shared", "separated", "segmented",
                                               "seg_coll"]
    assert [t for _, t in write.xticks] == ["1k", "1k+8", "32k", "32k+8", "1M", "1M+8", "2M"]
    assert write.series[0].x.tolist() == list(GNUPLOT_X) and write.ylog and not write.xlog
    assert write.series[0].y.tolist() == pytest.approx(
        [s.per_partition[0].patterns_MBps["write"]["scatter"][k]
         for k in ("1024", "1032", "32768", "32776", "1048576", "1048584", "Lmax")])
    assert [x.label for x in charts[1].series] == ["scatter"]  # rewrite: type 0 only


def test_series_of_one_label_join_and_runs_overlay() -> None:
    a = Series("Barrier", np.array([4.0]), np.array([2.0]), marked=np.array([True]))
    b = Series("Barrier", np.array([2.0]), np.array([1.0]))
    (joined,) = merge_series([a, b])
    assert joined.x.tolist() == [2.0, 4.0] and joined.y.tolist() == [1.0, 2.0]
    assert joined.marked is not None and joined.marked.tolist() == [False, True]

    def chart(cid: str, *series: Series, subject: str = "X") -> Chart:
        return Chart(cid, cid, "x", "y", series, subject=subject)

    figures = collect([[chart("s/X/time", a), chart("s/X/time", b), chart("s/Y/bw", a,
                                                                          subject="Y")],
                       [chart("s/X/time", b)]], ["one", "two"])
    assert [f.chart.id for f in figures] == ["s/X/time", "s/Y/bw"]
    first, second = figures[0].runs
    assert first is not None and second is not None and len(first) == 1 and len(second) == 1
    assert figures[1].runs[1] is None
    assert subjects(figures) == ["X", "Y"]
    assert [f.chart.id for f in select(figures, "x")] == ["s/X/time"]
    assert [f.chart.id for f in select(figures, "Y/BW")] == ["s/Y/bw"]
    assert select(figures, "Z") == []


def test_a_series_must_have_as_many_points_as_x() -> None:
    with pytest.raises(ValueError, match="y has 2 points, x has 3"):
        Series("bad", np.arange(3), np.arange(2))


@pytest.mark.parametrize("name, ids", [
    ("golden-schema-v1.h5", ["mpi1/PingPong/time", "mpi1/PingPong/bandwidth",
                             "mpi1/Sendrecv/time", "mpi1/Sendrecv/bandwidth"]),
    ("golden-schema-v2-imb.h5", None),
    ("golden-schema-v2-beff.h5", ["b_eff/length", "b_eff/methods", "b_eff/patterns",
                                  "b_eff/latency"]),
    ("golden-schema-v2-beffio.h5", [f"b_eff_io/n{n}/{a}" for n in (1, 2)
                                    for a in ("write", "rewrite", "read")]),
])
def test_older_files_have_their_figures(name: str, ids: list[str] | None) -> None:
    charts = charts_of(load(DATA / name))
    assert charts and all(s.x.size for c in charts for s in c.series)
    if ids is not None:
        assert [c.id for c in charts] == ids
