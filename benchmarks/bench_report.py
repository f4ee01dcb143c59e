"""How long ``beff report`` takes for a b_eff run at 4 ranks (the issue's bound: 10 s on the
2-core development VM).

Run: ``python benchmarks/bench_report.py [--file RUN.h5] [--repeat 3]``. Without ``--file``
it first measures one: ``mpiexec -n 4 beff run --quick --memory-per-proc 64MiB`` in a fresh
directory (about 15 s; 4 ranks on 2 cores are oversubscribed, which changes the numbers, not
the page). Then, ``--repeat`` times each:

* ``beff report RUN.h5 -o RUN.html`` as a command: what a user waits for, Python's start and
  matplotlib's import included;
* the page alone, in this process (:func:`beff.render.report.build`, matplotlib imported).

Reported: the best and the median of each, the foreign load while the commands ran (other
processes' CPU, in cores: a busy machine makes every figure slower), and the page's size and
figure count.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _tools import find_tool, run

from beff.api import load
from beff.render import report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, help="a b_eff result file (default: measure one)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        path = args.file
        if path is None:
            path = Path(tmp) / "beff-np4.h5"
            mpiexec = find_tool("mpiexec", "bench_report")
            print("measuring: mpiexec -n 4 beff run --quick --memory-per-proc 64MiB", flush=True)
            _, wall, _ = run([mpiexec, "-n", "4", sys.executable, "-m", "beff", "run", "--quick",
                              "--memory-per-proc", "64MiB", "--format", "json", "-o",
                              str(path)])
            print(f"  measured in {wall:.1f} s")
        record = load(path)
        if record.suite != "beff":
            sys.exit(f"{path} is a {record.suite} file, not b_eff's")
        page = Path(tmp) / "report.html"
        commands, loads = [], []
        for _ in range(args.repeat):
            _, wall, foreign = run([sys.executable, "-m", "beff", "report", str(path), "-o",
                                    str(page)])
            commands.append(wall)
            loads.append(foreign)
        builds = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            text = report.build([load(path)], [path])
            builds.append(time.perf_counter() - t0)
        size = page.stat().st_size
    print(f"b_eff run at {record.attrs.get('nprocs')} ranks, {len(record.results)} result(s)")
    print(f"beff report (command)  best {min(commands):.2f} s, median "
          f"{statistics.median(commands):.2f} s over {args.repeat} "
          f"(foreign load {statistics.median(loads):.2f} cores)")
    print(f"page alone (in-process) best {min(builds):.2f} s, median "
          f"{statistics.median(builds):.2f} s")
    print(f"page: {size / 1e3:,.0f} kB, {text.count('<figure class=')} figures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
