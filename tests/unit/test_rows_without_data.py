"""JSON and CSV rows give a figure only where the benchmark has it, as IMB prints it: no
bytes and no bandwidth for Barrier, no message rate for PingPong (null in JSON, empty in
CSV), rather than a made-up number (Barrier's bandwidth came out of its internal size)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from beff.bench.view import measurement_rows
from beff.render import view
from beff.results import imported

LOG = (Path(__file__).resolve().parents[1] / "data" / "real-logs"
       / "imb-2018-mpi1+ext-multi0-impi2018-np8-appended-akrr.txt")


def test_barrier_has_no_bytes_and_no_bandwidth_and_pingpong_no_message_rate() -> None:
    record = imported.read_all(LOG)[0]
    by_name = {m.benchmark: m for m in record.measurements}
    barrier = measurement_rows(by_name["Barrier"])
    assert barrier and all(r["bytes"] is None and r["mbytes_per_sec"] is None
                           and r["msg_per_sec"] is None for r in barrier)
    assert all(r["t_avg_us"] > 0 for r in barrier)
    pingpong = measurement_rows(by_name["PingPong"])
    assert all(r["msg_per_sec"] is None for r in pingpong)
    assert all(r["bytes"] is not None for r in pingpong)
    assert any(r["mbytes_per_sec"] > 0 for r in pingpong)
    text = view.render(record, "csv")
    assert text is not None
    rows = list(csv.DictReader(io.StringIO(text)))
    bar = [r for r in rows if r["benchmark"] == "Barrier"]
    assert bar and all(r["bytes"] == r["mbytes_per_sec"] == "" for r in bar)
