"""IMB-MT's view: its own header and blocks (``src_cpp/MT``: a 66-dash banner, blocks with 77
dashes, ``# #processes = P (threads: T)``, ``# window_size = W`` for UniBandMT and BiBandMT,
no trailing spaces but the banner's), rich tables, CSV and JSON as every IMB-style suite.

A measurement holds one column per rank and thread. The tables reduce over all of them as
IMB-MT does over its threads and then its ranks: t_min and t_max are the smallest and largest
thread's time, t_avg the mean over the threads that took part (IMB-MT counts a thread that
sat out as 0 in t_min; beff leaves it out). Mbytes/sec = bw_scale X / t_max, with X =
count x sizeof(type) x threads (IMB-MT's #bytes); UniBandMT's and BiBandMT's Mbytes/sec and
Msg/sec are summed over the pairs of threads (columns ``mt_mbytes_per_sec`` and
``mt_msg_per_sec``: X / T x pairs / t_max, and pairs / t_avg, as IMB-MT's cumulative ones).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.console import Console

from beff import __version__
from beff.bench.view import ImbView, W, _cell, rich_table, table_columns
from beff.results import columns
from beff.results.model import OK, Measurement, RunRecord

BANNER_DASHES = "#" + "-" * 66
BLOCK_DASHES = "#" + "-" * 77


def threads_of(m: Measurement) -> int:
    return max(1, int(m.attrs.get("threads", 1)))


def pairs_of_threads(m: Measurement) -> np.ndarray:
    """Per size: the threads that took part, halved (IMB-MT's nresults / 2)."""
    return np.asarray(np.isfinite(m.times).sum(axis=1) // 2)


@columns.column("mt_mbytes_per_sec", "Mbytes/sec", "MB/s", key="mbytes_per_sec")
def _cumulative_bw(m: Measurement, group: int | None) -> np.ndarray:
    """IMB-MT's OUT_BW_CUMULATIVE: one thread's message x pairs of threads / t_max."""
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: nothing measured
        t_max = np.nanmax(m.times, axis=1)
        bw = m.sizes / threads_of(m) * m.bw_scale * pairs_of_threads(m) / t_max / 1e6
    return np.where(np.isfinite(t_max), bw, np.nan)


@columns.column("mt_msg_per_sec", "Msg/sec", "msg/s", key="msg_per_sec", integer=True)
def _cumulative_rate(m: Measurement, group: int | None) -> np.ndarray:
    """IMB-MT's OUT_MSGRATE_CUMMULATIVE: pairs of threads / t_avg."""
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: nothing measured
        t_avg = np.nanmean(m.times, axis=1)
        rate = pairs_of_threads(m) / t_avg
    return np.where(np.isfinite(t_avg), rate, np.nan)


def mt_header(attrs: dict[str, Any]) -> str:
    """IMB-MT 2021.11's banner, naming beff as the program that measured."""
    version = attrs.get("versions", {}).get("beff", __version__)
    return "\n".join([BANNER_DASHES,
                      f"#    beff {version} (Intel(R) MPI Benchmarks 2021.11 layout), MT part    ",
                      BANNER_DASHES, "#"]) + "\n"


def mt_block(m: Measurement) -> str:
    """One benchmark in IMB-MT's layout."""
    if m.unsupported:
        return "\n".join(["", BLOCK_DASHES, f"# Benchmarking {m.benchmark}",
                          "# NO SUCCESSFUL EXECUTIONS", BLOCK_DASHES, ""]) + "\n"
    threads = threads_of(m)
    cols = table_columns(m)
    out = ["", BLOCK_DASHES, f"# Benchmarking {m.benchmark}",
           f"# #processes = {int(m.attrs.get('participants', m.nprocs * threads)) // threads} "
           f"(threads: {threads})"]
    if "window_size" in m.attrs:
        out.append(f"# window_size = {m.attrs['window_size']}")
    out += [BLOCK_DASHES,
            "".join(f"{c.imb if (c := columns.lookup(cid)) else cid:>{W}s}" for cid in cols)]
    table = columns.values(m, cols)
    for i in range(len(m.sizes)):
        if m.status[i] != OK:
            continue
        out.append("".join(_cell(columns.lookup(c), table[c][i]) if c in table
                           else _cell(None, math.nan) for c in cols))
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class MTView(ImbView):
    """IMB-MT's text; tables, CSV and JSON as every IMB-style suite's, with the threads."""

    def text_header(self, record: RunRecord) -> str:
        return mt_header(record.attrs)

    def text(self, result: Measurement, record: RunRecord) -> str:
        return mt_block(result)

    def text_footer(self, record: RunRecord) -> str:
        return "\n"

    def table(self, result: Measurement, record: RunRecord, console: Console) -> None:
        if result.unsupported:
            return
        t = rich_table(result, record.ranks)
        threads = threads_of(result)
        t.title = f"{t.title} × {threads} thread{'s' if threads != 1 else ''} each"
        heads = [str(c.header).split(" [")[0] for c in t.columns]
        times = [h for h in ("t_min", "t_max", "t_avg") if h in heads]
        notes = ([f"{', '.join(times)} over every thread of every rank"] if times else []) \
            + (["bytes = count × type size × threads"] if "bytes" in heads else [])
        if notes:  # the lines of the columns shown
            t.caption = f"{t.caption}\n{'; '.join(notes)}"
        console.print(t)

    def summary(self, result: Measurement, record: RunRecord) -> dict[str, Any]:
        return {**super().summary(result, record), "threads": threads_of(result)}


VIEW = MTView("MT")  # the title line's "MT part" (beff import matches it)
