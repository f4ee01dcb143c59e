"""The bad-input matrix of every command: each case exits 2 on every rank, with exactly one
line on stderr (rank 0's, naming what is wrong), no traceback, and no file left behind.

Where a case is refused decides how it runs:

* before MPI_Init (every rank parses the same command line and refuses it alike): in this
  process, through :func:`beff.cli.main`, as rank 0 (its one line) and as another rank
  (silent);
* after MPI_Init (rank 0 decides and broadcasts): under mpiexec, every such case of one
  process count in one launch (tests/mpi/usage_script.py), each rank catching its exit
  (the cases the session selected: ``-m openmpi`` runs IMB-MT's alone).

Which applies is found out, not declared: a case whose command would start MPI in this
process goes to the launch. Two real launches at 4 ranks, one case of each kind, prove that
every rank's own process exits with 2, within seconds.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.mpirun import (
    StartsMPI,
    beff_in_process,
    is_open_mpi_cached,
    launch_prefix,
    mpi_env,
    run_job,
)

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
IMB = ["imb", "mpi1"]
RUN = ["run", "--quick", "--memory-per-proc", "16MiB"]
MAP = ["map", "--size", "16KiB", "--window", "2", "--rounds", "5", "--repetitions", "3",
       "--time", "5"]
BEFFIO = ["io", "--quick", "-o", "{tmp}/x.h5"]


def _map_samples() -> int:
    """--repetitions whose samples (2 ranks, 1 shift, 3 figures x 8 B) outgrow this host's
    memory on rank 0."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 48 + 1


