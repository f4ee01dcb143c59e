"""Rendering of results (rank 0 or ``beff show``): rich tables, IMB text, JSON and CSV.

Renderers work on :class:`~beff.results.model.Measurement` objects, so a live run and a stored file
print the same text.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from beff import __version__
from beff.core.metadata import format_cpus
from beff.results import columns, stats, warnings
from beff.results.effbw import beff_summary
from beff.results.model import FAILED, OK, OUT_OF_MEM, TIME_OUT, Measurement, RunRecord

# Rows a table shows: measured sizes and the ones that ended the benchmark.
SHOWN = (OK, TIME_OUT, OUT_OF_MEM, FAILED)

W = 13
PART_NAMES = {"mpi1": "MPI-1", "ext": "MPI-2", "nbc": "MPI-NBC", "rma": "MPI-RMA", "io": "MPI-IO",
              "mpi4": "MPI-4"}
# The header's whitespace per component (IMB_g_info.c): trailing text of the command line
# and of the reductions' datatype line, and the two lines after MPI_Op.
HEADER_STYLE = {"mpi1": (" ", " ", "# "), "rma": (" ", "", "# "), "mpi4": ("", "", "# "),
                "nbc": ("", "", "#"), "ext": ("", "", "#"), "io": ("", "", "#")}
TYPE_NAMES = {"byte": "MPI_BYTE", "char": "MPI_CHAR", "int": "MPI_INT", "float": "MPI_FLOAT",
              "double": "MPI_DOUBLE"}
TIME_OUT_TEXT = (' time-out.; Time limit (secs_per_sample * msg_sizes_list_len) is over; use '
                 '"-time X" or SECS_PER_SAMPLE=X (IMB_settings.h) to increase time limit.')
OUT_OF_MEM_TEXT = ' out-of-mem.; needed X={:8.3f} GB; use flag "-mem X" or MAX_MEM_USAGE>=X ' \
                  '(IMB_mem_info.h)'
IMB_FOOTER = "\n\n# All processes entering MPI_Finalize\n\n"
THREAD_ENV = {"single": "", "funneled": "MPI_THREAD_FUNNELED",
              "serialized": "MPI_THREAD_SERIALIZED", "multiple": "MPI_THREAD_MULTIPLE"}


# ----------------------------------------------------------------------------- IMB text
def imb_header(attrs: dict[str, Any], names: Iterable[str]) -> str:
    """IMB 2021.11's global header, naming beff as the program that measured."""
    cfg = attrs.get("config", {})
    host = attrs.get("host", {})
    mpi = attrs.get("mpi", {})
    suite = cfg.get("suite", "mpi1")
    after_cmd, after_red, blank = HEADER_STYLE.get(suite, HEADER_STYLE["mpi1"])
    created = str(attrs.get("created", ""))
    try:
        date = time.asctime(time.localtime(
            time.mktime(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone))
    except (TypeError, ValueError):
        date = time.asctime()
    dashes = "#" + "-" * 64
    lines = [
        "",
        dashes,
        f"#    beff {attrs.get('versions', {}).get('beff', __version__)} "
        f"(Intel(R) MPI Benchmarks 2021.11 layout), {PART_NAMES.get(suite, suite)} part",
        dashes,
        f"# Date                  : {date}",
        f"# Machine               : {host.get('machine', '')}",
        f"# System                : {host.get('system', '')}",
        f"# Release               : {host.get('release', '')}",
        f"# Version               : {host.get('version', '')}",
        f"# MPI Version           : {mpi.get('standard_version', '')}",
        f"# MPI Thread Environment: {THREAD_ENV.get(mpi.get('thread_level', 'single'), '')}",
        "",
        "",
        "# Calling sequence was: ",
        "",
        "# " + " ".join(attrs.get("command_line", [])) + after_cmd,
        "",
    ]
    if suite == "io":
        return "\n".join(lines + _io_header(attrs, names)) + "\n"
    if cfg.get("msglen") is not None:
        lines.append("# Message lengths were user defined")
    else:
        lo = 0 if cfg.get("zero_size", True) else 1 << int(cfg.get("msglog_min", 0))
        lines.append(f"# Minimum message length in bytes:   {lo}")
        lines.append(f"# Maximum message length in bytes:   {1 << int(cfg.get('msglog_max', 22))}")
    lines += [
        "#",
        f"# MPI_Datatype                   :   {TYPE_NAMES[cfg.get('data_type', 'byte')]} ",
        f"# MPI_Datatype for reductions    :   {TYPE_NAMES[cfg.get('red_data_type', 'float')]}"
        + after_red,
        "# MPI_Op                         :   MPI_SUM  ",
        blank,
        blank,
        "",
        "# List of Benchmarks to run:",
        "",
    ]
    comments = attrs.get("benchmark_comments", {})
    for n in names:  # IMB-RMA indents a benchmark's comments under its name
        lines += [f"# {n}", *(f"#     {c}" for c in comments.get(n, ()))]
    return "\n".join(lines) + "\n"


def _io_header(attrs: dict[str, Any], names: Iterable[str]) -> list[str]:
    """IMB-IO's lines after the calling sequence: io portions, the hints, the list, and the
    CPU kernel's speed when a nonblocking benchmark runs."""
    cfg = attrs.get("config", {})
    io = attrs.get("io", {})
    if cfg.get("msglen") is not None:
        lines = ["# IO lengths were user defined"]
    else:
        lines = ["# Minimum io portion in bytes:   0",
                 f"# Maximum io portion in bytes:   {1 << int(cfg.get('msglog_max', 22))}"]
    lines.append("#")
    lines += [f"# MPI_Info key: {k} = {v}" for k, v in io.get("hints_requested", {}).items()]
    lines += ["#", "#", "", "# List of Benchmarks to run:", ""]
    names = list(names)
    lines += [f"# {n}" for n in names]
    if any(n.count("_") == 2 and n.split("_")[1].startswith("I") for n in names):
        lines += ["", "", "# For nonblocking benchmarks:", "",
                  "# Function CPU_Exploit obtains an undisturbed",
                  f"# performance of {float(io.get('cpu_mflops', 0.0)):7.2f} MFlops"]
    return lines


def table_columns(m: Measurement) -> list[str]:
    """The IMB text columns of ``m``: its declared columns, where ``t`` (one transfer's time)
    becomes t_min/t_max/t_avg under ``-multi 0`` (pooled groups), as IMB prints them, and
    ``defects`` follows in check mode for benchmarks with a message size."""
    cols: list[str] = []
    for c in m.columns:
        cols += ["t_min", "t_max", "t_avg"] if c == "t" and m.multi == 0 else [c]
    if m.checked and "bytes" in cols:
        cols.append("defects")
    return cols


def _cell(col: columns.Column | None, value: float) -> str:
    if col is None or not math.isfinite(value):
        return f"{'n/a':>{W}s}"
    if col.integer:
        return f"{int(value):{W}d}"
    return f"{value:{W}.{col.digits}f}"


def _procids(ranks: list[int]) -> str:
    """World ranks, 16 per line, as IMB prints them after a '# ' prefix."""
    out = ""
    for i, r in enumerate(ranks):
        if i and i % 16 == 0:
            out += "\n# "
        out += f" {r:4d}"
    return out


def imb_block(m: Measurement) -> str:
    """One benchmark at one process count in IMB 2021.11's layout ("" if not run)."""
    if m.unsupported:
        return ""
    cols = table_columns(m)
    grouped = m.multi is not None and m.multi > 0
    headers = (["Group"] if grouped else []) + [
        c.imb if (c := columns.lookup(cid)) else cid for cid in cols]
    dash = "#" + "-" * (len(headers) * W - 1)
    name = ("Multi-" if m.ngroups > 1 else "") + m.benchmark
    out = ["", dash, f"# Benchmarking {name} "]
    if m.ngroups > 1:
        out.append(f"# ( {m.ngroups} groups of {m.nprocs} processes each running simultaneous ) ")
        for gi in range(m.ngroups):
            out.append(f"# Group  {gi}: " + _procids(list(m.world_ranks[m.group == gi])))
            out.append("# ")
    elif m.attrs.get("map_rows"):
        out.append(f"# #processes = {m.nprocs}; rank order (rowwise): ")
        for row in m.attrs["map_rows"]:
            out.append("# " + _procids(row))
            out.append("# ")
    else:
        out.append(f"# #processes = {m.nprocs} ")
    if m.idle:
        s = "" if m.idle == 1 else "es"
        out.append(f"# ( {m.idle} additional process{s} waiting in MPI_Barrier)")
    out.append(dash)
    if m.mode:  # as IMB-EXT/RMA/IO: "#    MODE: NON-AGGREGATE "
        out += ["#", f"#    MODE: {m.mode.upper()} ", "#"]
    out.append("".join(f"{c:>{W}s}" for c in headers))
    groups: list[int | None] = [*range(m.ngroups)] if grouped else [None]
    table = {g: columns.values(m, cols, g) for g in groups}
    for i, size in enumerate(m.sizes):
        status = m.status[i]
        if status not in SHOWN:
            continue
        if grouped:
            out.append("")
        for g in groups:
            prefix = "" if g is None else f"{g:{W}d}"
            if status == TIME_OUT:
                out.append(prefix + f"{size:{W}d}" + TIME_OUT_TEXT)
                continue
            if status == FAILED:
                out.append(prefix + f"{size:{W}d} failed; {m.attrs.get('failure', '')}")
                continue
            if status == OUT_OF_MEM:
                need = m.needed_gb[i] if m.needed_gb is not None else math.nan
                out.append(prefix + f"{size:{W}d}" + OUT_OF_MEM_TEXT.format(need))
                continue
            out.append(prefix + "".join(_cell(columns.lookup(c), table[g][c][i])
                                        if c in table[g] else _cell(None, math.nan)
                                        for c in cols))
    return "\n".join(out) + "\n"


def imb_text(record: RunRecord) -> str:
    names = list(dict.fromkeys(m.benchmark for m in record.measurements))
    body = "".join(imb_block(m) for m in record.measurements)
    return imb_header(record.attrs, record.attrs.get("benchmarks", names)) + body + IMB_FOOTER


# ----------------------------------------------------------------------------- rich
def _fmt(x: float, digits: int = 2) -> str:
    return "-" if not np.isfinite(x) else f"{x:,.{digits}f}"


def placement_groups(m: Measurement, ranks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group of ``m``: its world ranks, their hosts, node count and whether it crossed nodes.

    Nodes are the MPI_Comm_split_type(SHARED) groups (the ``node`` column of the ranks table),
    not host names; a rank without a node id counts its host as its node. Without ``ranks``
    (a file written without a ranks table) the groups stored with the measurement are used.
    """
    if not ranks:
        return list(m.attrs.get("placement_groups", []))
    by_rank = {int(r["rank"]): r for r in ranks}
    out = []
    for g in range(m.ngroups):
        members = [int(w) for w in m.world_ranks[m.group == g]]
        hosts = [str(by_rank.get(w, {}).get("host", "?")) for w in members]
        nodes = {by_rank.get(w, {}).get("node", hosts[k]) for k, w in enumerate(members)}
        out.append({"group": g, "ranks": members, "hosts": list(dict.fromkeys(hosts)),
                    "nodes": len(nodes), "inter_node": len(nodes) > 1})
    return out


def _ranks_on(group: dict[str, Any]) -> str:
    return f"ranks {','.join(map(str, group['ranks']))} on {'+'.join(group['hosts'])}"


def placement_label(m: Measurement, ranks: list[dict[str, Any]]) -> str:
    """Which hosts the measured ranks ran on, and whether groups crossed nodes."""
    groups = placement_groups(m, ranks)
    parts = []
    for grp in groups:
        parts.append(f"{_ranks_on(grp)} ({'inter-node' if grp['inter_node'] else 'intra-node'})")
        if len(parts) >= 4 and len(groups) > 5:
            parts.append(f"... {len(groups) - 4} more groups")
            break
    if len(groups) > 1:
        crossing = sum(1 for grp in groups if grp["inter_node"])
        parts.append(f"{crossing} of {len(groups)} groups inter-node")
    return "; ".join(parts)


def rich_table(m: Measurement, ranks: list[dict[str, Any]] | None = None) -> Table:
    """A terminal table for one benchmark at one process count."""
    spread = stats.batch_spread(m)
    mode = f" ({m.mode})" if m.mode else ""
    title = f"{m.suite.upper()} {m.benchmark}{mode} — {m.nprocs} process" + (
        "es" if m.nprocs != 1 else "")
    if m.ngroups > 1:
        title += f" × {m.ngroups} groups"
    if m.idle:
        title += f" ({m.idle} idle)"
    if m.attrs.get("page_cache") == "cached":
        title += " [cached: read from the page cache of the node that wrote the file]"
    caption = [placement_label(m, ranks or [])]
    scale = " × 0.5 (half round trip)" if m.time_scale == 0.5 else ""
    if "overlap" in m.columns:
        caption.append("t_ovrl, t_pure, t_CPU: per iteration, of the rank with the largest "
                       "t_ovrl; overlap = share of the shorter of t_pure and t_CPU hidden")
    else:
        caption.append(f"t = timed loop / repetitions{scale}, over ranks; MB/s with "
                       "MB = 10^6 B")
    caption.append("cv = spread (std/mean) of the slowest rank's batch times")
    table = Table(title=title, caption="\n".join(c for c in caption if c), box=box.SIMPLE_HEAD)
    cols = rich_columns(m)
    for cid in cols:
        col = columns.lookup(cid)
        table.add_column(col.label if col else cid, justify="right")
    table.add_column("cv", justify="right")
    if m.checked:
        table.add_column("defects", justify="right")
    values = columns.values(m, cols)
    for i in range(len(m.sizes)):
        status = m.status[i]
        if status not in SHOWN:
            continue
        if status != OK:
            row = [f"{int(m.sizes[i]):,}"] if "bytes" in cols else []
            reason = f": {m.attrs.get('failure', '')}" if status == FAILED else ""
            row.append(f"[red]{status}{escape(reason)}[/red]")
            table.add_row(*row)
            continue
        row = []
        for cid in cols:
            col = columns.lookup(cid)
            v = values[cid][i] if cid in values else math.nan
            row.append(f"{int(v):,}" if col and col.integer and np.isfinite(v)
                       else _fmt(v, col.digits if col else 2))
        row.append(_fmt(spread[i] * 100, 1) + "%" if np.isfinite(spread[i]) else "-")
        if m.checked and m.defects is not None:
            d = int(m.defects[i])
            row.append(f"[red]{d}[/red]" if d else "0")
        table.add_row(*row)
    return table


def rich_columns(m: Measurement) -> list[str]:
    """Terminal columns: the declared ones, with the spread over ranks (t_min, t_max, t_avg)
    of the first metric in place of ``t``, or after the repetitions when none is declared."""
    cols: list[str] = []
    for c in m.columns:
        cols += ["t_min", "t_max", "t_avg"] if c == "t" else [c]
    if not any((col := columns.lookup(c)) is not None and col.timing for c in cols):
        at = cols.index("repetitions") + 1 if "repetitions" in cols else 0
        cols[at:at] = ["t_min", "t_max", "t_avg"]
    return cols


def overhead_line(attrs: dict[str, Any]) -> str:
    o = attrs.get("overhead") or {}
    if not o:
        return ""
    if "backend" not in o:  # files written before the compiled loops (schema v1)
        return ("harness overhead per call (median over ranks): "
                f"Wtime {o.get('wtime', 0) * 1e9:.0f} ns, Send to PROC_NULL "
                f"{o.get('send_proc_null', 0) * 1e9:.0f} ns (python loops)")
    return (f"timed loops: {o['backend']} backend; their own cost per call (median over ranks):"
            f" Wtime {o.get('wtime', 0) * 1e9:.0f} ns, Send to PROC_NULL "
            f"{o.get('send_proc_null', 0) * 1e9:.0f} ns")


def render_header(record: RunRecord, console: Console) -> None:
    """Run metadata: command, MPI library, hosts and placement."""
    a = record.attrs
    mpi = a.get("mpi", {})
    where = a.get("placement", {})
    console.print(f"[bold]{' '.join(a.get('command_line', []))}[/bold]")
    console.print(f"created {a.get('created', '?')}, status {a.get('status', '?')}, "
                  f"schema {a.get('schema_version', '?')}, beff "
                  f"{a.get('versions', {}).get('beff', '?')}")
    lib = str(mpi.get("library_version", "?")).splitlines()
    console.print(f"MPI: {lib[0] if lib else '?'} (standard {mpi.get('standard_version', '?')}, "
                  f"thread level {mpi.get('thread_level', '?')})")
    if "io" in a:
        fsi = a["io"].get("file_system", {})
        console.print(f"I/O in {a['io'].get('directory', '?')}: {fsi.get('fstype', '?')} "
                      f"mounted on {fsi.get('mount_point', '?')}, "
                      f"{fsi.get('free_bytes', 0) / 2**30:.1f} of "
                      f"{fsi.get('capacity_bytes', 0) / 2**30:.1f} GiB free; "
                      f"MPI-IO {a['io'].get('mpiio', '?')}"
                      + ("; page cache dropped before reads" if a["io"].get("drop_cache")
                         else ""))
    console.print(f"{a.get('nprocs', '?')} ranks on {where.get('nodes', '?')} node(s): "
                  f"{', '.join(where.get('hosts', []))}")
    nodes: dict[Any, list[dict[str, Any]]] = {}
    for r in record.ranks:
        nodes.setdefault(r.get("node", r.get("host")), []).append(r)
    for node, members in nodes.items():
        hosts = "+".join(dict.fromkeys(str(r.get("host", "?")) for r in members))
        ranks = format_cpus(sorted(int(r["rank"]) for r in members))
        console.print(f"  node {node} ({hosts}): ranks {ranks}")


def render_record_rich(record: RunRecord, console: Console) -> None:
    for m in record.measurements:
        if not m.unsupported:
            console.print(rich_table(m, record.ranks))
    footer(record.attrs, console, warnings.of_record(record))


def print_warnings(console: Console, found: Iterable[str]) -> None:
    for w in found:
        console.print(f"[bold yellow]warning:[/bold yellow] {w}")


def footer(attrs: dict[str, Any], console: Console, found: Iterable[str] = ()) -> None:
    """The warnings (of a stored run: during a run they went to stderr) and the loops' cost."""
    print_warnings(console, found)
    line = overhead_line(attrs)
    if line:
        console.print(f"[dim]{line}[/dim]")


# ----------------------------------------------------------------------------- JSON / CSV
CSV_FIELDS = ["suite", "benchmark", "nprocs", "ngroups", "group", "bytes", "repetitions",
              "t_min_us", "t_max_us", "t_avg_us", "mbytes_per_sec", "msg_per_sec", "status",
              "defects", "mode", "t_ovrl_us", "t_pure_us", "t_cpu_us", "overlap_pct"]
# mode and the overlap figures (NBC, MPI4) came with schema 2: last, so old readers keep
# working; a benchmark without them leaves them empty.


def _clean(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def measurement_rows(m: Measurement) -> list[dict[str, Any]]:
    """Flat rows (one per size, and per group with -multi 1): the standard figures, then any
    further column the benchmark declared (JSON only; CSV keeps its fixed fields)."""
    grouped = m.multi is not None and m.multi > 0
    rows = []
    standard = {"bytes", "repetitions", "t", "t_min", "t_max", "t_avg", "mbytes_per_sec",
                "msg_per_sec", "defects"}
    more = [c for c in m.columns if c not in standard]
    for g in list(range(m.ngroups)) if grouped else [None]:
        s = stats.summarize(m, g)
        extra = columns.values(m, more, g)
        for i, size in enumerate(m.sizes):
            if m.status[i] not in SHOWN:
                continue
            rows.append({
                "suite": m.suite, "benchmark": m.benchmark, "mode": m.mode, "nprocs": m.nprocs,
                "ngroups": m.ngroups, "group": "all" if g is None else g, "bytes": int(size),
                "repetitions": int(m.repetitions[i]),
                "t_min_us": _clean(float(s.t_min[i])), "t_max_us": _clean(float(s.t_max[i])),
                "t_avg_us": _clean(float(s.t_avg[i])),
                "mbytes_per_sec": _clean(float(s.mbytes_per_sec[i])),
                "msg_per_sec": _clean(float(s.msg_per_sec[i])), "status": m.status[i],
                "defects": int(m.defects[i]) if m.defects is not None else None,
                **{c.key: _clean(float(extra[c.id][i]))
                   for cid in more if (c := columns.lookup(cid)) and cid in extra},
            })
    return rows


def csv_text(measurements: Iterable[Measurement], header: bool = True) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n",
                            extrasaction="ignore")
    if header:
        writer.writeheader()
    for m in measurements:
        writer.writerows(measurement_rows(m))
    return buf.getvalue()


def json_doc(record: RunRecord) -> dict[str, Any]:
    """The documented JSON view: run metadata, placement and per-size figures."""
    doc: dict[str, Any] = {
        "schema_version": record.attrs.get("schema_version"),
        "units": {"time": "us", "bandwidth": "MB/s (1 MB = 10^6 B)", "msg_rate": "1/s",
                  "bytes": "B"},
        "run": {k: v for k, v in record.attrs.items() if k not in ("env",)},
        "ranks": record.ranks,
        "results": [
            {"suite": m.suite, "benchmark": m.benchmark, "mode": m.mode, "nprocs": m.nprocs,
             "ngroups": m.ngroups, "idle": m.idle,
             "placement": placement_groups(m, record.ranks), "rows": measurement_rows(m)}
            for m in record.measurements
        ],
    }
    summary = beff_summary(record)
    if summary is not None:
        doc["beff"] = summary
    return doc


def json_text(record: RunRecord) -> str:
    return json.dumps(json_doc(record), indent=2, sort_keys=False, default=_json_default) + "\n"


def _json_default(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return [_clean(v) for v in x.tolist()]
    if isinstance(x, np.generic):
        return _clean(x.item())
    raise TypeError(f"not JSON serializable: {type(x)}")
