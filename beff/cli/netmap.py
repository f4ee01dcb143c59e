"""``beff map``: its typer command, with its own options from their one declaration
(:mod:`beff.netmap.options`) and the shared ones from theirs."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from beff.cli import options as O
from beff.netmap.options import BY_KEY, Size, check_combination, size_text


def own(key: str) -> Any:
    """A typer option for ``beff map``'s own option ``key``, from its declaration."""
    o = BY_KEY[key]
    if o.default is None or o.kind is bool:
        default = ""
    elif o.choices:
        default = f" (default {o.default})"
    elif isinstance(o, Size):
        default = f" (default {size_text(int(o.default))})"
    else:
        default = f" (default {o.default:g})"
    return typer.Option(*o.flags, help=o.help[0].upper() + o.help[1:] + default + ".",
                        show_default=False)


def map_cmd(
    per_node: Annotated[int | None, own("per_node")] = None,
    all_ranks: Annotated[bool | None, own("all_ranks")] = None,
    shifts: Annotated[int | None, own("shifts")] = None,
    seed: Annotated[int | None, own("seed")] = None,
    size: Annotated[str | None, own("size")] = None,
    window: Annotated[int | None, own("window")] = None,
    latency_size: Annotated[str | None, own("latency_size")] = None,
    rounds: Annotated[int | None, own("rounds")] = None,
    time: Annotated[float | None, own("time")] = None,
    repetitions: Annotated[int | None, own("repetitions")] = None,
    threshold: Annotated[float | None, own("threshold")] = None,
    min_ratio: Annotated[float | None, own("min_ratio")] = None,
    outliers: Annotated[str | None, own("outliers")] = None,
    output: Annotated[str | None, O.option("output")] = None,
    fmt: Annotated[str | None, O.option("format", "output: table | json | csv (default "
                                        "table)", "<table|json|csv>")] = None,
    config_file: Annotated[str | None, O.option("config_file")] = None,
    report: Annotated[str | None, O.option("report")] = None,
    progress: Annotated[bool | None, O.option("progress")] = None,
    backend: Annotated[str | None, O.option("backend")] = None,
    force: Annotated[bool | None, O.option("force")] = None,
    timeout: Annotated[float | None, O.option("timeout")] = None,
    stall_timeout: Annotated[float | None, O.option("stall_timeout")] = None,
) -> None:
    """Under MPI: bandwidth and latency between every pair of nodes, with the slow nodes and
    links named (`mpiexec -n P beff map`, one rank per node); on one node or an
    oversubscribed job, whose pair figures judge no link, it says so and names them only
    when asked (--outliers both).

    Only the options given here override the config file: defaults, then TOML, then flags.
    """

    mine = {"per_node": per_node, "all_ranks": all_ranks, "shifts": shifts, "seed": seed,
            "size": size, "window": window, "latency_size": latency_size, "rounds": rounds,
            "time": time, "repetitions": repetitions, "threshold": threshold,
            "min_ratio": min_ratio, "outliers": outliers}
    opts = {key: BY_KEY[key].check(value, BY_KEY[key].flags[0])
            for key, value in mine.items() if value is not None}
    check_combination(opts, set(opts))
    given = {"output": output, "format": fmt, "config_file": config_file, "report": report,
             "progress": progress, "backend": backend, "force": force, "timeout": timeout,
             "stall_timeout": stall_timeout}
    overrides: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    overrides.update(argv=sys.argv[1:], options=opts)
    O.run_checked("map", overrides)