# (name, command line, what rank 0's line must say, process counts). {tmp} is the case's own
# directory, holding FILES.
CASES: list[tuple[str, list[str], str, tuple[int, ...]]] = [
    ("msglog reversed", [*IMB, "-msglog", "9:3"], "-msglog", (1, 2, 4)),
    ("msglog text", [*IMB, "-msglog", "x"], "-msglog", (2,)),
    ("msglog too big", [*IMB, "-msglog", "40"], "-msglog", (2,)),
    ("npmin 0", [*IMB, "-npmin", "0"], "-npmin", (2,)),
    ("npmin text", [*IMB, "-npmin", "two"], "-npmin", (2,)),
    ("iter 0", [*IMB, "-iter", "0"], "-iter", (2,)),
    ("iter text", [*IMB, "-iter", "abc", "PingPong"], "-iter", (2,)),
    ("iter huge", [*IMB, "-iter", "99999999999999999999", "-iter_policy", "off"], "-iter",
     (2,)),
    ("time 0", [*IMB, "-time", "0"], "-time", (2,)),
    ("time negative", [*IMB, "-time", "-1"], "-time", (2,)),
    ("time 1e308", [*IMB, "-time", "1e308"], "-time", (2,)),
    ("time inf", [*IMB, "-time", "inf"], "-time", (2,)),
    ("time nan", [*IMB, "-time", "nan"], "-time", (2,)),
    ("mem 0", [*IMB, "-mem", "0"], "-mem", (2,)),
    ("multi 2", [*IMB, "-multi", "2"], "-multi", (2,)),
    ("map 0x2", [*IMB, "-map", "0x2"], "-map", (2,)),
    ("map too big", [*IMB, "-map", "3x3"], "-map", (2, 4)),
    ("off_cache text", [*IMB, "-off_cache", "a"], "-off_cache", (2,)),
    ("window 0", [*IMB, "-window_size", "0"], "-window_size", (2,)),
    ("data type", [*IMB, "-data_type", "quad"], "-data_type", (2,)),
    ("red data type", [*IMB, "-red_data_type", "byte"], "-red_data_type", (2,)),
    ("iter_policy", [*IMB, "-iter_policy", "fast"], "-iter_policy", (2,)),
    ("thread level", [*IMB, "-thread_level", "bogus"], "-thread_level", (2,)),
    ("sync", [*IMB, "-sync", "maybe"], "-sync", (2,)),
    ("msglen missing", [*IMB, "-msglen", "{tmp}/none.txt"], "-msglen", (2,)),
    ("msglen not utf-8", [*IMB, "-msglen", "{tmp}/latin.txt"], "-msglen", (2,)),
    ("input missing", [*IMB, "-input", "{tmp}/none.txt"], "-input", (2,)),
    ("input not utf-8", [*IMB, "-input", "{tmp}/latin.txt"], "-input", (2,)),
    ("unknown benchmark", [*IMB, "Frobnicate"], "unknown benchmark 'Frobnicate'", (1, 2, 4)),
    ("empty name", [*IMB, ""], "benchmark name", (2,)),
    ("unknown include", [*IMB, "-include", "Frob"], "'Frob'", (2,)),
    ("nothing left", [*IMB, "PingPong", "-exclude", "PingPong"], "no benchmark left", (2,)),
    ("format", [*IMB, "--format", "xml"], "--format", (2,)),
    ("batches 0", [*IMB, "--batches", "0"], "--batches", (2,)),
    ("batches huge", [*IMB, "--batches", "1000000000"], "--batches", (2,)),
    ("backend", [*IMB, "--backend", "turbo"], "--backend", (2,)),
    ("output dir missing", [*IMB, "-o", "{tmp}/none/x.h5"], "output directory", (2,)),
    ("output is a dir", [*IMB, "-o", "{tmp}"], "is a directory", (2,)),
    ("output empty", [*IMB, "-o", ""], "-o", (2,)),
    ("output exists", [*IMB, "-o", "{tmp}/notes.txt"], "notes.txt", (1, 2, 4)),
    ("output is the config", [*IMB, "--config", "{tmp}/good.toml", "-o", "{tmp}/good.toml"],
     "good.toml", (2,)),
    ("config missing", [*IMB, "--config", "{tmp}/none.toml"], "none.toml", (2,)),
    ("config syntax", [*IMB, "--config", "{tmp}/broken.toml"], "broken.toml", (2,)),
    ("config not utf-8", [*IMB, "--config", "{tmp}/latin.txt"], "latin.txt", (2,)),
    ("config bad value", [*IMB, "--config", "{tmp}/fast.toml"], "time", (1, 2, 4)),
    ("msgsize above 16 GiB", [*IMB, "-msgsize", "17179869185", "PingPong"], "-msgsize", (2,)),
    ("msgsize above -msglog", [*IMB, "-msglog", "4", "-msgsize", "1024", "PingPong"],
     "message size 1024 exceeds", (2,)),
    ("msgsize text", [*IMB, "-msgsize", "x"], "-msgsize", (2,)),
    ("msglen and msgsize", [*IMB, "-msglen", "{tmp}/lens.txt", "-msgsize", "8"],
     "-msglen and -msgsize", (2,)),
    ("unknown imb option", [*IMB, "--bogus"], "--bogus", (2,)),
    ("unknown suite", ["imb", "mpi9"], "mpi9", (2,)),
    ("unknown command", ["frobnicate"], "frobnicate", (2,)),
    ("imb without suite", ["imb"], "needs a suite", (2,)),
    ("io flag in mpi1", [*IMB, "--io-dir", "{tmp}", "PingPong"], "--io-dir", (1,)),
    ("ext lacks data type", ["imb", "ext", "-data_type", "int", "-o", "{tmp}/x.h5"],
     "-data_type is not an option of IMB-EXT", (2,)),
    # IMB-IO
    ("io dir missing", ["imb", "io", "--io-dir", "{tmp}/missing", "S_Write_Indv", "-o",
                        "{tmp}/x.h5"], "does not exist", (2,)),
    ("io dir is a file", ["imb", "io", "--io-dir", "{tmp}/notes.txt", "S_Write_Indv", "-o",
                          "{tmp}/x.h5"], "is not a directory", (2,)),
    ("io hint without value", ["imb", "io", "--io-dir", "{tmp}", "--hint", "novalue"],
     "expected key=value", (1,)),
    # IMB-P2P and IMB-MT
    ("p2p npmin", ["imb", "p2p", "-npmin", "2", "-o", "{tmp}/x.h5"],
     "-npmin is not an option of IMB-P2P", (2,)),
    ("p2p msglen missing", ["imb", "p2p", "-msglen", "{tmp}/none.txt", "-o", "{tmp}/x.h5"],
     "-msglen: cannot read", (2,)),
    ("p2p msglen and msglog", ["imb", "p2p", "-msglen", "{tmp}/sizes.txt", "-msglog", "3",
                               "-o", "{tmp}/x.h5"],
     "-msglen and -msglog cannot be combined", (2,)),
    ("mt thread level", ["imb", "mt", "-thread_level", "single", "-o", "{tmp}/x.h5"],
     "IMB-MT runs under -thread_level multiple only", (2,)),
    ("mt check char", ["imb", "mt", "-datatype", "char", "-check", "on", "-o", "{tmp}/x.h5"],
     "-check: only -datatype int can be checked", (2,)),
    ("mt msglog", ["imb", "mt", "-msglog", "3", "-o", "{tmp}/x.h5"],
     "-msglog is not an option of IMB-MT", (2,)),
    # b_eff
    ("run at one rank", RUN, "at least 2 processes", (1,)),
    ("run memory text", [*RUN[:2], "--memory-per-proc", "lots"], "--memory-per-proc", (2,)),
    ("run memory small", [*RUN[:2], "--memory-per-proc", "512k"],
     "--memory-per-proc must be between 1 MiB and", (2,)),
    ("run memory 1e400", [*RUN[:2], "--memory-per-proc", "1e400"], "--memory-per-proc", (2,)),
    ("run methods", [*RUN, "--methods", "carrier-pigeon"], "--methods", (2,)),
    ("run time per loop", [*RUN, "--time-per-loop", "inf"],
     "--time-per-loop expects a finite number", (2,)),
    ("run time per loop negative", [*RUN, "--time-per-loop", "-1"], "--time-per-loop", (2,)),
    ("run seed text", [*RUN, "--seed", "abc"], "--seed", (2,)),
    ("run seed negative", [*RUN, "--seed", "-3"], "--seed must be between 0 and", (2,)),
    ("run unknown option", [*RUN, "--bogus"], "--bogus", (2,)),
    ("run thread level", [*RUN, "--thread-level", "bogus"], "--thread-level", (2,)),
    ("run format", [*RUN, "--format", "imb"], "--format", (2,)),
    ("run timeout", [*RUN, "--timeout", "0"], "--timeout", (2,)),
    ("run output dir missing", [*RUN, "-o", "{tmp}/none/x.h5"], "output directory", (2,)),
    ("run config memory", ["run", "--config", "{tmp}/tiny.toml", "--quick"],
     "memory_per_proc (from", (1, 2, 4)),
    ("run config format", ["run", "--config", "{tmp}/sumless.toml", "--quick"], "format",
     (2,)),
    ("imb config format", [*IMB, "--config", "{tmp}/sum.toml"], "format", (2,)),
    # b_eff_io
    ("beffio partition", [*BEFFIO, "-N", "3"], "-N: partition size 3", (2,)),
    ("beffio partition text", [*BEFFIO, "-N", "1,x"], "-N: expected comma-separated", (2,)),
    ("beffio dir missing", [*BEFFIO, "--dir", "{tmp}/missing"], "missing", (2,)),
    ("beffio T 0", [*BEFFIO, "-T", "0"], "-T", (2,)),
    ("beffio memory", [*BEFFIO, "--memory-per-proc", "12parsecs"], "not a size", (2,)),
    # beff map
    ("map at one rank", [*MAP, "--all-ranks", "-o", "{tmp}/x.h5"],
     "beff map needs at least 2 processes (P = 1 has no pair)", (1,)),
    ("map one rank per node", [*MAP, "-o", "{tmp}/x.h5"],
     "beff map needs at least 2 ranks to map, got 1 (1 rank(s) per node; 2 rank(s) on 1 "
     "node(s))", (2,)),
    ("map buffers", [*MAP, "--all-ranks", "--size", "1GiB", "--window", "1024", "-o",
                     "{tmp}/x.h5"],
     "--size 1 GiB with --window 1024 needs 2048.0 GiB of buffers per mapped rank, 2 on ",
     (2,)),
    *([("map samples", [*MAP, "--all-ranks", "--repetitions", str(_map_samples()), "-o",
                         "{tmp}/x.h5"],
        f"of samples on rank 0 (3 figures x 1 shifts x 2 ranks x {_map_samples()} samples x "
        "8 B)", (2,))] if _map_samples() <= 10**9 else []),  # else --repetitions' own bound
]
FILES = {
    "latin.txt": b"PingPong\n# caf\xe9\n",
    "lens.txt": b"8\n",
    "sizes.txt": b"# sizes\n8\n1k\n",
    "notes.txt": b"keep me\n",
    "good.toml": b"time = 1.0\n",
    "broken.toml": b"time = [\n",
    "fast.toml": b'time = "fast"\n',
    "tiny.toml": b"memory_per_proc = 1\n",
    "sumless.toml": b'format = "imb"\n',  # b_eff renders sum, not IMB's text
    "sum.toml": b'format = "sum"\n',  # IMB renders imb, not a .sum
}
BY_NAME = {name: (args, says) for name, args, says, _ in CASES}


