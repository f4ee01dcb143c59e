"""Loop-length control and the 60-second rule (spec §8)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from beff.patterns.lengths import geometric_factor, message_lengths
from beff.patterns.looplength import (
    FirstLoop,
    best_method,
    elapsed_estimate,
    first_looplng,
    last_two_shortened,
    length_divisor,
    next_looplng,
    predict_last_two,
    warmup_iterations,
)
from beff.patterns.pattern import build_patterns

DATA = Path(__file__).resolve().parent.parent / "data" / "beff-3.6-reference"
LMAX = 524288  # the reference runs used 64 MiB per process


def test_first_looplng_from_the_calibration_pass() -> None:
    assert first_looplng(0.05) == FirstLoop(50, 100)
    assert first_looplng(0.0123) == FirstLoop(203, 406)  # int(10 * 0.5 / 0.0123) = 406
    # At least PRE_MSG_LOOPS = 10, so the 1-byte loop length is at least 5.
    assert first_looplng(1.0) == FirstLoop(5, 10)
    assert first_looplng(100.0) == FirstLoop(5, 10)
    assert first_looplng(0.05, time_per_loop=0.05) == FirstLoop(5, 10)  # SHORT
    assert first_looplng(1e-12).max_loops == 2**31 - 1
    with pytest.raises(ValueError):
        first_looplng(0.0)


def test_next_looplng_rule() -> None:
    # Halve per doubling of L, stretched to reach 0.5 s, capped by max_loops, at least 1.
    assert next_looplng(100, 0.5, 2.0, 1000) == 50
    assert next_looplng(100, 0.25, 2.0, 1000) == 100
    assert next_looplng(100, 0.01, 2.0, 1000) == 1000
    assert next_looplng(100, 0.01, 2.0, 300) == 300
    assert next_looplng(1, 2.0, 2.0, 300) == 1
    assert next_looplng(7, 0.5, 1.83401, 300) == 3  # int(3.8167...)
    assert next_looplng(7, 0.0, 2.0, 300) == 7  # no time: keep the previous value
    assert next_looplng(9, 1.0, 2.0, 300, time_per_loop=0.05) == 4


def test_length_divisor() -> None:
    a = geometric_factor(LMAX)
    assert length_divisor(1, a) == 2.0
    assert length_divisor(12, a) == 2.0
    assert length_divisor(13, a) == a


def test_60_second_rule_prediction() -> None:
    a = geometric_factor(LMAX)
    e = predict_last_two(3.5e-4, 1, 48, a, 3, 3)
    assert e == pytest.approx(3.5e-4 * 48 * 4 * (a + a * a) * 9)
    assert not last_two_shortened([e, e / 2, e])
    big = predict_last_two(0.02, 1, 48, a, 3, 3)
    assert big > 60
    assert last_two_shortened([1.0, big, 1.0])
    assert predict_last_two(0.02, 4, 48, a, 3, 3) == pytest.approx(big / 4)


def test_best_method_prefers_the_higher_index_on_ties() -> None:
    assert best_method([5.0, 7.0, 6.0], [True, True, True]) == 1
    assert best_method([5.0, 7.0, 7.0], [True, True, True]) == 2
    assert best_method([5.0, 9.0, 6.0], [True, False, True]) == 2
    assert best_method([9.0, 0.0, 0.0], [True, False, False]) == 0


def _looplng_tables(run: str) -> dict[int, list[list[tuple[int, float, float]]]]:
    """SECTION-LOOPLNGS: per method, per length row, per repetition (looplng, total, min)."""
    text = (DATA / run / "b_eff.prot").read_text()
    block = text[text.index("SECTION-LOOPLNGS-BEGIN"):text.index("SECTION-LOOPLNGS-END")]
    tables: dict[int, list[list[tuple[int, float, float]]]] = {}
    method = -1
    for line in block.splitlines():
        head = re.match(r"^method=(\d)", line)
        if head:
            method = int(head.group(1))
            tables[method] = []
            continue
        fields = re.findall(r"(\d+) (\S+) (\S+) (\S+)", line[11:])
        if re.match(r"^\s+\d+ ", line) and len(fields) == 3:
            tables[method].append([(int(n), float(t), float(tmin)) for n, t, tmin, _ in fields])
    return tables


def _bounds(printed: float) -> tuple[float, float]:
    """The interval that a %7.1e value stands for."""
    mantissa, exponent = f"{printed:.1e}".split("e")
    half = 0.05 * 10.0 ** int(exponent)
    return printed - half, printed + half


@pytest.mark.parametrize("run", ["np2-run1", "np2-run2", "np4"])
def test_reference_loop_lengths_follow_the_rule(run: str) -> None:
    tables = _looplng_tables(run)
    a = geometric_factor(LMAX)
    assert len(message_lengths(LMAX)) == 21
    decided = 0
    for rows in tables.values():
        assert len(rows) == 21
        for rep in range(3):
            first = rows[0][rep][0]
            max_loops_options = {2 * first, 2 * first + 1}
            for i in range(1, 21):
                n_prev, t_prev, _ = rows[i - 1][rep]
                lo, hi = _bounds(t_prev)
                # The rule falls monotonically with the time: the ends bound it.
                options = [next_looplng(n_prev, t, length_divisor(i, a), m)
                           for t in (lo, hi) for m in max_loops_options]
                if min(options) == max(options):
                    decided += 1
                    assert rows[i][rep][0] == options[0], (i, rep)
                else:
                    assert min(options) <= rows[i][rep][0] <= max(options), (i, rep)
    # Two-digit times decide many rows (most of them where loops are short, np4).
    assert decided >= 40


@pytest.mark.parametrize("run", ["np2-run1", "np4"])
def test_reference_runs_stayed_below_the_60_second_limit(run: str) -> None:
    tables = _looplng_tables(run)
    a = geometric_factor(LMAX)
    text = (DATA / run / "b_eff.prot").read_text()
    npat = len(re.findall(r"\d+=\S", text.split("Used patterns:")[1].split("\n\n")[0]))
    assert npat in (46, 48)
    for rep in range(3):
        predictions = [predict_last_two(_bounds(rows[18][rep][2])[1], rows[18][rep][0], npat,
                                        a, 3, 3) for rows in tables.values()]
        assert not last_two_shortened(predictions)
    # No row carries the M/R marks of a shortened run.
    assert "Explanation: M =" not in text


def test_elapsed_estimate() -> None:
    assert warmup_iterations(0) == 1 and warmup_iterations(17) == 1
    assert warmup_iterations(18) == 0 and warmup_iterations(20) == 0
    assert elapsed_estimate(1000, 1e6, 9, 2, 5) == pytest.approx(0.02)
    assert elapsed_estimate(1000, 1e6, 9, 2, 19) == pytest.approx(0.018)
    assert elapsed_estimate(1000, 0.0, 9, 2, 5) == 999990.0


def test_reference_elapsed_times() -> None:
    """The "(x.xxx s)" column of SECTION-VALUES: sum over repetitions of the estimate."""
    text = (DATA / "np4" / "b_eff.prot").read_text()
    block = text[text.index("SECTION-VALUES-BEGIN"):text.index("SECTION-VALUES-END")]
    tables = _looplng_tables("np4")
    patterns = build_patterns(4, seed=0)
    lengths = message_lengths(LMAX)
    index = method = -1
    checked = decided = 0
    for line in block.splitlines():
        m = re.match(r"^\s*(?:(\d+)\s+)?(?:mthd(\d)\s+)?p(\d\d) min=(.*?)-> .*\(([\d.]+) s\)",
                     line)
        if not m:
            continue
        if m.group(1):
            index = lengths.index(int(m.group(1)))
        if m.group(2) is not None:
            method = int(m.group(2))
        sr = patterns[int(m.group(3))].sr_count(0)
        estimates = []
        for shift in (-500.0, 0.0, 500.0):  # the printed MB/s carry three decimals
            total = 0.0
            for rep, tok in enumerate(m.group(4).split()):
                bw = max(float(tok) * 1e6 + shift, 1e-3)
                total += elapsed_estimate(lengths[index], bw, tables[method][index][rep][0],
                                          sr, index)
            estimates.append(total)
        printed = float(m.group(5))
        assert estimates[2] - 0.0005 <= printed <= estimates[0] + 0.0005, line
        checked += 1
        if f"{estimates[0]:5.3f}" == f"{estimates[2]:5.3f}":
            decided += 1
            assert f"{estimates[1]:5.3f}" == m.group(5), line
    assert checked == 21 * 3 * len(patterns) - 2 * 21
    assert decided > 0.4 * checked  # 1524 of 2982: the rest hang on 0.001 MB/s
