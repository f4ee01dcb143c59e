"""beff io against the original b_eff_io 2.1: the same sizes, time and partitions, run
alternately, side by side.

README
======

This script does not fetch or build b_eff_io. Build the original (b_eff_io.c, Revision 2.1)
yourself against the MPI that beff uses (for the ``mpich`` wheel in a venv, with that venv's
wrappers first on PATH)::

    mpicc -O2 -o /tmp/ref/beffio/b_eff_io b_eff_io.c -lm

and pass the binary's path. Run from the repository root, with beff installed::

    python benchmarks/compare_beffio.py /tmp/ref/beffio/b_eff_io
    python benchmarks/compare_beffio.py /tmp/ref/beffio/b_eff_io --np 4 -N 1,2,4 --rewrite \\
        --rounds 5 -T 30 --dir /scratch/me/beffio
    python benchmarks/compare_beffio.py /tmp/ref/beffio/b_eff_io --only-original --rounds 1
    python benchmarks/compare_beffio.py --self-test        # the .sum parser only, no MPI

What it does:

1. runs ``--rounds`` rounds; each launches both tools on ``--np`` ranks, the original first in
   odd rounds and beff first in even rounds, with the same -MB, -MT, -T, -N, -rewrite and
   scratch directory (``--dir``; default: a fresh temporary directory under the current one,
   removed at the end):

   * original: ``mpiexec -n NP BIN -MB mb -MT mt -T T [-N list] [-rewrite] -p DIR -f PREFIX``
     in a temporary working directory (where it writes PREFIX.sum and PREFIX.prot);
   * beff: ``mpiexec -n NP beff io --memory-per-proc {mb}MiB --total-memory {mt}MiB -T T
     [-N list] [--rewrite] --dir DIR --format json -o TMP.h5 --force --no-progress``;

   a launch that fails (or whose output cannot be read) is reported with its stderr tail and
   its round is run again, once; a round that fails twice ends the comparison;
2. reads per partition the weighted average write, rewrite and read bandwidths and the
   partition's b_eff_io, and the final b_eff_io (the maximum over the partitions): the
   original's from its .sum file, beff's from its JSON on stdout;
3. prints, per partition and figure, each tool's median over the rounds, its min..max spread
   (in % of the median), the ratio beff / original of the medians and the verdict against the
   target (within +-15 %); then both tools' median wall times, and the 1-minute load average
   before and after.

The exit code is 0 after a complete comparison (a report, whatever the verdicts), 1 when
launches failed. File-system numbers on a small or shared machine are noisy (the page cache
above all): look at the spreads, and raise ``--rounds`` and -T when they are wide.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _tools import (  # benchmarks/ is on sys.path as a script
    RUN_TIMEOUT_S,
    busy_cpu_seconds,
    children_cpu_seconds,
    compile_beff,
    find_tool,
    wait_for_load,
)

from beff.core.mpi import YIELD_SETTINGS  # noqa: E402 - after the local import above

PROG = "compare_beffio"
REFERENCE_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "beffio-2.1-reference"
PREFIX = "b_eff_io"
FIGURES = ("write", "rewrite", "read", "b_eff_io")
TARGET_RATIO = (0.85, 1.15)
STDERR_TAIL = 2000
FINAL = 0  # partition key of the final b_eff_io (the maximum over the partitions)

_SUMMARY = re.compile(r"^Summary of file I/O bandwidth accumulated on\s+(\d+) processes")
_WEIGHTED = re.compile(
    r"^weighted average bandwidth for (write|rewrite|read)\s*:\s*(\S+) MB/s on (\d+) processes")
_PARTITION = re.compile(r"^b_eff_io of these measurements =\s*(\S+) MB/s on (\d+) processes")
_FINAL = re.compile(r"^\s*b_eff_io =\s*(\S+) MB/s on (\d+) processes")
_ERRORS = re.compile(r"with (\d+) ERRORS")
_EXEC_TIME = re.compile(r"total execution time is\s*(\S+) sec")


@dataclass
class BeffioResult:
    """One run's figures (MB/s): {partition n: {figure: value}}, and the final b_eff_io."""

    partitions: dict[int, dict[str, float]]
    final: float
    nprocs_at_max: int
    errors: int = 0
    runtime_s: float = math.nan  # the tool's own timing of the whole benchmark


