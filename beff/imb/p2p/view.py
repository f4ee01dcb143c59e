"""IMB-P2P's view: its own header and blocks (IMB-P2P's imb_p2p.c layout: 60 dashes in the
title, benchmarks listed before the length lines, no trailing spaces, a stencil's grid after
its name), rich tables, CSV and JSON as every IMB-style suite.

IMB-P2P's ``t[usec]`` is the average over the ranks (column ``p2p_t``), while Mbytes/sec and
Msg/sec use the slowest rank's loop time, as in its source.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from beff.bench.view import (
    OUT_OF_MEM_TEXT,
    SHOWN,
    THREAD_ENV,
    TIME_OUT_TEXT,
    ImbView,
    W,
    _cell,
    imported_lines,
    measured_config,
    table_columns,
    title_line,
)
from beff.results import columns, stats
from beff.results.model import FAILED, OUT_OF_MEM, TIME_OUT, Measurement, RunRecord

TITLE_DASHES = "#" + "-" * 60
BLOCK_DASHES = "#" + "-" * 64


@columns.column("p2p_t", "t[usec]", "t_avg [µs]", key="t_us", timing=True)
def _t_avg(m: Measurement, group: int | None) -> np.ndarray:
    """IMB-P2P's t[usec]: the ranks' loop times summed, over the messages counted."""
    return stats.summarize(m, group).t_avg


def _date(attrs: dict[str, Any]) -> str:
    created = str(attrs.get("created", ""))
    try:
        return time.asctime(time.localtime(
            time.mktime(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone))
    except (TypeError, ValueError):
        return time.asctime()


def p2p_header(attrs: dict[str, Any], names: Iterable[str]) -> str:
    """IMB-P2P 2021.11's header, naming beff as the program that measured."""
    cfg = measured_config(attrs)
    host = attrs.get("host", {})
    mpi = attrs.get("mpi", {})
    sizes = [int(s) for s in cfg.get("sizes") or [0]]
    level = THREAD_ENV.get(mpi.get("thread_level", "single"), "")
    lines = [
        "",
        TITLE_DASHES,
        title_line(attrs, "IMB-P2P"),
        TITLE_DASHES,
        *imported_lines(attrs),
        f"# Date                  : {_date(attrs)}",
        f"# Machine               : {host.get('machine', '')}",
        f"# System                : {host.get('system', '')}",
        f"# Release               : {host.get('release', '')}",
        f"# Version               : {host.get('version', '')}",
        f"# MPI Version           : {mpi.get('standard_version', '')}",
        "# MPI Thread Environment:" + (f" {level}" if level else ""),
        "#",
        "# Calling sequence was:",
        "#",
        "#" + "".join(f" {a}" for a in attrs.get("command_line", [])),
        "#",
        "# List of Benchmarks to run:",
        "#",
        *(f"# {n}" for n in names),
        "#",
        f"# Minimum message length in bytes:   {min(sizes)}",
        f"# Maximum message length in bytes:   {max(sizes)}",
        "#",
    ]
    return "\n".join(lines) + "\n"


def invalid_line(name: str, nprocs: int) -> str:
    """IMB-P2P's line for a benchmark it does not run on ``nprocs`` processes (its wording
    differs slightly from benchmark to benchmark)."""
    verb = "" if name == "Unirandom" else "is "
    noun = "process" if name == "SendRecv_Replace" else "processes"
    return f"\n# !! Benchmark {name} {verb}invalid for {nprocs} {noun} !!\n"


def p2p_block(m: Measurement) -> str:
    """One benchmark in IMB-P2P's layout."""
    if m.unsupported:
        return invalid_line(m.benchmark, m.nprocs)
    cols = table_columns(m)
    grid = m.attrs.get("decomposition", "")
    out = ["", BLOCK_DASHES, f"# Benchmarking {m.benchmark}" + (f" ({grid})" if grid else ""),
           f"# #processes = {m.nprocs}", BLOCK_DASHES,
           "".join(f"{c.imb if (c := columns.lookup(cid)) else cid:>{W}s}" for cid in cols)]
    table = columns.values(m, cols)
    for i, size in enumerate(m.sizes):
        status = m.status[i]
        if status not in SHOWN:
            continue
        if status == TIME_OUT:
            out.append(f"{size:{W}d}" + TIME_OUT_TEXT)
        elif status == FAILED:
            out.append(f"{size:{W}d} failed; {m.attrs.get('failure', '')}")
        elif status == OUT_OF_MEM:
            need = m.needed_gb[i] if m.needed_gb is not None else math.nan
            out.append(f"{size:{W}d}" + OUT_OF_MEM_TEXT.format(need))
        else:
            out.append("".join(_cell(columns.lookup(c), table[c][i]) if c in table
                               else _cell(None, math.nan) for c in cols))
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class P2PView(ImbView):
    """IMB-P2P's text; tables, CSV and JSON as every IMB-style suite's."""

    def text_header(self, record: RunRecord) -> str:
        names = list(dict.fromkeys(m.benchmark for m in record.measurements))
        return p2p_header(record.attrs, record.attrs.get("benchmarks", names))

    def text(self, result: Measurement, record: RunRecord) -> str:
        return p2p_block(result)


VIEW = P2PView("IMB-P2P")