def _slug(name: str) -> str:
    return re.sub(r"\W+", "-", name)


def _prepared(directory: Path, args: list[str]) -> list[str]:
    directory.mkdir(parents=True)
    for name, data in FILES.items():
        (directory / name).write_bytes(data)
    return [a.replace("{tmp}", str(directory)) for a in args]


def _left(directory: Path) -> list[str]:
    """What a case changed in its directory: files it left, inputs it touched."""
    changed = sorted(set(os.listdir(directory)) ^ set(FILES))
    changed += [n for n, data in FILES.items()
                if (directory / n).exists() and (directory / n).read_bytes() != data]
    return changed


def _launch(nprocs: int, cases: list[dict[str, Any]], directory: Path
            ) -> tuple[dict[int, dict[str, Any]], str]:
    """Every case in one job (tests/mpi/usage_script.py): {rank: {case: outcome}}."""
    spec = directory / "cases.json"
    spec.write_text(json.dumps({"out": str(directory), "cases": cases}), encoding="utf-8")
    r = run_job([*launch_prefix(nprocs), sys.executable, "-m", "tests.mpi.usage_script",
                 str(spec)], cwd=ROOT, timeout=240, env=mpi_env())
    outcomes = {int(p.name.split(".")[1]): json.loads(p.read_text(encoding="utf-8"))
                for p in directory.glob("rank.*.json")}
    return outcomes, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"


