"""``--format lines`` (share/docs/lines.md): the names are an interface that JUBE, ReFrame and
shell scripts match, so the exact lines of small stored files are pinned here (IMB PingPong
with a time-out row, an IMB collective and Barrier, b_eff, b_eff_io), and every suite's files
give names that are unique, of the allowed characters, with plain numbers."""

from __future__ import annotations

import collections
import dataclasses
import functools
import importlib.metadata
import math
import re
from pathlib import Path

import numpy as np
import pytest

from beff.api import load
from beff.core import suite as suites
from beff.render import lines, view
from beff.results import imported
from beff.results.model import Measurement, RunRecord
from tests.unit.test_map_heatmap import derived
from tests.unit.test_report import _batches

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = {k: DATA / f"golden-schema-v3-{k}.h5" for k in ("imb", "beff", "beffio")}
COLLECTIVES = DATA / "imb-samples" / "mpi1-np2-coll-msglog0-16-time0.5-quiet.txt"
LINE = re.compile(r"(?P<name>[A-Za-z0-9_+-]+(\.[A-Za-z0-9_+-]+)*) "
                  r"(?P<value>-?[0-9]+(\.[0-9]+)?|[a-z-]+) (?P<unit>\S+)")
UNITS = {"us", "MB/s", "msg/s", "%", "count", "s", "B", "1", "-"}

GOLDEN_IMB = """\
mpi1.PingPong.np2.0B.repetitions 1000 count
mpi1.PingPong.np2.0B.t_min_us 1 us
mpi1.PingPong.np2.0B.t_max_us 1.1 us
mpi1.PingPong.np2.0B.t_avg_us 1.05 us
mpi1.PingPong.np2.0B.mbytes_per_sec 0 MB/s
mpi1.PingPong.np2.1B.repetitions 1000 count
mpi1.PingPong.np2.1B.t_min_us 1.2 us
mpi1.PingPong.np2.1B.t_max_us 1.3 us
mpi1.PingPong.np2.1B.t_avg_us 1.25 us
mpi1.PingPong.np2.1B.mbytes_per_sec 0.769231 MB/s
mpi1.PingPong.np2.2B.repetitions 1000 count
mpi1.PingPong.np2.2B.t_min_us 1.4 us
mpi1.PingPong.np2.2B.t_max_us 1.5 us
mpi1.PingPong.np2.2B.t_avg_us 1.45 us
mpi1.PingPong.np2.2B.mbytes_per_sec 1.33333 MB/s
mpi1.PingPong.np2.4B.repetitions 1000 count
mpi1.PingPong.np2.4B.t_min_us 2 us
mpi1.PingPong.np2.4B.t_max_us 2.5 us
mpi1.PingPong.np2.4B.t_avg_us 2.25 us
mpi1.PingPong.np2.4B.mbytes_per_sec 1.6 MB/s
mpi1.Sendrecv.np3.0B.repetitions 100 count
mpi1.Sendrecv.np3.0B.t_min_us 3 us
mpi1.Sendrecv.np3.0B.t_max_us 5 us
mpi1.Sendrecv.np3.0B.t_avg_us 4 us
mpi1.Sendrecv.np3.0B.mbytes_per_sec 0 MB/s
mpi1.Sendrecv.np3.1B.repetitions 100 count
mpi1.Sendrecv.np3.1B.t_min_us 3 us
mpi1.Sendrecv.np3.1B.t_max_us 6 us
mpi1.Sendrecv.np3.1B.t_avg_us 4.33333 us
mpi1.Sendrecv.np3.1B.mbytes_per_sec 0.333333 MB/s
mpi1.Sendrecv.np3.2B.status time-out -
golden.Overlap.aggregate.np2.0B.repetitions 1000 count
golden.Overlap.aggregate.np2.0B.t_min_us 5 us
golden.Overlap.aggregate.np2.0B.t_max_us 6 us
golden.Overlap.aggregate.np2.0B.t_avg_us 5.5 us
golden.Overlap.aggregate.np2.1B.repetitions 1000 count
golden.Overlap.aggregate.np2.1B.t_min_us 5 us
golden.Overlap.aggregate.np2.1B.t_max_us 6 us
golden.Overlap.aggregate.np2.1B.t_avg_us 5.5 us
golden.Overlap.aggregate.np2.2B.repetitions 1000 count
golden.Overlap.aggregate.np2.2B.t_min_us 7 us
golden.Overlap.aggregate.np2.2B.t_max_us 8 us
golden.Overlap.aggregate.np2.2B.t_avg_us 7.5 us
golden.Overlap.aggregate.np2.4B.repetitions 1000 count
golden.Overlap.aggregate.np2.4B.t_min_us 9 us
golden.Overlap.aggregate.np2.4B.t_max_us 10 us
golden.Overlap.aggregate.np2.4B.t_avg_us 9.5 us
run.status complete -
"""
# IMB's own text of Allreduce (sizes 0, 4, 8) and Barrier at 2 processes, imported.
GOLDEN_COLLECTIVE = """\
mpi1.Allreduce.np2.0B.repetitions 1000 count
mpi1.Allreduce.np2.0B.t_min_us 0.28 us
mpi1.Allreduce.np2.0B.t_max_us 0.29 us
mpi1.Allreduce.np2.0B.t_avg_us 0.29 us
mpi1.Allreduce.np2.4B.repetitions 1000 count
mpi1.Allreduce.np2.4B.t_min_us 0.61 us
mpi1.Allreduce.np2.4B.t_max_us 0.69 us
mpi1.Allreduce.np2.4B.t_avg_us 0.65 us
mpi1.Allreduce.np2.8B.repetitions 1000 count
mpi1.Allreduce.np2.8B.t_min_us 8.58 us
mpi1.Allreduce.np2.8B.t_max_us 11.67 us
mpi1.Allreduce.np2.8B.t_avg_us 10.13 us
mpi1.Barrier.np2.repetitions 1000 count
mpi1.Barrier.np2.t_min_us 1.65 us
mpi1.Barrier.np2.t_max_us 1.65 us
mpi1.Barrier.np2.t_avg_us 1.65 us
"""
GOLDEN_BEFF = """\
beff.b_eff_MBps 99.0711 MB/s
beff.b_eff_lmax_MBps 290.558 MB/s
beff.b_ring_MBps 99.0711 MB/s
beff.b_random_MBps 99.0711 MB/s
beff.latency_us 0.908183 us
beff.pingpong_latency_us 0.908183 us
beff.pingpong_bandwidth_MBps 145.279 MB/s
run.status complete -
"""
GOLDEN_BEFFIO = """\
beffio.b_eff_io_MBps 209.715 MB/s
beffio.np1.write_MBps 104.858 MB/s
beffio.np1.rewrite_MBps 104.858 MB/s
beffio.np1.read_MBps 104.858 MB/s
beffio.np1.b_eff_io_MBps 104.858 MB/s
beffio.np2.write_MBps 209.715 MB/s
beffio.np2.rewrite_MBps 209.715 MB/s
beffio.np2.read_MBps 209.715 MB/s
beffio.np2.b_eff_io_MBps 209.715 MB/s
run.status complete -
"""


