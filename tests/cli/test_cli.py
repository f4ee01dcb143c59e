"""The CLI without mpirun (bad input under mpirun: tests/mpi/test_bad_input.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from tests.mpirun import beff, beff_subprocess

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden-schema-v1.h5"


def test_help_version_and_list_work_without_mpi() -> None:
    """The one smoke test of the installed command as a process of its own (the others call
    its main in-process)."""
    r = beff_subprocess("--help")
    assert r.returncode == 0 and "show" in r.stdout and "imb" in r.stdout
    r = beff_subprocess("--version")
    assert r.returncode == 0 and r.stdout.startswith("beff ")
    r = beff_subprocess("list")
    assert r.returncode == 0
    assert "PingPong" in r.stdout and "opt-in" in r.stdout and "default" in r.stdout


HEAVY = ("numpy", "h5py", "mpi4py", "numba", "scipy", "matplotlib")


@pytest.mark.parametrize(("args", "allowed"), [
    (["--help"], ()), (["--version"], ()), (["imb", "--help"], ()),
    (["imb", "mpi1", "-time", "nope"], ()), (["run", "--bogus"], ()),
    (["io", "-T", "0"], ()),
    # the benchmark declarations live beside their kernels, which need numpy
    (["list"], ("numpy",)), (["describe", "PingPong"], ("numpy",)),
])
def test_help_version_and_bad_flags_import_nothing_heavy(args: list[str],
                                                          allowed: tuple[str, ...]) -> None:
    """What answers at once (help, version, a refused flag) loads no numerical or MPI
    library: on a loaded node each costs seconds."""
    code = ("import sys\nfrom beff.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=60)
    loaded = proc.stderr.strip().splitlines()[-1]
    assert loaded == str(sorted(allowed)), proc.stderr


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("3", "3")])
def test_a_beff_process_starts_no_blas_threads(given: str | None, expected: str) -> None:
    """``beff`` sets OPENBLAS_NUM_THREADS=1 unless it is set: numpy's OpenBLAS then starts
    no thread pool (one thread a core, in every rank) when beff's modules load it."""
    code = ("import os, sys\nfrom beff.cli import main\nmain(['--version'])\n"
            "before = len(os.listdir('/proc/self/task'))\nimport numpy\n"
            "after = len(os.listdir('/proc/self/task'))\n"
            "print(os.environ['OPENBLAS_NUM_THREADS'], after - before, file=sys.stderr)")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)
    setting, started = proc.stderr.split()[-2:]
    assert setting == expected, proc.stderr
    if given is None:
        assert started == "0", proc.stderr


