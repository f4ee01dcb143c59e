"""The bad-input matrix: each case exits 2 on every rank, within seconds, with exactly one
line on stderr, no traceback, and no file left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mpirun import is_open_mpi_cached, launcher, mpi_env

pytestmark = pytest.mark.mpi
IMB = ["imb", "mpi1"]
RUN = ["run", "--quick", "--memory-per-proc", "16MiB"]
# {tmp} is the case's own empty directory; files the case needs are made there first.
CASES: list[tuple[str, list[str]]] = [
    ("msglog reversed", [*IMB, "-msglog", "9:3"]),
    ("msglog text", [*IMB, "-msglog", "x"]),
    ("msglog too big", [*IMB, "-msglog", "40"]),
    ("npmin 0", [*IMB, "-npmin", "0"]),
    ("npmin text", [*IMB, "-npmin", "two"]),
    ("iter 0", [*IMB, "-iter", "0"]),
    ("iter huge", [*IMB, "-iter", "99999999999999999999", "-iter_policy", "off"]),
    ("time 0", [*IMB, "-time", "0"]),
    ("time negative", [*IMB, "-time", "-1"]),
    ("time 1e308", [*IMB, "-time", "1e308"]),
    ("time inf", [*IMB, "-time", "inf"]),
    ("time nan", [*IMB, "-time", "nan"]),
    ("mem 0", [*IMB, "-mem", "0"]),
    ("multi 2", [*IMB, "-multi", "2"]),
    ("map 0x2", [*IMB, "-map", "0x2"]),
    ("map too big", [*IMB, "-map", "3x3"]),
    ("off_cache text", [*IMB, "-off_cache", "a"]),
    ("window 0", [*IMB, "-window_size", "0"]),
    ("data type", [*IMB, "-data_type", "quad"]),
    ("red data type", [*IMB, "-red_data_type", "byte"]),
    ("iter_policy", [*IMB, "-iter_policy", "fast"]),
    ("thread level", [*IMB, "-thread_level", "bogus"]),
    ("sync", [*IMB, "-sync", "maybe"]),
    ("msglen missing", [*IMB, "-msglen", "{tmp}/none.txt"]),
    ("msglen not utf-8", [*IMB, "-msglen", "{tmp}/latin.txt"]),
    ("input missing", [*IMB, "-input", "{tmp}/none.txt"]),
    ("input not utf-8", [*IMB, "-input", "{tmp}/latin.txt"]),
    ("unknown benchmark", [*IMB, "Frobnicate"]),
    ("empty name", [*IMB, ""]),
    ("unknown include", [*IMB, "-include", "Frob"]),
    ("nothing left", [*IMB, "PingPong", "-exclude", "PingPong"]),
    ("format", [*IMB, "--format", "xml"]),
    ("batches 0", [*IMB, "--batches", "0"]),
    ("batches huge", [*IMB, "--batches", "1000000000"]),
    ("backend", [*IMB, "--backend", "turbo"]),
    ("output dir missing", [*IMB, "-o", "{tmp}/none/x.h5"]),
    ("output is a dir", [*IMB, "-o", "{tmp}"]),
    ("output empty", [*IMB, "-o", ""]),
    ("output exists", [*IMB, "-o", "{tmp}/notes.txt"]),
    ("output is the config", [*IMB, "--config", "{tmp}/good.toml", "-o", "{tmp}/good.toml"]),
    ("config missing", [*IMB, "--config", "{tmp}/none.toml"]),
    ("config syntax", [*IMB, "--config", "{tmp}/broken.toml"]),
    ("config not utf-8", [*IMB, "--config", "{tmp}/latin.txt"]),
    ("config bad value", [*IMB, "--config", "{tmp}/fast.toml"]),
    ("msgsize above 16 GiB", [*IMB, "-msgsize", "17179869185", "PingPong"]),
    ("msgsize above -msglog", [*IMB, "-msglog", "4", "-msgsize", "1024", "PingPong"]),
    ("msgsize text", [*IMB, "-msgsize", "x"]),
    ("msglen and msgsize", [*IMB, "-msglen", "{tmp}/lens.txt", "-msgsize", "8"]),
    ("unknown imb option", [*IMB, "--bogus"]),
    ("unknown suite", ["imb", "mpi9"]),
    ("unknown command", ["frobnicate"]),
    ("run memory text", [*RUN[:2], "--memory-per-proc", "lots"]),
    ("run memory small", [*RUN[:2], "--memory-per-proc", "512k"]),
    ("run memory 1e400", [*RUN[:2], "--memory-per-proc", "1e400"]),
    ("run methods", [*RUN, "--methods", "carrier-pigeon"]),
    ("run time per loop", [*RUN, "--time-per-loop", "inf"]),
    ("run seed text", [*RUN, "--seed", "abc"]),
    ("run seed negative", [*RUN, "--seed", "-3"]),
    ("run unknown option", [*RUN, "--bogus"]),
    ("run thread level", [*RUN, "--thread-level", "bogus"]),
    ("run format", [*RUN, "--format", "imb"]),
    ("run timeout", [*RUN, "--timeout", "0"]),
    ("run config memory", ["run", "--config", "{tmp}/tiny.toml", "--quick"]),
    ("run config format", ["run", "--config", "{tmp}/sumless.toml", "--quick"]),
    ("imb config format", [*IMB, "--config", "{tmp}/sum.toml"]),
    ("imb without suite", ["imb"]),
]
AT_1_AND_4 = {"msglog reversed", "config bad value", "run config memory", "output exists",
              "unknown benchmark", "run seed text"}
FILES = {
    "latin.txt": b"PingPong\n# caf\xe9\n",
    "lens.txt": b"8\n",
    "notes.txt": b"keep me\n",
    "good.toml": b"time = 1.0\n",
    "broken.toml": b"time = [\n",
    "fast.toml": b'time = "fast"\n',
    "tiny.toml": b"memory_per_proc = 1\n",
    "sumless.toml": b'format = "imb"\n',  # b_eff renders sum, not IMB's text
    "sum.toml": b'format = "sum"\n',  # IMB renders imb, not a .sum
}


def _run(nprocs: int, args: list[str], tmp: Path) -> tuple[dict[int, int], str, float]:
    """Launch under mpiexec; each rank's own exit code is written by a shell around it."""
    for name, data in FILES.items():
        (tmp / name).write_bytes(data)
    before = set(os.listdir(tmp))
    argv = [a.replace("{tmp}", str(tmp)) for a in args]
    script = ('"$0" -m beff "$@"; rc=$?; '
              'echo $rc > "$BEFF_RC_DIR/rc.${PMI_RANK:-$OMPI_COMM_WORLD_RANK}"; exit $rc')
    cmd = [launcher(), "-n", str(nprocs)]
    if is_open_mpi_cached():
        cmd.append("--oversubscribe")
    rc_dir = tmp.parent / f"{tmp.name}-rc"
    rc_dir.mkdir()
    start = time.monotonic()
    proc = subprocess.run([*cmd, "sh", "-c", script, sys.executable, *argv], cwd=tmp,
                          capture_output=True, text=True, timeout=60,
                          env=mpi_env({"BEFF_RC_DIR": str(rc_dir)}))
    elapsed = time.monotonic() - start
    codes = {int(p.name.split(".")[1]): int(p.read_text()) for p in rc_dir.iterdir()}
    assert set(os.listdir(tmp)) == before, "files left behind"
    assert (tmp / "notes.txt").read_bytes() == FILES["notes.txt"]
    return codes, proc.stderr, elapsed