class Outcomes:
    """Each case's outcome, found when a test first asks: a case refused in this process as
    ("before", {rank: Result}, its directory); one launched as ("after", {rank: outcome},
    its directory, the job's output), in one job per process count holding every selected
    case of that count refused after MPI_Init."""

    def __init__(self, base: Path, selected: dict[int, set[str]]) -> None:
        self.base, self.selected = base, selected
        self.here: dict[str, Any] = {}
        self.launched: dict[int, dict[str, Any]] = {}

    def kind(self, name: str) -> str:
        if name not in self.here:
            directory = self.base / "here" / _slug(name)
            argv = _prepared(directory, BY_NAME[name][0])
            try:
                with pytest.MonkeyPatch.context() as mp:
                    mp.chdir(directory)
                    ranks = {rank: beff_in_process(*argv, rank=rank) for rank in (0, 1)}
            except StartsMPI:
                self.here[name] = None
            else:
                self.here[name] = ("before", ranks, directory)
        return "after" if self.here[name] is None else "before"

    def __getitem__(self, key: tuple[str, int]) -> Any:
        name, nprocs = key
        if self.kind(name) == "before":
            return self.here[name]
        if nprocs not in self.launched:
            wanted = self.selected.get(nprocs) or {n for n, _, _, c in CASES if nprocs in c}
            cases = []
            for case, args, _, _ in CASES:
                if case in wanted and self.kind(case) == "after":
                    job_dir = self.base / f"np{nprocs}" / _slug(case)
                    cases.append({"name": case, "argv": _prepared(job_dir, args),
                                  "cwd": str(job_dir)})
            per_rank, output = _launch(nprocs, cases, self.base / f"np{nprocs}")
            for rank in range(nprocs):  # every rank reported every case
                assert set(per_rank.get(rank, {})) == {c["name"] for c in cases}, output
            self.launched[nprocs] = {c["name"]: ("after", {r: got.get(c["name"])
                                                           for r, got in per_rank.items()},
                                                 Path(c["cwd"]), output) for c in cases}
        return self.launched[nprocs][name]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
             ) -> Outcomes:
    selected: dict[int, set[str]] = {}
    for item in request.session.items:  # the launched jobs hold the cases selected
        params = getattr(getattr(item, "callspec", None), "params", {})
        if getattr(item, "module", None) is request.module and "name" in params:
            selected.setdefault(params["nprocs"], set()).add(params["name"])
    return Outcomes(tmp_path_factory.mktemp("bad-input"), selected)


