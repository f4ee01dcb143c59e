"""``beff map`` without mpirun: its help from the options' one declaration, and bad flags
refused before MPI starts (one line, exit 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.mpirun import beff

HEAVY = ("numpy", "h5py", "mpi4py", "numba")


def test_help_lists_every_option_with_its_default() -> None:
    r = beff("map", "--help", env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    words = " ".join(r.stdout.split())
    for flag in ("--per-node", "--all-ranks", "--shifts", "--seed", "--size", "--window",
                 "--latency-size", "--rounds", "--time", "--repetitions", "--threshold",
                 "--min-ratio", "--outliers", "--stall-timeout", "--format <table|json|csv|lines>"):
        assert flag in words, flag
    assert "Message size of the bandwidth samples (default 1 MiB)." in words
    assert "(default 60)" in words and "(default 8 B)" in words
    assert "auto (both, but none on a single node or an oversubscribed job" in words
    assert "(default auto)" in words


def test_list_names_the_suite_and_its_options() -> None:
    r = beff("list", "map")
    assert r.returncode == 0, r.stderr
    assert "map: network map" in r.stdout and "--min-ratio" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--time", "0"], "--time must be between 0.001 and 86400, got 0"),
    (["--size", "2GiB"], "--size must be between 1 and 1073741824, got 2147483648"),
    (["--size", "big"], "--size: not a size: 'big'"),
    (["--window", "0"], "--window must be between 1 and 1024, got 0"),
    (["--repetitions", "2"], "--repetitions must be between 3 and"),
    (["--per-node", "2", "--all-ranks"], "--per-node and --all-ranks exclude each other"),
    (["--outliers", "pairs"], "--outliers expects one of auto|both|bandwidth|latency|none, "
                              "got 'pairs'"),
    (["--min-ratio", "0.5"], "--min-ratio must be between 1 and"),
    (["--format", "imb"], "--format: beff map results come as table|json|csv|lines, not 'imb'"),
])
def test_bad_flags_are_one_line_and_exit_2_before_mpi(args: list[str], message: str) -> None:
    r = beff("map", *args)  # in-process: a command that started MPI would fail the test
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"beff: error: {message}"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_help_and_a_refused_flag_load_no_numerical_library() -> None:
    code = ("import sys\nfrom beff.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    for args in (["map", "--help"], ["map", "--time", "0"]):
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                              text=True, timeout=60)
        assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr
