"""The Python API says the command line's messages in its own words (no MPI here: the
messages are those the layers below raise; tests/mpi/test_api.py raises them for real)."""

from __future__ import annotations

import pytest

from beff.api import in_api_words, unknown_option

OPTIONS = {"output": "pp.h5", "report": "r.html", "map": (4, 4)}


@pytest.mark.parametrize(("cli", "api"), [
    ("-o pp.h5: the file exists (an HDF5 file, perhaps an earlier result); use --force to "
     "replace it, or another name",
     "output='pp.h5': the file exists (an HDF5 file, perhaps an earlier result); use "
     "force=True to replace it, or another name"),
    ("-o: the result file name is empty", "output: the result file name is empty"),
    ("--report r.html: that is the result file (-o)",
     "report='r.html': that is the result file (output=)"),
    ("-map 4x4 needs 16 processes, the job has 2", "map=4x4 needs 16 processes, the job has 2"),
    ("--memory-per-proc must be at least 1 MiB, got 5 bytes",
     "memory_per_proc= must be at least 1 MiB, got 5 bytes"),
    ("message size 99 exceeds the largest length of -msglog, 2^3; raise -msglog or drop the "
     "size", "message size 99 exceeds the largest length of msglog_min=/msglog_max=, 2^3; "
     "raise msglog_min=/msglog_max= or drop the size"),
    ("--io-dir /tmp/nope: does not exist", "io_dir=/tmp/nope: does not exist"),
    # not flags of beff's: left as they are
    ("run with more ranks (mpiexec -n P)", "run with more ranks (mpiexec -n P)"),
    ("pip install --force-reinstall matplotlib", "pip install --force-reinstall matplotlib"),
    ("a time-out at /tmp/x-o/y-time", "a time-out at /tmp/x-o/y-time"),
])
def test_flags_become_arguments(cli: str, api: str) -> None:
    assert in_api_words(cli, OPTIONS, "mpi1") == api


def test_b_eff_io_flags_are_its_own() -> None:
    assert in_api_words("-N: at most 8 partition sizes, got 9", {}, "beffio") == \
        "partitions: at most 8 partition sizes, got 9"
    assert in_api_words("-T 5: too short", {}, "beffio") == "scheduled_time=5: too short"


def test_an_unknown_option_names_the_nearest() -> None:
    from beff.core import suite as suites

    mpi1 = suites.get("mpi1")
    assert unknown_option("msglog_mx", mpi1).startswith(
        "unknown option msglog_mx= (did you mean msglog_max=?)")
    assert "did you mean" not in unknown_option("zzz", mpi1)
    # an option IMB-EXT lacks is not offered for it
    assert "did you mean" not in unknown_option("syncc", suites.get("ext"))
