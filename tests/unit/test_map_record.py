"""``beff map``'s record without MPI: the shift form's conventions (who measured which pair),
the matrices, sums and outliers derived from it, its HDF5 layout, and its views."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from rich.console import Console

from beff.netmap import record as record_module
from beff.netmap.record import LAYOUT, MapRecord, derive, pairs
from beff.netmap.view import VIEW, named, node_rows
from beff.results.archive import read_record, write_record
from beff.results.model import RunRecord

P, R = 4, 3
WINDOW, SIZE = 2, 1 << 20
SLOW_SENDER = 2  # "hostC"


def synthetic(shifts: list[int] | None = None) -> MapRecord:
    """Every pair at 1 GB/s and 10 us, but hostC's sends at 50 MB/s (as its receivers see
    them); pair (s -> d) gets a small signature so that the conventions can be checked."""
    shifts = list(range(1, P)) if shifts is None else shifts
    K = len(shifts)
    send = np.empty((K, P, R))
    recv = np.empty((K, P, R))
    lat = np.empty((K, P, R))
    for i, k in enumerate(shifts):
        for r in range(P):
            dest, src = (r + k) % P, (r - k) % P
            send[i, r] = WINDOW * SIZE / (1e9 * (1 + dest / 100))  # rank r -> dest
            bw = 5e7 if src == SLOW_SENDER else 1e9 * (1 + src / 100)
            recv[i, r] = WINDOW * SIZE / bw  # src -> rank r, measured at r
            lat[i, r] = 2 * 10e-6 * (1 + dest / 100)  # round trip of r with dest
    return MapRecord(
        nprocs=P, nmapped=P, per_node=1, seed=0, size=SIZE, window=WINDOW, latency_size=8,
        rounds=5, budget_s=10.0, max_repetitions=R, repetitions=R, over_budget=False,
        calibration_s=0.01, passes_done=2 * R, runtime_s=1.0, threshold=4.0, min_ratio=2.0,
        outlier_figures="both", hosts=["hostA", "hostB", "hostC", "hostD"],
        world_rank=np.arange(P), node=np.arange(P), shifts=np.array(shifts),
        send_time=send, recv_time=recv, latency_time=lat)


def test_pairs_follow_the_sender_convention() -> None:
    p = pairs(synthetic())
    assert len(p.sender) == 3 * P and p.across.all()
    recv = p.recv_bw
    for i in range(len(p.sender)):
        s, d = int(p.sender[i]), int(p.receiver[i])
        assert d == (s + int(p.shift[i])) % P
        expected = 5e7 if s == SLOW_SENDER else 1e9 * (1 + s / 100)
        assert np.isclose(recv[i], expected)  # measured at d, filed under s -> d
        assert np.isclose(p.send_bw[i], 1e9 * (1 + d / 100))
        assert np.isclose(p.latency[i], 10e-6 * (1 + d / 100))


def test_derive_fills_matrices_sums_and_outliers() -> None:
    rec = synthetic()
    derive(rec)
    assert rec.recv_bw is not None and rec.send_bw is not None and rec.latency is not None
    assert np.isnan(np.diag(rec.recv_bw)).all()
    assert np.allclose(rec.recv_bw[SLOW_SENDER, [0, 1, 3]], 5e7)
    assert np.isclose(rec.recv_bw[0, 1], 1e9) and np.isclose(rec.latency[1, 3], 10.3e-6)
    assert rec.send_sum is not None and rec.recv_sum is not None
    assert np.isclose(rec.send_sum[SLOW_SENDER], 1.5e8)  # its row: what it delivered
    assert np.isclose(rec.recv_sum[0], 1e9 * 1.01 + 5e7 + 1e9 * 1.03)  # its column
    assert rec.node_send_sum is not None and np.allclose(rec.node_send_sum, rec.send_sum)
    assert named(rec) == (["hostC"], [])
    (f,) = rec.findings()
    assert (f.kind, f.figure, f.side, f.rank) == ("node", "bandwidth", "send", SLOW_SENDER)
    assert "at least 2x worse" in rec.rule


def test_unmeasured_shifts_leave_nan_and_no_pair() -> None:
    rec = synthetic([1, 3])
    rec.recv_time[1] = np.nan  # the second shift not measured yet
    rec.send_time[1] = np.nan
    rec.latency_time[1] = np.nan
    derive(rec)
    assert rec.recv_bw is not None
    measured = np.isfinite(rec.recv_bw)
    assert measured.sum() == P and all(measured[s, (s + 1) % P] for s in range(P))
    assert len(VIEW.csv_rows(rec)) == P


def test_outliers_of_one_figure_only() -> None:
    rec = synthetic()
    rec.outlier_figures = "latency"
    derive(rec)
    assert rec.outliers == []


def test_the_layout_round_trips(tmp_path: Path) -> None:
    rec = synthetic()
    derive(rec)
    with h5py.File(tmp_path / "m.h5", "w") as f:
        write_record(f.create_group("map"), rec, LAYOUT)
    with h5py.File(tmp_path / "m.h5", "r") as f:
        back = read_record(f["map"], LAYOUT)
    assert isinstance(back, MapRecord)
    assert back.hosts == rec.hosts and back.outliers == rec.outliers
    assert back.over_budget is False and back.rule == rec.rule
    for name in ("send_time", "recv_time", "latency_time", "recv_bw", "send_sum"):
        assert np.array_equal(getattr(back, name), getattr(rec, name), equal_nan=True), name


def test_views_name_the_slow_node_in_every_format() -> None:
    rec = synthetic()
    derive(rec)
    record = RunRecord(attrs={"suite": "map"}, results=[rec])
    doc = VIEW.summary(rec, record)
    json.dumps(doc, allow_nan=False)  # no NaN in the JSON document
    assert doc["named_nodes"] == ["hostC"] and doc["named_links"] == []
    assert doc["outliers"][0]["text"].startswith("node hostC: sends at most 50.0 MB/s")
    assert doc["matrices"]["recv_MBps"][2][0] == 50.0
    rows = list(csv.DictReader(io.StringIO(
        "\n".join([",".join(VIEW.csv_fields)] + [",".join(str(r[k]) for k in VIEW.csv_fields)
                                                  for r in VIEW.csv_rows(rec)]))))
    assert len(rows) == 12 and {r["sender_host"] for r in rows} == set(rec.hosts)
    console = Console(file=io.StringIO(), width=120)
    VIEW.table(rec, record, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "node hostC: sends at most 50.0 MB/s with any partner" in text
    assert "(its whole row is low)" in text
    names = [name for name, _, _ in VIEW.figures(rec)]
    assert names == ["recv_MBps_median", "recv_MBps_min", "latency_us_median", "latency_us_max"]
    assert set(VIEW.matrices(rec)) == {"send_MBps", "recv_MBps", "latency_us"}
    charts = VIEW.charts(rec, record)
    assert [c.id for c in charts] == ["map/recv_bw", "map/send_bw", "map/latency", "map/nodes"]
    chart = charts[-1]  # the heatmaps: tests/unit/test_map_heatmap.py
    assert chart.categories == tuple(rec.hosts)
    sent, got = chart.series
    assert np.isclose(sent.y[SLOW_SENDER], 150.0) and np.isclose(got.y[0], 2090.0)


def _link_latency(samples_us: list[float]) -> MapRecord:
    """The synthetic record with hostA -> hostB's latency samples (half round trips, us) set:
    shift 1, measured by its pinging rank 0."""
    rec = synthetic()
    rec.latency_time[0, 0] = 2e-6 * np.asarray(samples_us)
    derive(rec)
    return rec


def test_a_link_is_judged_by_its_median_as_the_matrix_shows_it() -> None:
    """The issue's case: a link whose smallest sample is fast and its median slow is named,
    with the median the matrix shows; one slow sample of three names nothing."""
    rec = _link_latency([10.0, 1000.0, 1000.0])
    assert rec.latency is not None and np.isclose(rec.latency[0, 1], 1e-3)
    (link,) = [f for f in rec.findings() if f.figure == "latency"]
    assert (link.kind, link.rank, link.peer) == ("link", 0, 1)
    assert link.value == rec.latency[0, 1]  # the outlier list's figure is the matrix's cell
    console = Console(file=io.StringIO(), width=200)
    VIEW.table(rec, RunRecord(attrs={"suite": "map"}, results=[rec]), console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "link hostA -> hostB: 1,000.0 us half round trip" in text
    matrix = text.split("pinging, column: answering)")[1].split("outliers by")[0]
    assert "  hostA       -   1,000.0 " in matrix  # the same figure in the matrix's cell
    assert "10.0 us half" not in text  # not the link's smallest sample
    rec = _link_latency([10.0, 10.0, 1000.0])
    assert [f for f in rec.findings() if f.figure == "latency"] == []


def test_a_named_node_shows_its_best_cell_of_the_matrix() -> None:
    rec = synthetic()
    derive(rec)
    (f,) = rec.findings()
    assert rec.recv_bw is not None
    assert f.value == np.nanmax(rec.recv_bw[SLOW_SENDER])  # "sends at most": its row's best
    assert node_rows(rec, pairs(rec))[SLOW_SENDER]["best_as_sender"] == f.value


def _shared(figures: str) -> tuple[MapRecord, RunRecord, str, dict[str, object]]:
    """The synthetic record as one oversubscribed node's, its outliers named by ``figures``
    (auto stores none there): its table and JSON entry."""
    rec = synthetic()
    rec.outlier_figures = figures
    derive(rec)
    record = RunRecord(attrs={"suite": "map", "placement": {"nodes": 1,
                                                            "oversubscribed": True}},
                       results=[rec])
    console = Console(file=io.StringIO(), width=400)
    VIEW.table(rec, record, console)
    return rec, record, console.file.getvalue(), VIEW.summary(rec, record)  # type: ignore


def test_one_oversubscribed_node_says_so_and_names_nothing_by_default() -> None:
    rec, record, text, doc = _shared("none")
    assert rec.outliers == []
    note = "note: pair figures here do not judge links: every mapped rank is on one node"
    assert note in text and "the job is oversubscribed" in text
    assert "no outliers are named (--outliers both names them anyway)" in text
    assert "outliers: none looked for (pair figures here do not judge links; --outliers " \
        "both names them)" in text
    assert doc["links_judged"] is False and doc["outliers"] == []
    assert str(doc["placement_note"]).startswith("pair figures here do not judge links")
    assert doc["outlier_figures"] == "none"
    heat = VIEW.charts(rec, record)[0]
    assert "no outliers looked for (pair figures here do not judge links" in str(heat.note)


def test_asked_for_outliers_are_named_with_the_note() -> None:
    rec, _, text, doc = _shared("both")
    assert [f.rank for f in rec.findings()] == [SLOW_SENDER]
    assert "the outliers named (by bandwidth and latency) tell that, not slow links" in text
    assert "node hostC: sends at most 50.0 MB/s" in text
    assert doc["links_judged"] is False and doc["named_nodes"] == ["hostC"]


def test_nodes_of_their_own_judge_links() -> None:
    rec = synthetic()
    derive(rec)
    record = RunRecord(attrs={"suite": "map", "placement": {"nodes": 4,
                                                            "oversubscribed": False}},
                       results=[rec])
    doc = VIEW.summary(rec, record)
    assert doc["links_judged"] is True and doc["placement_note"] is None
    console = Console(file=io.StringIO(), width=200)
    VIEW.table(rec, record, console)
    assert "note:" not in console.file.getvalue()  # type: ignore[attr-defined]


def test_pairs_in_blocks_of_shifts_equal_pairs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """pairs() turns the samples into per-pair figures a block of shifts at a time (rank 0
    never copies every sample): one shift a block gives what one block of all gives."""
    rec = synthetic()
    rec.recv_time[1, 2, 0] = np.nan  # a missing sample, and a pair with none
    rec.recv_time[0, 3, :] = np.nan
    whole = pairs(rec)
    monkeypatch.setattr(record_module, "BLOCK_SAMPLES", 1)
    for name in ("shift", "sender", "receiver", "send_bw", "recv_bw", "latency", "across",
                 "recv_min", "recv_max", "latency_min", "latency_max", "samples"):
        assert np.array_equal(getattr(whole, name), getattr(pairs(rec), name),
                              equal_nan=name not in ("across", "samples")), name
    assert whole.samples.min() == 0 and whole.samples.max() == R  # the control
    assert (~whole.measured).sum() == 1