def shown(record: RunRecord) -> str:
    text = view.render(record, "lines")
    assert text is not None
    return text


@pytest.mark.parametrize(("name", "expected"), [("imb", GOLDEN_IMB), ("beff", GOLDEN_BEFF),
                                                ("beffio", GOLDEN_BEFFIO)])
def test_the_lines_of_the_golden_files(name: str, expected: str) -> None:
    assert shown(load(GOLDEN[name])) == expected


def test_the_lines_of_an_imb_collective_and_barrier() -> None:
    text = shown(imported.read(COLLECTIVES))
    wanted = re.compile(r"mpi1\.(Allreduce\.np2\.(0|4|8)B|Barrier\.np2)\.")
    assert "".join(ln for ln in text.splitlines(True) if wanted.match(ln)) == GOLDEN_COLLECTIVE
    # a collective declares no bandwidth: none is printed (what the CSV derives is no figure)
    assert "Allreduce" in text and not re.search(r"Allreduce.*(mbytes|msg)_per_sec", text)


def every_suites_records() -> dict[str, list[RunRecord]]:
    """Records of every suite: the golden files (also with 10 batches per size, so that
    t_avg has its interval), IMB's texts of each component (-multi 0 and 1, a time-out, a
    size given twice by -msglen), b_eff's and b_eff_io's originals, and a map."""
    found: dict[str, list[RunRecord]] = collections.defaultdict(list)
    records = [load(p) for p in GOLDEN.values()]
    records.append(_batches(records[0], 1.0, 1))
    records.append(RunRecord(attrs={"suite": "map", "status": "complete"},
                             results=[derived()]))
    texts = [*(DATA / "imb-samples").glob("*.txt"), *(DATA / "imported").glob("*.txt"),
             *(DATA / "real-logs").glob("imb-*.txt"), *(DATA / "real-logs").glob("*.sum"),
             *(DATA / "beff-3.6-reference").glob("*/b_eff.*"),
             *(DATA / "beffio-2.1-reference").glob("*/*.sum")]
    for path in sorted(texts):
        records += imported.read_all(path)
    for record in records:
        found[record.suite].append(record)
    return found