def _params() -> list[object]:
    out: list[object] = [pytest.param(2, args, id=f"np2-{name}") for name, args in CASES]
    out += [pytest.param(n, args, id=f"np{n}-{name}") for name, args in CASES
            if name in AT_1_AND_4 for n in (1, 4)]
    return out


@pytest.mark.parametrize("nprocs, args", _params())
def test_bad_input_exits_2_everywhere_with_one_line(nprocs: int, args: list[str],
                                                     tmp_path: Path) -> None:
    case = tmp_path / "case"
    case.mkdir()
    codes, stderr, elapsed = _run(nprocs, args, case)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if is_open_mpi_cached():
        # prterun ends the other ranks as soon as one exits non-zero (they wait a moment so
        # that rank 0's line gets out first) and adds a box of its own: every rank that got
        # to exit said 2, rank 0 among them, and beff printed one line.
        assert codes.get(0) == 2 and set(codes.values()) == {2}, (codes, stderr)
        lines = [ln for ln in lines if ln.startswith("beff")]
    else:
        assert codes == dict.fromkeys(range(nprocs), 2), (codes, stderr)
    assert len(lines) == 1 and lines[0].startswith("beff: error: "), stderr
    assert "Traceback" not in stderr
    assert elapsed < 20  # about 1-3 s on a quiet 2-core machine
