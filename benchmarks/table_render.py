"""What printing a table costs: ``beff.render.tables.Table`` at 24x6, 200x8 and 2,000x8.

Run: ``python benchmarks/table_render.py [--repeat 15] [--width 160] [--rich]``. No MPI.
Runs on any commit that has ``beff.render.tables.Table`` (to measure an older one, put its
checkout first on the path from another directory: ``cd /tmp && PYTHONPATH=/tmp/old python
/path/to/table_render.py``).

The tables are as ``beff show`` prints an IMB benchmark's (beff.bench.view): a title, a
caption of two lines, box.SIMPLE_HEAD, right-justified figures with thousands separators,
one ``no_wrap`` column, and every seventh row a cell of markup. Each is printed ``--repeat``
times to a Console writing to an ``io.StringIO`` of ``--width`` columns, without colour;
reported: the median and the fastest print in ms of wall time, the median in ms of the
process's CPU time (steadier on a loaded machine), and a digest of the printed text (equal
digests: the same bytes, e.g. before and after a change). ``--rich`` adds rich's own Table
with the same cells, for reference (about 3 s a print at 2,000x8).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import statistics
import sys
import time
from typing import Any

from rich import box
from rich.console import Console

from beff.render.tables import Table

SHAPES = ((24, 6), (200, 8), (2000, 8))  # rows, columns
HEADERS = ("bytes", "reps", "t_min [µs]", "t_max [µs]", "t_avg [µs]", "MB/s", "95% CI", "cv")


def build(cls: Any, rows: int, columns: int) -> Any:
    """A table of ``rows`` x ``columns`` cells like an IMB benchmark's."""
    t = cls(title=f"MPI1 PingPong — 2 processes ({rows} rows)", box=box.SIMPLE_HEAD,
            caption="ranks 0,1 on vm (intra-node)\nt = timed loop / repetitions × 0.5, over "
                    "ranks; MB/s with MB = 10^6 B")
    for header in HEADERS[:columns]:
        t.add_column(header, justify="right", no_wrap=header == "95% CI")
    for i in range(rows):
        size = 1 << (i % 24)
        cells = [f"{size:,}", f"{max(1, 1000 // (i + 1)):,}", f"{0.8 + i * 1.7:,.2f}",
                 f"{0.9 + i * 1.9:,.2f}", f"{0.85 + i:,.2f}", f"{size / (i + 1):,.2f}",
                 f"−{i % 9 * 0.7:.1f}/+{i % 9 * 1.3:.1f}%",
                 f"[yellow]{i % 30:.1f}% ![/yellow]" if i % 7 == 3 else f"{i % 30:.1f}%"]
        t.add_row(*cells[:columns])
    return t


def time_print(table: Any, width: int, repeat: int
               ) -> tuple[list[float], list[float], str]:
    """The wall and CPU seconds of each of ``repeat`` prints of ``table``, and the text
    printed."""
    times, cpu, text = [], [], ""
    for _ in range(repeat):
        console = Console(file=io.StringIO(), width=width, color_system=None,
                          force_terminal=False, highlight=False, soft_wrap=True,
                          legacy_windows=False)
        start, start_cpu = time.perf_counter(), time.process_time()
        console.print(table)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        text = console.file.getvalue()  # type: ignore[attr-defined]
    return times, cpu, text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=15, help="prints per table (15)")
    parser.add_argument("--width", type=int, default=160, help="console columns (160)")
    parser.add_argument("--rich", action="store_true", help="also rich's own Table")
    args = parser.parse_args(argv)
    import beff.render.tables as tables

    print(f"beff.render.tables from {tables.__file__}; median of {args.repeat} prints, "
          f"width {args.width}")
    kinds: list[tuple[str, Any]] = [("beff", Table)]
    if args.rich:
        import rich.table

        kinds.append(("rich", rich.table.Table))
    print(f"{'table':>8} {'rows x cols':>12} {'median ms':>10} {'min ms':>8} {'cpu ms':>8}"
          "  digest")
    for name, cls in kinds:
        for rows, columns in SHAPES:
            repeat = args.repeat if name == "beff" or rows < 1000 else min(args.repeat, 3)
            times, cpu, text = time_print(build(cls, rows, columns), args.width, repeat)
            digest = hashlib.sha256(text.encode()).hexdigest()[:12]
            print(f"{name:>8} {f'{rows:,}x{columns}':>12} "
                  f"{statistics.median(times) * 1e3:>10.2f} {min(times) * 1e3:>8.2f} "
                  f"{statistics.median(cpu) * 1e3:>8.2f}  {digest}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