def parse_sum(text: str) -> BeffioResult:
    """The figures of an original b_eff_io 2.1 .sum file (raises ValueError when incomplete)."""
    partitions: dict[int, dict[str, float]] = {}
    final: tuple[float, int] | None = None
    errors = 0
    n = -1
    for line in text.splitlines():
        if m := _SUMMARY.match(line):
            n = int(m.group(1))
            partitions[n] = {}
        elif m := _WEIGHTED.match(line):
            if int(m.group(3)) != n:
                raise ValueError(f"bandwidth line for {m.group(3)} processes in block {n}: "
                                 f"{line!r}")
            partitions[n][m.group(1)] = float(m.group(2))
        elif m := _PARTITION.match(line):
            if int(m.group(2)) != n:
                raise ValueError(f"b_eff_io line for {m.group(2)} processes in block {n}: "
                                 f"{line!r}")
            partitions[n]["b_eff_io"] = float(m.group(1))
            if e := _ERRORS.search(line):
                errors += int(e.group(1))
        elif m := _FINAL.match(line):
            final = (float(m.group(1)), int(m.group(2)))
    if not partitions:
        raise ValueError("no 'Summary of file I/O bandwidth' block")
    for n, figures in partitions.items():
        missing = [f for f in FIGURES if f not in figures]
        if missing:
            raise ValueError(f"partition {n}: no {', '.join(missing)}")
    if final is None:
        raise ValueError("no final 'b_eff_io = ... MB/s on n processes' line")
    return BeffioResult(partitions, final[0], final[1], errors)


def parse_beff_json(stdout: str) -> BeffioResult:
    """The figures of ``beff io --format json`` (its stdout; text before the JSON is skipped)."""
    start = stdout.find("{")
    if start < 0:
        raise ValueError("no JSON object on stdout")
    doc, _ = json.JSONDecoder().raw_decode(stdout[start:])
    (b,) = doc["results"]
    partitions = {
        int(p["nprocs"]): {"write": float(p["write_MBps"]), "rewrite": float(p["rewrite_MBps"]),
                           "read": float(p["read_MBps"]), "b_eff_io": float(p["b_eff_io_MBps"])}
        for p in b["per_partition"]}
    return BeffioResult(partitions, float(b["b_eff_io_MBps"]), int(b["nprocs_at_max"]),
                        runtime_s=float(b.get("runtime_s", math.nan)))


# np2/np3/np4 reference runs: {n: (write, rewrite, read, b_eff_io)}, (final, n at max)
_REFERENCE: dict[str, tuple[dict[int, tuple[float, float, float, float]], tuple[float, int]]] = {
    "np2": ({1: (639.512, 2006.897, 1466.889, 1175.789),
             2: (398.437, 1772.271, 1864.778, 1154.401)}, (1175.789, 1)),
    "np3": ({1: (756.699, 2566.159, 1183.157, 1076.628),
             2: (338.988, 637.848, 1292.915, 721.606),
             3: (129.444, 233.516, 448.559, 260.055)}, (1076.628, 1)),
    "np4": ({2: (485.282, 1095.079, 1128.136, 813.550),
             3: (119.830, 278.253, 400.585, 231.850),
             4: (136.458, 310.031, 428.911, 258.635)}, (813.550, 2)),
}


