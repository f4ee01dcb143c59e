"""``beff info``: how long every rank took to start, the MPI library, versions, timer and the
placement of every rank."""

from __future__ import annotations

import types

from beff.core import capi, runtime, terminal
from beff.core.metadata import collect_mpi, collect_python, collect_rank, placement


def run_info(MPI: types.ModuleType, _: object) -> None:
    world = MPI.COMM_WORLD
    ranks = world.gather(collect_rank(MPI), root=0)
    overhead, warning = capi.start("auto")
    phases = runtime.startup_phases(MPI)
    if world.Get_rank() != 0:
        return
    assert ranks is not None and phases is not None
    from beff.render.tables import Table  # rich: rank 0 alone renders
    from beff.results import startup

    for facts, row in zip(ranks, phases.tolist(), strict=True):
        facts.update(zip(runtime.STARTUP_COLUMNS, row, strict=True))
    console = terminal.console()
    # The main figure: each phase of the start-up over the ranks, as osu_init prints
    # MPI_Init's (the others follow)
    started = Table(title=f"start-up of {world.Get_size()} ranks", show_edge=False)
    for col in ("phase", "median (s)", "max (s)", "slowest rank", "its host"):
        started.add_column(col)
    for p in startup.phases(ranks):
        started.add_row(p.label, f"{p.median:.4f}", f"{p.max:.4f}", str(p.slowest_rank),
                        p.host)
    console.print(started)
    mpi = collect_mpi(MPI)
    where = placement(ranks)
    console.print(f"[bold]MPI library[/bold]: {mpi['library_version'].splitlines()[0]}")
    console.print(f"MPI standard {mpi['standard_version']}, thread level {mpi['thread_level']}, "
                  f"MPI.Wtick = {mpi['wtick']:.3g} s")
    console.print("versions: " + ", ".join(f"{k} {v}" for k, v in collect_python().items()))
    assert overhead is not None
    backend = capi.active().describe()
    cache = f", loop cache {backend['cache_dir']}" if backend.get("cache_dir") else ""
    console.print(f"timed loops: {overhead['backend']} backend{cache}; MPI_Wtime from a loop "
                  f"{overhead['wtime'] * 1e9:.0f} ns, MPI_Send to MPI_PROC_NULL "
                  f"{overhead['send_proc_null'] * 1e9:.0f} ns")
    if warning:
        console.print(f"[bold yellow]warning:[/bold yellow] {warning}")
    console.print(f"{world.Get_size()} ranks on {where['nodes']} node(s): "
                  f"{', '.join(where['hosts'])}")
    table = Table(title="placement", show_edge=False)
    for col in ("rank", "host", "node", "local rank", "cpus", "numa"):
        table.add_column(col)
    for r in ranks:
        table.add_row(str(r["rank"]), r["host"], str(r["node"]),
                      f"{r['local_rank']}/{r['local_size']}", r["cpus"], r["numa"] or "-")
    console.print(table)
    if where["oversubscribed"]:
        console.print("[bold yellow]warning:[/bold yellow] oversubscribed: more ranks than "
                      "allowed cores on a node")
    else:
        console.print("oversubscribed: no")
