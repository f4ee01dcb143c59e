"""IMB-EXT and IMB-RMA without MPI: ``--format imb`` against IMB 2021.11's own output
(tests/data/imb-samples), the length and mode rules, and the flags these components lack."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from beff.bench import view as report
from beff.bench.plan import modes_for, sizes_for
from beff.bench.registry import AGGREGATE, NON_AGGREGATE, BenchmarkSpec, load_suite
from beff.cli.options import parse_imb
from beff.core import suite as suites
from beff.core.config import RunConfig, build_config
from beff.core.errors import UsageError
from beff.results.model import OK, Measurement
from tests.views import imb_header

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "imb-samples"
EXT_SAMPLE = SAMPLES / "ext-np2-msglog0-16-time0.5-quiet.txt"
RMA_SAMPLE = SAMPLES / "rma-np2-msglog0-16-time0.5-quiet.txt"

Block = list[str]


def cfg_of(suite: str = "ext", **values: object) -> RunConfig:
    """A validated config of ``suite`` with ``values`` as if given by flags."""
    return build_config(values, suite=suites.get(suite))


def blocks(text: str) -> list[Block]:
    """The benchmark blocks of an IMB text, each from its first dashes to its last row."""
    out = []
    for chunk in text.split("\n\n#---")[1:]:
        lines = [ln for ln in ("#---" + chunk).split("\n")
                 if ln.strip() and not ln.startswith("# All processes")]
        if lines[1].startswith("# Benchmarking "):
            out.append(lines)
    return out


def mode_of(block: Block) -> str:
    for ln in block:
        if ln.startswith("#    MODE: "):
            return NON_AGGREGATE if "NON" in ln else AGGREGATE
    return ""


def measurement_from(block: Block, suite: str) -> Measurement:
    """A Measurement whose ranks reproduce the block's printed figures: the origin alone
    (the target NaN) for t[usec] tables, three ranks for t_min/t_max/t_avg tables."""
    name = block[1].split()[2]
    spec: BenchmarkSpec = load_suite(suite)[name.lower()]
    at = next(i for i, ln in enumerate(block) if "#repetitions" in ln)
    titles = block[at].split()
    rows = [dict(zip(titles, ln.split(), strict=True)) for ln in block[at + 1 :]]
    S = len(rows)
    more: dict[str, np.ndarray] = {}
    if "t_min[usec]" in titles:
        lo, hi, avg = (np.array([float(r[k]) for r in rows])
                       for k in ("t_min[usec]", "t_max[usec]", "t_avg[usec]"))
        times = np.stack([lo, hi, 3 * avg - lo - hi], axis=1)
    else:
        first = "t_pure[usec]" if "t_pure[usec]" in titles else "t[usec]"
        times = np.array([[float(r[first]), np.nan, np.nan] for r in rows])
        if "t_ovrl[usec]" in titles:
            more["t_ovrl"] = np.array([[float(r["t_ovrl[usec]"]), np.nan, np.nan]
                                       for r in rows]) * 1e-6
    return Measurement(
        suite=suite, benchmark=name, kind=spec.kind.value, nprocs=2, ngroups=1, multi=None,
        idle=0, sizes=np.array([int(r["#bytes"]) for r in rows]),
        repetitions=np.array([int(r["#repetitions"]) for r in rows]), status=[OK] * S,
        times=times * 1e-6, group=np.zeros(3, dtype=int), world_ranks=np.arange(3),
        samples=np.zeros((S, 3, 1)), batch_iters=np.ones((S, 3, 1), dtype=int),
        mode=mode_of(block), columns=spec.table_columns, metric=spec.metrics[0].name,
        more_times=more,
    )


def compare(ours: Block, theirs: Block) -> None:
    at = next(i for i, ln in enumerate(theirs) if "#repetitions" in ln)
    assert ours[: at + 1] == theirs[: at + 1]  # dashes, name, mode lines, titles: exactly
    assert len(ours) == len(theirs)
    for a, b in zip(ours[at + 1 :], theirs[at + 1 :], strict=True):
        assert len(a) == len(b)
        fa, fb = a.split(), b.split()
        assert fa[:2] == fb[:2]  # sizes and repetitions
        # Mbytes/sec is recomputed from the printed (rounded) time.
        assert [float(x) for x in fa[2:]] == pytest.approx([float(x) for x in fb[2:]],
                                                           rel=6e-3, abs=0.011)


@pytest.mark.parametrize(("suite", "sample", "count"), [("ext", EXT_SAMPLE, 11),
                                                         ("rma", RMA_SAMPLE, 26)])
def test_blocks_match_imb(suite: str, sample: Path, count: int) -> None:
    found = blocks(sample.read_text())
    assert len(found) == count
    for theirs in found:
        ours = [ln for ln in report.imb_block(measurement_from(theirs, suite)).split("\n")
                if ln.strip()]
        compare(ours, theirs)


def test_run_order_and_modes_match_imb() -> None:
    """Every benchmark in the samples' order, each mode in IMB's order (EXT: aggregate
    first; RMA: non-aggregate first; one-mode benchmarks print no MODE line)."""
    for suite, sample in (("ext", EXT_SAMPLE), ("rma", RMA_SAMPLE)):
        theirs = [(b[1].split()[2], mode_of(b)) for b in blocks(sample.read_text())]
        ours = [(s.name, mode) for s in load_suite(suite).values() if s.default
                for mode in s.modes]
        assert ours == theirs


@pytest.mark.parametrize(("suite", "sample", "part"), [("ext", EXT_SAMPLE, "MPI-2"),
                                                        ("rma", RMA_SAMPLE, "MPI-RMA")])
def test_global_header_and_list_match_imb(suite: str, sample: Path, part: str) -> None:
    specs = [s for s in load_suite(suite).values() if s.default]
    attrs = {"config": {"suite": suite, "msglog_min": 0, "msglog_max": 16},
             "command_line": ["beff", "imb", suite], "created": "2026-11-22T01:00:00Z",
             "mpi": {"standard_version": "5.0", "thread_level": "single"},
             "host": {"machine": "x86_64", "system": "Linux", "release": "6", "version": "#1"},
             "benchmark_comments": {s.name: list(s.comments) for s in specs if s.comments}}
    ours = imb_header(attrs, [s.name for s in specs]).rstrip("\n").split("\n")
    theirs = sample.read_text().split("\n")
    assert ours[2].endswith(f", {part} part") and theirs[2].endswith(f", {part} part")
    start = ours.index("# MPI_Datatype                   :   MPI_BYTE ")
    end = theirs.index("# " + specs[-1].name) + 1 + len(specs[-1].comments)
    assert ours[start:] == theirs[theirs.index(ours[start]) : end]


def test_lengths() -> None:
    cfg = cfg_of(msglog_min=10, msglog_max=12)
    ext, rma = load_suite("ext"), load_suite("rma")
    # IMB-EXT: multiples of 4 bytes, the second length one element whatever -msglog's min
    assert sizes_for(ext["unidir_put"], cfg) == [0, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
                                                 2048, 4096]
    assert sizes_for(rma["unidir_put"], cfg) == [0, 1024, 2048, 4096]
    assert sizes_for(rma["fetch_and_op"], cfg) == sizes_for(rma["compare_and_swap"], cfg) == [4]
    assert sizes_for(rma["accumulate"], cfg_of(msglog_min=0, msglog_max=3)) == [0, 4, 8]


def test_aggregate_mode_picks_one_mode() -> None:
    acc, window = load_suite("ext")["accumulate"], load_suite("ext")["window"]
    assert modes_for(acc, cfg_of()) == (AGGREGATE, NON_AGGREGATE)
    assert modes_for(acc, cfg_of(aggregate_mode="non_aggregate")) == (NON_AGGREGATE,)
    assert modes_for(acc, cfg_of(aggregate_mode="aggregate")) == (AGGREGATE,)
    assert modes_for(window, cfg_of(aggregate_mode="aggregate")) == ("",)
    assert parse_imb(suites.get("ext"), ["-aggregate_mode", "aggregate"]) == {
        "aggregate_mode": "aggregate"}
    with pytest.raises(UsageError, match="-aggregate_mode"):
        parse_imb(suites.get("ext"), ["-aggregate_mode", "both"])


@pytest.mark.parametrize(("suite", "flag"), [("ext", "-data_type"), ("ext", "-sync"),
                                             ("rma", "-red_data_type"), ("rma", "-msgsize"),
                                             ("mpi1", "-aggregate_mode")])
def test_flags_a_component_lacks(suite: str, flag: str) -> None:
    with pytest.raises(UsageError, match=f"{flag} is not an option of IMB-{suite.upper()}"):
        parse_imb(suites.get(suite), [flag, "x"])
    with pytest.raises(UsageError, match="expects|must be|cannot|not a"):  # that flag's rule
        parse_imb(suites.get("mpi1" if suite != "mpi1" else "rma"), [flag, "x"])