def self_test(reference_dir: Path) -> None:
    """Check parse_sum (and parse_beff_json) against the reference runs; exit 1 on a mismatch."""
    failures: list[str] = []
    for name, (parts, (final, at_max)) in _REFERENCE.items():
        path = reference_dir / name / f"{PREFIX}.sum"
        try:
            got = parse_sum(path.read_text())
        except (OSError, ValueError) as exc:
            failures.append(f"{path}: {exc}")
            continue
        want = {n: dict(zip(FIGURES, v, strict=True)) for n, v in parts.items()}
        if got.partitions != want or (got.final, got.nprocs_at_max) != (final, at_max) \
                or got.errors:
            failures.append(f"{path}: got {got}, want {want}, final {final} on {at_max}")
        else:
            print(f"{path}: {len(got.partitions)} partitions, "
                  f"b_eff_io = {got.final} MB/s on {got.nprocs_at_max}")
    doc = {"beffio": {"b_eff_io_MBps": 2.5, "nprocs_at_max": 2, "runtime_s": 9.0,
                      "per_partition": [{"nprocs": 2, "write_MBps": 1.0, "rewrite_MBps": 2.0,
                                         "read_MBps": 3.0, "b_eff_io_MBps": 2.5}]}}
    got_json = parse_beff_json("note\n" + json.dumps(doc) + "\n")
    if got_json.partitions != {2: {"write": 1.0, "rewrite": 2.0, "read": 3.0, "b_eff_io": 2.5}} \
            or (got_json.final, got_json.nprocs_at_max, got_json.runtime_s) != (2.5, 2, 9.0):
        failures.append(f"parse_beff_json: got {got_json}")
    if failures:
        sys.exit(f"{PROG} self-test FAILED:\n" + "\n".join(failures))
    print("OK")


@dataclass
class Launch:
    ok: bool
    stdout: str
    wall: float
    foreign: float  # cores other processes used during the launch (NaN without /proc/stat)
    why: str = ""


