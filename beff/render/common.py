"""What every family's views share: the run's header, warnings, the timed loops' cost line, and
JSON helpers. Reads the run's attributes only, never a family's results."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from rich.console import Console
from rich.markup import escape

from beff.core.metadata import format_cpus
from beff.results import printed, startup
from beff.results.model import RunRecord


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
    note = printed.note(a)
    if note:
        console.print(f"[bold yellow]{escape(note)}[/bold yellow]")
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
    batch = a.get("batch") or {}
    if batch:
        step = f" step {batch['step_id']}" if "step_id" in batch else ""
        more = ", ".join(f"{k} {batch[k]}" for k in ("partition", "queue", "nodelist")
                         if k in batch)
        console.print(f"batch: {batch.get('scheduler', '?')} job {batch.get('job_id', '?')}"
                      f"{step}" + (f" ({escape(more)})" if more else ""))
    for i, launch in enumerate(a.get("launches") or [], 1):  # a resumed run's
        results = launch.get("results") or []
        console.print(f"launch {i}: {launch.get('started', '?')}, {launch.get('nprocs', '?')} "
                      f"ranks on {escape(', '.join(launch.get('hosts') or ['?']))}, "
                      f"{launch.get('status', '?')}, {len(results)} result"
                      f"{'s' if len(results) != 1 else ''}")
    console.print(f"{a.get('nprocs', '?')} ranks on {where.get('nodes', '?')} node(s): "
                  f"{', '.join(where.get('hosts', []))}")
    nodes: dict[Any, list[dict[str, Any]]] = {}
    for r in record.ranks:
        nodes.setdefault(r.get("node", r.get("host")), []).append(r)
    for node, members in nodes.items():
        hosts = "+".join(dict.fromkeys(str(r.get("host", "?")) for r in members))
        ranks = format_cpus(sorted(int(r["rank"]) for r in members))
        console.print(f"  node {node} ({hosts}): ranks {ranks}")
    found = startup.phases(record.ranks)
    if found:
        console.print(escape(startup.line(found)), soft_wrap=True)


def print_warnings(console: Console, found: Iterable[str]) -> None:
    for w in found:
        console.print(f"[bold yellow]warning:[/bold yellow] {w}")


def footer(attrs: dict[str, Any], console: Console, found: Iterable[str] = ()) -> None:
    """The warnings (of a stored run: during a run they went to stderr) and the loops' cost."""
    print_warnings(console, found)
    line = overhead_line(attrs)
    if line:
        console.print(f"[dim]{line}[/dim]")


def _clean(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _json_default(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return [_clean(v) for v in x.tolist()]
    if isinstance(x, np.generic):
        return _clean(x.item())
    raise TypeError(f"not JSON serializable: {type(x)}")