@pytest.mark.parametrize("args", [["imb", "mpi1", "-time", "nope"], ["imb", "--help"]])
def test_beff_imb_does_without_typer(args: list[str]) -> None:
    """``beff imb`` takes IMB's flags: its start (every IMB run's) skips typer's app."""
    code = ("import sys\nfrom beff.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\nprint('typer' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=60)
    assert proc.stderr.strip().splitlines()[-1] == "False", proc.stderr


def test_describe_says_what_is_timed() -> None:
    r = beff("describe", "pingpong")
    assert r.returncode == 0
    assert "half round trip" in r.stdout or "/ 2" in r.stdout
    assert beff("describe", "NoSuchThing").returncode == 2


@pytest.mark.parametrize("fmt,needle", [
    ("table", "PingPong"), ("imb", "# Benchmarking PingPong"), ("json", '"benchmark": "PingPong"'),
    ("csv", "mpi1,PingPong,2,1,all,0,1000"),
])
def test_show_renders_a_stored_file(fmt: str, needle: str) -> None:
    r = beff("show", str(GOLDEN), "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert needle in r.stdout


@pytest.mark.parametrize("fmt", ["table", "imb", "json", "csv"])
def test_show_of_a_file_lacking_a_declared_metric_leaves_its_columns_empty(fmt: str) -> None:
    """The schema-2 golden file's Overlap group stores t_CPU, not the t_cpu its overlap columns
    compute from: those columns are empty, the rest of the file is shown."""
    r = beff("show", str(DATA / "golden-schema-v2-imb.h5"), "--format", fmt,
             env={"COLUMNS": "200"})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "Sendrecv" in r.stdout and "Overlap" in r.stdout


def test_show_tells_hosts_and_intra_inter_labels() -> None:
    r = beff("show", str(GOLDEN))
    assert "hostA" in r.stdout and "hostB" in r.stdout and "intra-node" in r.stdout


def test_show_rejects_a_missing_file(tmp_path: Path) -> None:
    r = beff("show", str(tmp_path / "nope.h5"))
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_bad_input_without_mpirun() -> None:
    r = beff("imb", "mpi1", "-iter", "abc")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_compare_two_files_without_mpi(tmp_path: Path) -> None:
    r = beff("compare", str(GOLDEN), str(GOLDEN))
    assert r.returncode == 0, r.stderr
    assert "PingPong" in r.stdout and "1.000" in r.stdout
    assert "geometric mean of B/A over 6 sizes: 1.000" in r.stdout
    r = beff("compare", str(GOLDEN), str(tmp_path / "missing.h5"))
    assert r.returncode == 2 and "Traceback" not in r.stderr


DATA = GOLDEN.parent
BEFF_GOLDEN = DATA / "golden-schema-v2-beff.h5"


def test_help_at_80_columns_shows_every_option_whole() -> None:
    r = beff("run", "--help", env={"COLUMNS": "80"})
    assert r.returncode == 0
    for flag in ("--memory-per-proc", "--extra-methods-in-beff", "--time-per-loop",
                 "--stall-timeout", "--backend", "--force"):
        assert flag in r.stdout, flag
    assert "--format <table|sum|json|csv|lines>" in r.stdout  # only what b_eff renders
    assert "…" not in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80


@pytest.mark.parametrize("args, message", [
    (["run", "--bogus"], "beff: error: No such option: --bogus (see `beff run --help`)"),
    (["frobnicate"], "beff: error: No such command 'frobnicate'. (see `beff --help`)"),
    (["show", str(GOLDEN), "--format", "xml"],
     "beff: error: --format: IMB mpi1 results come as table|imb|json|csv|lines, not 'xml'"),
    (["show", str(BEFF_GOLDEN), "--format", "imb"],
     "beff: error: --format: b_eff results come as table|sum|json|csv|lines, not 'imb'"),
    (["run", "--format", "imb"],
     "beff: error: --format: b_eff results come as table|sum|json|csv|lines, not 'imb'"),
    (["compare", str(GOLDEN)], "beff: error: Missing argument 'second'."),
])
def test_parse_errors_are_one_line(args: list[str], message: str) -> None:
    r = beff(*args)
    assert r.returncode == 2
    assert r.stderr.startswith(message) and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_imb_habits_list_and_help() -> None:
    listed = beff("-list")
    assert listed.returncode == 0 and "PingPong" in listed.stdout
    helped = beff("-help")
    assert helped.returncode == 0 and "Usage: beff" in helped.stdout


def test_show_of_a_b_eff_file_in_every_format() -> None:
    imb = beff("show", str(BEFF_GOLDEN), "--format", "sum")
    assert imb.returncode == 0
    assert "accumulated |      2" in imb.stdout and imb.stdout.rstrip().splitlines()[-1]\
        .startswith("b_effSHORT = ")
    csv = beff("show", str(BEFF_GOLDEN), "--format", "csv").stdout.splitlines()
    assert csv[0] == "bytes,b_eff_MBps,ring_MBps,random_MBps,b_eff_per_process_MBps"
    assert [row.split(",")[0] for row in csv[1:]] == ["1", "1024", "131072"]
    table = beff("show", str(BEFF_GOLDEN), env={"COLUMNS": "60"}).stdout
    final = [ln for ln in table.splitlines() if ln.startswith("b_effSHORT = ")]
    assert len(final) == 1 and final[0].endswith("on Linux golden 6 #1 x86_64")  # unwrapped


def test_compare_b_eff_files_warns_and_says_which_is_better(tmp_path: Path) -> None:
    other = tmp_path / "other.h5"
    shutil.copy(BEFF_GOLDEN, other)
    with h5py.File(other, "a") as f:
        f["beff"].attrs["memory_per_proc"] = 32 << 20
        f["beff"].attrs["short"] = False
        f["beff/bw_min"][...] = f["beff/bw_min"][()] * 2  # twice the bandwidth
    r = beff("compare", str(BEFF_GOLDEN), str(other), env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert "memory per process differs: 16 MiB vs 32 MiB" in r.stdout
    assert "mode differs: b_effSHORT vs b_eff" in r.stdout
    same = beff("compare", str(BEFF_GOLDEN), str(BEFF_GOLDEN), env={"COLUMNS": "200"})
    assert same.returncode == 0 and "differs" not in same.stdout
    rows = {ln.split("│")[1].strip(): ln for ln in r.stdout.splitlines() if ln.count("│") > 4}
    assert "2.000" in rows["b_eff_MBps"] and "better" in rows["b_eff_MBps"]
    assert "0.500" in rows["pingpong_latency_us"] and "better" in rows["pingpong_latency_us"]


def test_compare_refuses_a_b_eff_file_against_an_imb_file() -> None:
    r = beff("compare", str(BEFF_GOLDEN), str(GOLDEN))
    assert r.returncode == 2 and "(b_eff) with golden-schema-v1.h5 (IMB mpi1)" in r.stderr
    assert "check mode differs" not in r.stdout + r.stderr


def test_shared_options_are_declared_once() -> None:
    """--timeout, --backend ... read the same in `beff run --help` and `beff io --help`, and
    `beff imb` parses and refuses them alike (one declaration: RunConfig's rules)."""
    run_help = beff("run", "--help", env={"COLUMNS": "200"}).stdout
    io_help = beff("io", "--help", env={"COLUMNS": "200"}).stdout
    imb_help = beff("imb", "--help").stdout
    for text in (run_help, io_help):
        words = " ".join(text.split())
        assert "--timeout SECS Abort the whole job after this many seconds." in words
        assert ("--backend <auto|jit|python> Timed loops: jit (compiled with numba), python, "
                "or auto (jit when it works) (default auto).") in words
    assert "--timeout SECS: abort the whole job after this many seconds" in imb_help
    for cmd in (["run"], ["io"], ["imb", "mpi1"]):
        r = beff(*cmd, "--backend", "fast")
        assert r.returncode == 2 and "--backend expects one of auto|jit|python" in r.stderr, cmd


def test_imb_without_a_suite_and_list_after_one() -> None:
    r = beff_subprocess("imb")  # a process of its own: this one has the toy plug-in loaded
    assert r.returncode == 2
    assert r.stderr.strip() == ("beff: error: beff imb needs a suite: mpi1, nbc, mpi4, ext, "
                                "rma, p2p, mt, io (see `beff imb --help`)")
    listed = beff("imb", "nbc", "-list")
    assert listed.returncode == 0 and "Ibcast" in listed.stdout and "PingPong" not in \
        listed.stdout


def test_show_of_a_directory_or_another_file_is_one_line(tmp_path: Path) -> None:
    for target, reason in ((tmp_path, "it is a directory"),
                           (Path(__file__), "file signature not found")):
        r = beff("show", str(target))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert r.stderr.startswith(f"beff: error: cannot read {target}: ") and reason in \
            r.stderr


def test_output_must_be_a_regular_file_before_mpi_starts() -> None:
    for cmd in (["imb", "mpi1", "PingPong"], ["run", "--quick"], ["io", "--quick"]):
        r = beff(*cmd, "-o", "/dev/null", "--force")  # no launcher: refused before MPI_Init
        assert r.returncode == 2, (cmd, r.stderr)
        assert r.stderr.strip() == ("beff: error: -o /dev/null: not a regular file (a device, "
                                    "pipe or socket); give a file name")
