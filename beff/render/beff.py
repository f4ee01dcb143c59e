"""Rendering of b_eff results (rank 0 after ``beff run``, or ``beff show``)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from beff.render import imb as report


def run_warnings(attrs: dict[str, Any], plan: Any) -> list[str]:
    out = [w for w in report.warnings_for(attrs) if "point-to-point" not in w]
    if attrs.get("placement", {}).get("nodes", 1) == 1:
        out.append("all ranks ran on one node: b_eff measures shared memory here, not a network")
    return out


def _mb(x: float) -> str:
    return f"{x:,.1f}"


def render(summary: dict[str, Any], attrs: dict[str, Any], console: Console) -> None:
    """The summary table, the per-length table, the patterns, and the original's final line."""
    P = summary["nprocs"]
    mode = summary["mode"]
    lmax = summary["lmax_bytes"]
    t = Table(title=f"{mode} on {P} processes — MB/s with MB = 10^6 B", box=box.SIMPLE_HEAD,
              show_header=True)
    t.add_column("figure")
    t.add_column("accumulated", justify="right")
    t.add_column("per process", justify="right")
    rows = [
        ("b_eff", summary["b_eff_MBps"], summary["b_eff_per_process_MBps"]),
        (f"b_eff at Lmax = {lmax:,} B", summary["b_eff_lmax_MBps"],
         summary["b_eff_lmax_per_process_MBps"]),
        ("b_eff at Lmax, rings only", summary["ring_lmax_MBps"],
         summary["ring_lmax_per_process_MBps"]),
        ("log-avg of ring patterns", summary["b_ring_MBps"], summary["b_ring_MBps"] / P),
        ("log-avg of random patterns", summary["b_random_MBps"], summary["b_random_MBps"] / P),
    ]
    for name, total, per in rows:
        t.add_row(name, _mb(total), _mb(per))
    t.add_row("latency, rings & random [µs]", f"{summary['latency_us']:.3f}", "")
    t.add_row("latency, rings only [µs]", f"{summary['latency_ring_us']:.3f}", "")
    t.add_row("ping-pong latency [µs] (half round trip)",
              f"{summary['pingpong_latency_us']:.3f}", "")
    t.add_row("ping-pong bandwidth at Lmax", _mb(summary["pingpong_bandwidth_MBps"]), "")
    if "b_eff_all_methods_MBps" in summary:
        t.add_row("b_eff incl. opt-in methods (not official)",
                  _mb(summary["b_eff_all_methods_MBps"]), "")
    mem = summary["memory_per_proc_bytes"]
    t.caption = (f"memory per process {mem / 2**20:,.0f} MiB ({summary['memory_per_proc_source']})"
                 f", Lmax = memory/128; seed {summary['seed']}; {summary['repetitions']} "
                 f"repetitions; {summary['time_per_loop_s']} s per loop; methods "
                 f"{', '.join(summary['methods_in_b_eff'])}; run time "
                 f"{summary['runtime_s']:.1f} s")
    console.print(t)
    lt = Table(title="per message length (max over methods and repetitions)",
               box=box.SIMPLE_HEAD)
    for col in ("bytes", "b_eff(L)", "rings", "random", "b_eff(L)/P"):
        lt.add_column(col, justify="right")
    for row in summary["per_length"]:
        lt.add_row(f"{row['bytes']:,}", _mb(row["b_eff_MBps"]), _mb(row["ring_MBps"]),
                   _mb(row["random_MBps"]), _mb(row["b_eff_MBps"] / P))
    console.print(lt)
    pt = Table(title="patterns (B_p = mean over lengths)", box=box.SIMPLE_HEAD)
    for col in ("#", "pattern", "kind", "B_p MB/s", "per process", "cross-node"):
        pt.add_column(col, justify="right" if col not in ("pattern", "kind") else "left")
    for p in summary["patterns"]:
        pt.add_row(str(p["index"]), p["label"], p["kind"], _mb(p["b_MBps"]),
                   _mb(p["b_MBps"] / P), f"{100 * p['cross_node_share']:.0f}%")
    console.print(pt)
    for w in summary.get("warnings", []):
        console.print(f"[bold yellow]warning:[/bold yellow] {w}")
    if summary.get("shortened_repetitions"):
        console.print("[yellow]CAUTION: the 60-second rule shortened the two largest lengths "
                      f"in repetition(s) {summary['shortened_repetitions']}[/yellow]")
    report.footer(attrs, console)
    console.print(summary["final_line"])
