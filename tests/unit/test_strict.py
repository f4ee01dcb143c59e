"""``--strict``'s judgement (beff.results.strict), on stored and altered records: what fails a
run (a time-out, out-of-mem or failed row, corrupted data, a benchmark not measured, a run
that is not complete, the oversubscription warning) and what does not (the one-node
warning, check mode's own warning)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from beff.api import load
from beff.results import strict, warnings
from beff.results.model import Measurement, RunRecord

DATA = Path(__file__).resolve().parents[1] / "data"
IMB, BEFF, BEFFIO = (DATA / f"golden-schema-v3-{k}.h5" for k in ("imb", "beff", "beffio"))


def clean() -> RunRecord:
    """The golden IMB run without its time-out row (its PingPong alone)."""
    record = load(IMB)
    return dataclasses.replace(record, results=[record.results[0]],
                               attrs={**record.attrs, "benchmarks": ["PingPong"]})


def pingpong(record: RunRecord, **changes: Any) -> RunRecord:
    m = record.results[0]
    assert isinstance(m, Measurement)
    return dataclasses.replace(record, results=[dataclasses.replace(m, **changes)])


@pytest.mark.parametrize("path", [BEFF, BEFFIO])
def test_clean_files_pass(path: Path) -> None:
    assert strict.reasons(load(path)) == []


def test_a_clean_imb_run_passes() -> None:
    assert strict.reasons(clean()) == []


def test_the_time_out_row_fails_the_golden_run() -> None:
    found = strict.reasons(load(IMB))
    assert found == ["Sendrecv at 3 processes: time-out at 2 bytes"]
    assert strict.line(found) == "beff: strict: Sendrecv at 3 processes: time-out at 2 bytes"


@pytest.mark.parametrize("status", ["time-out", "out-of-mem", "failed"])
def test_every_ending_row_fails(status: str) -> None:
    record = pingpong(clean(), status=["ok", status, "skipped", "skipped"])
    assert strict.reasons(record) == [f"PingPong at 2 processes: {status} at 1 bytes"]


def test_corrupted_data_fails() -> None:
    record = pingpong(clean(), defects=np.array([0, 0, 3, 5]), checked=True)
    assert strict.reasons(record) == [
        "PingPong at 2 processes: --check found 8 corrupted bytes (sizes 2, 4)"]
    assert strict.reasons(pingpong(clean(), defects=np.zeros(4, dtype=np.int64),
                                   checked=True)) == []


def test_an_unsupported_benchmark_fails() -> None:
    record = pingpong(clean(), status=["unsupported"] * 4)
    assert strict.reasons(record) == ["PingPong at 2 processes: not measured (unsupported)"]


def test_a_requested_benchmark_without_a_result_fails() -> None:
    record = clean()
    record.attrs["benchmarks"] = ["PingPong", "Sendrecv"]
    assert strict.reasons(record) == ["Sendrecv: requested, not measured"]
    nothing = dataclasses.replace(record, results=[])
    assert strict.reasons(nothing) == ["PingPong: requested, not measured",
                                       "Sendrecv: requested, not measured"]


@pytest.mark.parametrize("status", ["failed", "running", "aborted", "incomplete"])
def test_a_run_that_is_not_complete_fails(status: str) -> None:
    record = clean()
    record.attrs["status"] = status
    assert strict.reasons(record) == [f"the run's status is {status!r}, not 'complete'"]


def test_oversubscription_voids_the_figures_and_one_node_does_not() -> None:
    record = clean()
    record.attrs["warnings"] = [warnings.ONE_NODE, warnings.CHECKED]
    assert strict.reasons(record) == []
    record.attrs["warnings"] = [warnings.OVERSUBSCRIBED, warnings.ONE_NODE]
    assert strict.reasons(record) == [f"warning: {warnings.OVERSUBSCRIBED}"]
    # a file that predates stored warnings: derived again from its placement
    del record.attrs["warnings"]
    record.attrs["placement"] = {**record.attrs.get("placement", {}), "oversubscribed": True}
    assert strict.reasons(record) == [f"warning: {warnings.OVERSUBSCRIBED}"]


@dataclasses.dataclass
class Typed:
    """A typed record as b_eff_io's: a failure, defects and stamp errors."""

    suite: str = "beffio"
    key: str = "beffio"
    failure: str = ""
    defects: Any = None
    errors: Any = None


def test_a_typed_records_failure_defects_and_errors_fail() -> None:
    attrs = {"status": "complete", "benchmarks": ["b_eff_io"]}
    assert strict.reasons(RunRecord(attrs=attrs, results=[Typed()])) == []
    assert strict.reasons(RunRecord(attrs=attrs, results=[Typed(
        defects=np.zeros((3, 1, 2)), errors=np.zeros((3, 1, 2)))])) == []
    bad = Typed(failure="disk full", defects=np.array([[1, 2]]), errors=np.array([4]))
    assert strict.reasons(RunRecord(attrs=attrs, results=[bad])) == [
        "beffio: failed (disk full)", "beffio: --check found 3 values read back wrong",
        "beffio: 4 errors (stamp mismatches or failed calls)"]
    assert strict.reasons(RunRecord(attrs=attrs)) == ["b_eff_io: requested, not measured"]


def test_the_line_says_three_reasons_and_counts_the_rest() -> None:
    found = [f"reason {i}" for i in range(5)]
    assert strict.line(found) == "beff: strict: reason 0; reason 1; reason 2; and 2 more"
    assert "\n" not in strict.line(found)