def launch(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> Launch:
    """Run ``cmd`` in ``cwd``; its stdout, wall time, foreign load, and why it failed."""
    busy0, own0 = busy_cpu_seconds(), children_cpu_seconds()
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                              env=None if env is None else {**os.environ, **env},
                              timeout=RUN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        tail = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        return Launch(False, "", time.perf_counter() - t0, math.nan,
                      f"timed out after {RUN_TIMEOUT_S:.0f} s\n{tail[-STDERR_TAIL:]}")
    wall = time.perf_counter() - t0
    busy1, own1 = busy_cpu_seconds(), children_cpu_seconds()
    foreign = math.nan
    if busy0 is not None and busy1 is not None and wall > 0:
        foreign = max(0.0, (busy1 - busy0) - (own1 - own0)) / wall
    if done.returncode != 0:
        return Launch(False, done.stdout, wall, foreign,
                      f"exit code {done.returncode}\n{done.stderr[-STDERR_TAIL:]}"
                      f"{done.stdout[-STDERR_TAIL:] if not done.stderr else ''}")
    return Launch(True, done.stdout, wall, foreign, done.stderr[-STDERR_TAIL:])


@dataclass
class Series:
    """One tool's results, one entry per kept round."""

    name: str
    runs: list[BeffioResult] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    foreign: list[float] = field(default_factory=list)

    def values(self, n: int, figure: str) -> list[float]:
        if n == FINAL:
            return [r.final for r in self.runs] if figure == "b_eff_io" else []
        return [r.partitions[n][figure] for r in self.runs
                if n in r.partitions and figure in r.partitions[n]]


def spread_pct(values: list[float], median: float) -> float:
    return 100.0 * (max(values) - min(values)) / median if median > 0 else math.nan


def report(orig: Series, beff: Series, only_original: bool) -> int:
    """Print the table; return the number of figures that missed the target."""
    parts = sorted({n for s in (orig, beff) for r in s.runs for n in r.partitions})
    head = (f"{'n':>5} {'figure':>8} {'original':>10} {'spread':>7} {'beff':>10} {'spread':>7} "
            f"{'ratio':>6}  target")
    print("bandwidths in MB/s (1e6 B/s): median over the rounds; spread = (max - min) / "
          f"median; target: beff / original within [{TARGET_RATIO[0]}, {TARGET_RATIO[1]}]")
    print(head)
    print("-" * len(head))
    missed = 0
    for n in [*parts, FINAL]:
        for figure in FIGURES if n != FINAL else ("b_eff_io",):
            label = str(n) if n != FINAL else "max"
            vo, vb = orig.values(n, figure), beff.values(n, figure)
            cells = []
            for v in (vo, vb):
                if v:
                    m = statistics.median(v)
                    cells.append(f"{m:>10.3f} {spread_pct(v, m):>6.1f}%")
                else:
                    cells.append(f"{'-':>10} {'-':>7}")
            if vo and vb:
                mo, mb = statistics.median(vo), statistics.median(vb)
                ratio = mb / mo if mo > 0 else math.inf
                ok = TARGET_RATIO[0] <= ratio <= TARGET_RATIO[1]
                missed += not ok
                tail = f"{ratio:>6.3f}  {'ok' if ok else 'MISSED'}"
            else:
                tail = f"{'-':>6}  {'-' if only_original else 'only in one tool'}"
            print(f"{label:>5} {figure:>8} {cells[0]} {cells[1]} {tail}")
    for s in (orig, beff):
        if s.runs:
            at_max = ", ".join(str(r.nprocs_at_max) for r in s.runs)
            errors = sum(r.errors for r in s.runs)
            print(f"{s.name}: final b_eff_io on n = {at_max} (per round)"
                  f"{f', {errors} I/O ERRORS reported' if errors else ''}")
    print()
    print(f"{'tool':<9} {'median wall (s)':>16} {'own time (s)':>13}  runs (s)")
    for s in (orig, beff):
        if not s.walls:
            continue
        own = [r.runtime_s for r in s.runs if not math.isnan(r.runtime_s)]
        own_txt = f"{statistics.median(own):>13.2f}" if own else f"{'-':>13}"
        runs = ", ".join(f"{w:.1f}" for w in s.walls)
        print(f"{s.name:<9} {statistics.median(s.walls):>16.2f} {own_txt}  {runs}")
    if orig.walls and beff.walls:
        print(f"ratio beff / original of the median wall times = "
              f"{statistics.median(beff.walls) / statistics.median(orig.walls):.2f}")
    return missed


def partition_list(text: str) -> str:
    parts = text.split(",")
    if not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"not a list of process counts: {text!r}")
    return ",".join(p.strip() for p in parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=" ".join(__doc__.split("\n\n", 1)[0].split()) if __doc__ else None)
    parser.add_argument("original", type=Path, nargs="?",
                        help="path of the b_eff_io 2.1 binary you built")
    parser.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    parser.add_argument("--mb", type=int, default=64,
                        help="MiB of memory per process (-MB; default 64)")
    parser.add_argument("--mt", type=int, default=256,
                        help="MiB of total memory (-MT; default 256)")
    parser.add_argument("-T", dest="seconds", type=int, default=16,
                        help="scheduled time in seconds for all partitions (-T; default 16)")
    parser.add_argument("-N", dest="partitions", type=partition_list, default=None,
                        help="partition sizes, e.g. 1,2 (default: each tool's default)")
    parser.add_argument("--rewrite", action="store_true", help="add rewrite to every pattern")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, one run of each tool (default 3)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="scratch directory both tools write to (default: a fresh "
                             "temporary directory under the current one, removed at the end)")
    parser.add_argument("--mpiexec", default=None,
                        help="mpiexec to launch with (default: the one next to this Python, "
                             "else the first on PATH)")
    parser.add_argument("--beff", default="beff",
                        help="command that runs beff (split like a shell would, e.g. "
                             "'python -m beff'; default beff)")
    parser.add_argument("--only-original", action="store_true",
                        help="run the original only (no beff launches)")
    parser.add_argument("--max-load", type=float, default=None,
                        help="before each round, wait while the 1-minute load is above this "
                             "(default: do not wait)")
    parser.add_argument("--load-wait", type=float, default=600.0,
                        help="with --max-load: wait at most this many seconds per round "
                             "(default 600)")
    parser.add_argument("--self-test", action="store_true",
                        help="only check the .sum parser against the reference runs, print OK")
    parser.add_argument("--reference-dir", type=Path, default=REFERENCE_DIR,
                        help=f"with --self-test: the directory of np2/, np3/, np4/ "
                             f"(default {REFERENCE_DIR})")
    args = parser.parse_args(argv)
    if args.self_test:
        self_test(args.reference_dir)
        return
    if args.original is None:
        parser.error("give the path of the original b_eff_io binary (or --self-test)")
    orig_bin = args.original.resolve()
    if not (orig_bin.is_file() and os.access(orig_bin, os.X_OK)):
        parser.error(f"{args.original} is not an executable file")
    if min(args.rounds, args.np, args.mb, args.mt, args.seconds) < 1:
        parser.error("need --rounds, --np, --mb, --mt and -T >= 1")
    if args.partitions and max(int(p) for p in args.partitions.split(",")) > args.np:
        parser.error(f"-N {args.partitions}: a partition is larger than --np {args.np}")
    mpiexec = args.mpiexec or find_tool("mpiexec", PROG)
    compile_beff()
    if shutil.which(mpiexec) is None:
        parser.error(f"--mpiexec {mpiexec}: not found")
    beff_cmd0 = shlex.split(args.beff)
    if not args.only_original and (not beff_cmd0 or shutil.which(beff_cmd0[0]) is None):
        parser.error(f"--beff {args.beff!r}: {beff_cmd0[0] if beff_cmd0 else ''} not found "
                     f"(or give --only-original)")

    load_before = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    own_dir = args.dir is None
    scratch = (Path(tempfile.mkdtemp(prefix="beffio-compare-", dir=Path.cwd())) if own_dir
               else args.dir.resolve())
    scratch.mkdir(parents=True, exist_ok=True)
    orig, beff = Series("original"), Series("beff")
    failed = False
    work = Path(tempfile.mkdtemp(prefix="beffio-compare-work-"))
    try:
        common = [mpiexec, "-n", str(args.np)]
        n_flag = ["-N", args.partitions] if args.partitions else []
        orig_cmd = [*common, str(orig_bin), "-MB", str(args.mb), "-MT", str(args.mt),
                    "-T", str(args.seconds), *n_flag, *(["-rewrite"] if args.rewrite else []),
                    "-p", str(scratch), "-f", PREFIX]
        h5 = work / "beff.h5"
        beff_cmd = [*common, *beff_cmd0, "io", "--memory-per-proc", f"{args.mb}MiB",
                    "--total-memory", f"{args.mt}MiB", "-T", str(args.seconds), *n_flag,
                    *(["--rewrite"] if args.rewrite else []), "--dir", str(scratch),
                    "--format", "json", "-o", str(h5), "--force", "--no-progress"]
        # On an oversubscribed node beff asks the MPI to yield while waiting (beff.core.mpi);
        # the original gets the same variables, or its spinning ranks would be timed.
        orig_env = ({k: v for k, v in YIELD_SETTINGS.items() if k not in os.environ}
                    if args.np > (os.cpu_count() or 1) else {})
        print(f"original: {' '.join(f'{k}={v}' for k, v in orig_env.items())} "
              f"{shlex.join(orig_cmd)}", file=sys.stderr, flush=True)
        if not args.only_original:
            print(f"beff:     {shlex.join(beff_cmd)}", file=sys.stderr, flush=True)

        def run_original() -> tuple[Launch, BeffioResult | None]:
            cwd = Path(tempfile.mkdtemp(prefix="orig-", dir=work))
            got = launch(orig_cmd, cwd, orig_env)
            if not got.ok:
                return got, None
            try:
                res = parse_sum((cwd / f"{PREFIX}.sum").read_text())
                prot = (cwd / f"{PREFIX}.prot").read_text(errors="replace")
            except (OSError, ValueError) as exc:
                got.ok, got.why = False, f"{exc}\n{got.why}{got.stdout[-STDERR_TAIL:]}"
                return got, None
            if t := _EXEC_TIME.search(prot):
                res.runtime_s = float(t.group(1))
            return got, res

        def run_beff() -> tuple[Launch, BeffioResult | None]:
            h5.unlink(missing_ok=True)
            got = launch(beff_cmd, work)
            if not got.ok:
                return got, None
            try:
                return got, parse_beff_json(got.stdout)
            except (ValueError, KeyError, TypeError) as exc:
                got.ok = False
                got.why = f"cannot read its JSON ({exc!r})\n{got.why}{got.stdout[-STDERR_TAIL:]}"
                return got, None

        sides = [(orig, run_original)] + ([] if args.only_original else [(beff, run_beff)])
        r = 0
        tries = 0
        while r < args.rounds:
            if args.max_load is not None:
                wait_for_load(args.max_load, args.load_wait)
            order = sides if r % 2 == 0 else sides[::-1]  # original first in odd rounds
            load = os.getloadavg()[0]
            results = []
            for side, runner in order:
                got, res = runner()
                if res is None:
                    print(f"round {r + 1}: {side.name} FAILED after {got.wall:.1f} s: "
                          f"{got.why.rstrip()}", file=sys.stderr, flush=True)
                    break
                results.append((side, got, res))
            if len(results) < len(order):
                tries += 1
                if tries == 1:
                    print(f"round {r + 1}: run again", file=sys.stderr, flush=True)
                    continue
                failed = True
                print(f"round {r + 1} failed twice: comparison stopped", file=sys.stderr)
                break
            tries = 0
            for side, got, res in results:
                side.runs.append(res)
                side.walls.append(got.wall)
                side.foreign.append(got.foreign)
            r += 1
            note = ", ".join(f"{s.name} {g.wall:.1f} s (b_eff_io {x.final:.1f}, foreign CPU "
                             f"{g.foreign:.2f} cores)" for s, g, x in results)
            print(f"round {r}/{args.rounds} done (load {load:.2f}): {note}", file=sys.stderr,
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if own_dir:
            shutil.rmtree(scratch, ignore_errors=True)
    load_after = os.getloadavg()

    kept = len(orig.runs)
    print(f"beff io vs original b_eff_io ({orig_bin}), {args.np} ranks, -MB {args.mb} "
          f"-MT {args.mt} -T {args.seconds} -N {args.partitions or '(defaults)'}"
          f"{' -rewrite' if args.rewrite else ''}, median of {kept} alternating rounds"
          f"{' (original only)' if args.only_original else ''}")
    print(f"scratch dir: {scratch}{' (temporary, removed)' if own_dir else ''}")
    print(f"date: {started.strftime('%Y-%m-%d %H:%M UTC')}   host: {platform.node()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    fmt_load = ", ".join
    print(f"load average (1, 5, 15 min): before {fmt_load(f'{x:.2f}' for x in load_before)}; "
          f"after {fmt_load(f'{x:.2f}' for x in load_after)}")
    foreign = [f for f in orig.foreign + beff.foreign if not math.isnan(f)]
    if foreign:
        print(f"CPU used by other processes during the runs: max {max(foreign):.2f} cores")
    print()
    if kept:
        report(orig, beff, args.only_original)
    if failed:
        print(f"\n{PROG}: launches failed (see above); {kept} of {args.rounds} rounds kept")
        sys.exit(1)


if __name__ == "__main__":
    main()