@pytest.mark.parametrize("name, nprocs", [
    pytest.param(name, n, id=f"np{n}-{_slug(name)}",
                 # IMB-MT's: also in the Open MPI tier of the tests
                 marks=[pytest.mark.openmpi] if name.startswith("mt ") else [])
    for name, _, _, counts in CASES for n in counts])
def test_bad_input_exits_2_everywhere_with_one_line(outcomes: Outcomes, name: str,
                                                     nprocs: int) -> None:
    kind, ranks, directory, *output = outcomes[name, nprocs]
    says = BY_NAME[name][1]
    if kind == "before":  # rank 0 says it; the others exit as silently
        zero, other = ranks[0], ranks[1]
        codes = {0: zero.returncode, 1: other.returncode}
        stderr = {0: zero.stderr, 1: other.stderr}
        stdout = zero.stdout + other.stdout
    else:
        assert set(ranks) == set(range(nprocs)) and None not in ranks.values(), output
        codes = {r: got["code"] for r, got in ranks.items()}
        stderr = {r: got["stderr"] for r, got in ranks.items()}
        stdout = "".join(got["stdout"] for got in ranks.values())
    assert set(codes.values()) == {2}, (codes, stderr, output)
    lines = stderr[0].splitlines()
    assert len(lines) == 1 and lines[0].startswith("beff: error: "), stderr
    assert says in lines[0], (says, lines[0])
    assert [err for rank, err in stderr.items() if rank and err] == [], stderr
    assert "Traceback" not in "".join(stderr.values()) and stdout == "", (stdout, stderr)
    assert _left(directory) == [], "files left behind or changed"


def _run(nprocs: int, args: list[str], tmp: Path) -> tuple[dict[int, int], str, float]:
    """Launch under mpiexec; each rank's own exit code is written by a shell around it."""
    argv = _prepared(tmp, args)
    script = ('"$0" -m beff "$@"; rc=$?; '
              'echo $rc > "$BEFF_RC_DIR/rc.${PMI_RANK:-$OMPI_COMM_WORLD_RANK}"; exit $rc')
    rc_dir = tmp.parent / f"{tmp.name}-rc"
    rc_dir.mkdir()
    start = time.monotonic()
    proc = run_job([*launch_prefix(nprocs), "sh", "-c", script, sys.executable, *argv],
                   cwd=tmp, timeout=60, env=mpi_env({"BEFF_RC_DIR": str(rc_dir)}))
    elapsed = time.monotonic() - start
    codes = {int(p.name.split(".")[1]): int(p.read_text()) for p in rc_dir.iterdir()}
    assert _left(tmp) == [], "files left behind or changed"
    return codes, proc.stderr, elapsed


@pytest.mark.parametrize("kind", ["before", "after"])
def test_every_ranks_process_exits_2(outcomes: Outcomes, kind: str, tmp_path: Path) -> None:
    """The first 4-rank case refused before MPI_Init, and the first refused after it, as
    jobs of their own: each rank's process ends with 2, and rank 0's line is the one."""
    name = next(n for n, _, _, counts in CASES if 4 in counts and outcomes.kind(n) == kind)
    args, says = BY_NAME[name]
    codes, stderr, elapsed = _run(4, args, tmp_path / "case")
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if is_open_mpi_cached():
        # prterun ends the other ranks as soon as one exits non-zero (they wait a moment so
        # that rank 0's line gets out first) and adds a box of its own: every rank that got
        # to exit said 2, rank 0 among them, and beff printed one line.
        assert codes.get(0) == 2 and set(codes.values()) == {2}, (codes, stderr)
        lines = [ln for ln in lines if ln.startswith("beff")]
    else:
        assert codes == dict.fromkeys(range(4), 2), (codes, stderr)
    assert len(lines) == 1 and lines[0].startswith("beff: error: ") and says in lines[0], \
        stderr
    assert "Traceback" not in stderr
    assert elapsed < 20  # about 1-3 s on a quiet 2-core machine