# beff's own suites (its entry points): a plug-in's test may have registered the toy suites
# in this process before, and they are not beff's
OWN = sorted(e.name for e in importlib.metadata.distribution("beff").entry_points.select(
    group=suites.GROUP))


@functools.cache
def records() -> dict[str, list[RunRecord]]:
    """every_suites_records, read once, when a test first asks (not while collecting)."""
    return every_suites_records()


def test_every_suite_is_covered() -> None:
    assert OWN and set(OWN) <= {s.name for s in suites.suites()}
    assert sorted(records()) == OWN


@pytest.mark.parametrize("suite", OWN)
def test_names_are_unique_and_regular_and_numbers_plain(suite: str) -> None:
    for record in records()[suite]:
        text = shown(record)
        assert text.endswith(f"run.status {record.attrs.get('status', 'complete')} -\n")
        names = []
        for ln in text.splitlines():
            match = LINE.fullmatch(ln)
            assert match, ln
            name, value, unit = match.group("name", "value", "unit")
            assert unit in UNITS, ln
            assert (unit == lines.WORD) == name.endswith(".status"), ln
            assert name.split(".")[0] in (suite, "run") or suite == "mpi1", ln
            if unit != lines.WORD:
                assert math.isfinite(float(value)), ln
            names.append(name)
        repeated = [n for n, k in collections.Counter(names).items() if k > 1]
        assert not repeated, repeated[:5]


def test_an_interval_and_a_time_out_are_lines_and_nan_never_is() -> None:
    record = _batches(load(GOLDEN["imb"]), 1.0, 1)
    text = shown(record)
    assert re.search(r"^mpi1\.PingPong\.np2\.4B\.t_avg_ci_low_us [0-9.]+ us$", text, re.M)
    assert "mpi1.Sendrecv.np3.2B.status time-out -\n" in text
    assert not re.search(r"Sendrecv\.np3\.(2|4)B\.(?!status)", text)  # nothing measured there
    assert "nan" not in text.lower() and "inf" not in text.lower()


def test_a_size_given_twice_gets_a_second_name() -> None:
    record = load(GOLDEN["imb"])
    m = record.results[0]
    assert isinstance(m, Measurement)
    twice = dataclasses.replace(m, sizes=np.array([0, 1, 1, 4]))
    names = [ln.split()[0] for ln in shown(dataclasses.replace(
        record, results=[twice])).splitlines()]
    assert "mpi1.PingPong.np2.1B.t_avg_us" in names
    assert "mpi1.PingPong.np2.1B-2.t_avg_us" in names
    assert len(names) == len(set(names))


def test_an_unsupported_benchmark_is_one_status_line() -> None:
    record = load(GOLDEN["imb"])
    m = record.results[0]
    none = dataclasses.replace(m, status=["unsupported"] * len(m.sizes))
    assert shown(dataclasses.replace(record, results=[none])) == (
        "mpi1.PingPong.np2.status unsupported -\nrun.status complete -\n")


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0"), (-0.0, "0"), (2.0, "2"), (np.int64(1000), "1000"), (True, "1"),
    (1.05, "1.05"), (0.76923076923, "0.769231"), (4149.1234, "4149.12"),
    (1234567.8, "1234568"), (3012157.4, "3012157"), (1e15 + 0.5, "1000000000000000"),
    (0.000012345678, "0.0000123457"), (1e-20, "0"), (-2.5, "-2.5"),
    (float("nan"), None), (float("inf"), None), (None, None), ("x", None)])
def test_numbers_are_plain(value: object, text: str | None) -> None:
    assert lines.number(value) == text
    if text is not None:
        assert lines.NUMBER.fullmatch(text)


@pytest.mark.parametrize(("figure", "unit"), [
    ("t_avg_us", "us"), ("mbytes_per_sec", "MB/s"), ("msg_per_sec", "msg/s"),
    ("repetitions", "count"), ("overlap_pct", "%"), ("b_eff_MBps", "MB/s"),
    ("recv_MBps_median", "MB/s"), ("latency_us_max", "us"), ("ratio", "1")])
def test_units_come_from_the_figure_names(figure: str, unit: str) -> None:
    assert lines.unit_of(figure) == unit


def test_a_typed_result_that_failed_says_so_first() -> None:
    record = load(GOLDEN["beffio"])
    record.results[0].failure = "disk full"
    assert shown(record).splitlines()[:2] == ["beffio.status failed -",
                                              "beffio.b_eff_io_MBps 209.715 MB/s"]
