"""Message-length schedules and IMB's repetition rules."""

import pytest

from beff.bench import schedule
from beff.cli.options import parse_imb
from beff.core import suite as suites
from beff.core.errors import UsageError


def test_default_imb_schedule_is_zero_then_powers_of_two() -> None:
    sizes = schedule.imb_lengths(0, 22)
    assert sizes[:4] == [0, 1, 2, 4]
    assert sizes[-1] == 4194304
    assert len(sizes) == 24


def test_msglog_3_7_matches_the_guide_example() -> None:
    assert schedule.imb_lengths(3, 7) == [0, 8, 16, 32, 64, 128]


def test_reduction_sizes_are_rounded_to_the_float_size() -> None:
    assert schedule.imb_lengths(0, 4, unit=4) == [0, 4, 8, 16]
    assert schedule.imb_lengths(2, 2, unit=4) == [0, 4]
    # below one element everything rounds to 0: one row, as IMB prints (not 0 twice)
    assert schedule.imb_lengths(0, 1, unit=4) == [0]
    assert schedule.imb_lengths(0, 1, zero_size=False, unit=4) == [0]


def test_zero_size_off_drops_the_zero_row() -> None:
    assert schedule.imb_lengths(0, 2, zero_size=False) == [1, 2, 4]


def test_user_lengths_are_clamped_and_rounded_up() -> None:
    assert schedule.user_lengths([3, 5, 1 << 23], 22, unit=4) == [4, 8, 1 << 22]


@pytest.mark.parametrize("text,expected", [("4", (0, 4)), ("3:7", (3, 7)), ("0:0", (0, 0)),
                                           ("31:34", (31, 34))])
def test_parse_msglog(text: str, expected: tuple[int, int]) -> None:
    parsed = parse_imb(suites.get("mpi1"), ["-msglog", text])
    assert (parsed["msglog_min"], parsed["msglog_max"]) == expected


@pytest.mark.parametrize("text", ["9:3", "a", "1:2:3", "0:35", "-1:4"])
def test_parse_msglog_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_imb(suites.get("mpi1"), ["-msglog", text])


def test_msglen_file_with_comments_and_suffixes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "lens"
    f.write_text("# sizes\n0\n1k\n2M\n\n100\n")
    assert schedule.read_msglen_file(str(f)) == [0, 1024, 2 << 20, 100]


def test_msglen_file_rejects_garbage(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "lens"
    f.write_text("12\nbig\n")
    with pytest.raises(UsageError):
        schedule.read_msglen_file(str(f))


@pytest.mark.parametrize("nbytes,expected", [(0, 1000), (1024, 1000), (32768, 1000),
                                             (65536, 640), (1 << 20, 40), (4 << 20, 10)])
def test_initial_repetitions_follow_overall_volume(nbytes: int, expected: int) -> None:
    assert schedule.initial_repetitions(nbytes, 1000, 40 << 20, "dynamic") == expected


def test_policy_off_has_no_volume_cap() -> None:
    assert schedule.initial_repetitions(4 << 20, 1000, 40 << 20, "off") == 1000


def test_multiple_np_is_a_multiple_of_the_process_count() -> None:
    for np_ in (2, 3, 4, 7):
        for x in (0, 1024, 1 << 20, 4 << 20):
            n = schedule.initial_repetitions(x, 1000, 40 << 20, "multiple_np", np_, 22)
            assert n % np_ == 0 and n >= np_
    # The hyperbola: 1000 * M / (NP * max(X, 4) + M) with M = 2^22, rounded, minus remainder.
    assert schedule.initial_repetitions(1 << 22, 1000, 40 << 20, "multiple_np", 2, 22) == 332


def test_calibration_and_time_limited_counts() -> None:
    assert schedule.calibration_test_count(1e-6) == 1000
    assert schedule.calibration_test_count(0.01) == 100
    assert schedule.calibration_test_count(2.0) == 1
    assert schedule.time_limited_count(1000, 0.5, 0.01) == 51
    assert schedule.time_limited_count(1000, 0.5, 0.0) == 1000


def test_monotone_count_never_grows_with_size() -> None:
    history = [(1024, 100), (16, 500)]
    assert schedule.monotone_count(800, 4096, history) == 100
    assert schedule.monotone_count(50, 8, history) == 500


@pytest.mark.parametrize("n,expected", [(1000, 100), (99, 9), (10, 1), (5, 1), (2, 1), (1, 0),
                                        (150, 15)])
def test_warmup_iterations(n: int, expected: int) -> None:
    assert schedule.warmup_iterations(n) == expected


def test_time_budget_counts_the_msglog_range() -> None:
    assert schedule.time_budget(0, 0, 20, 0.5) == pytest.approx(9.5)
    assert schedule.time_budget(3, 0, 22, 1.0) == pytest.approx(21.0)
    assert schedule.time_budget(0, 2, 2, 1.0) == pytest.approx(1.0)


@pytest.mark.parametrize("P,npmin,even,expected", [
    (4, 2, False, [2, 4]), (3, 2, False, [2, 3]), (1, 2, False, [1]), (8, 3, False, [3, 6, 8]),
    (4, 8, False, [4]), (5, 2, True, [2, 4]), (3, 1, True, [2]), (1, 2, True, []),
])
def test_process_counts(P: int, npmin: int, even: bool, expected: list[int]) -> None:
    assert schedule.process_counts(P, npmin, even) == expected
