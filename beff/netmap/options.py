"""``beff map``'s own options, declared once: their flags (``beff map --size 1MiB``), their
TOML keys (table ``[map]``), defaults and rules. Sizes take units as ``--memory-per-proc``
does (``64KiB``, ``1MiB``, ``65536``). No numerical library is imported here: ``beff map
--help`` and refused flags stay cheap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from beff.core.config import MAX_COUNT, MAX_TIME_S, parse_size
from beff.core.errors import UsageError
from beff.core.suite import Option

MIB = 1 << 20
MAX_SIZE = 1 << 30  # one message; a count of bytes must fit a C int
# --outliers: auto names both figures' outliers, or none on one node or an oversubscribed job
# (beff.netmap.outliers.placement_note); the others force their choice
FIGURES = ("auto", "both", "bandwidth", "latency", "none")


@dataclass(frozen=True)
class Size(Option):
    """A byte count, given as a number or with a unit (``1MiB``)."""

    metavar: str = "SIZE"

    def help_line(self) -> str:
        return f"{self.help} (default {size_text(int(self.default))})"

    def check(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            value = parse_size(value, where)
        return super().check(value, where)

    def parse(self, text: str, flag: str) -> Any:
        return self.check(text, flag)


def size_text(n: int) -> str:
    """A byte count as people write it: ``1 MiB``, ``64 KiB``, ``100 B``, ``23.5 GiB``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}" if n % scale == 0 else f"{n / scale:.1f} {unit}"
    return f"{n} B"


OPTIONS = (
    Option("per_node", int, 1, "ranks mapped per node: the first N of each node (the "
           "placement decides what a node is)", ("--per-node",), 1, 1 << 20),
    Option("all_ranks", bool, False, "map every rank, within and across nodes",
           ("--all-ranks",)),
    Option("shifts", int, 0, "measure K shifts chosen at random from --seed instead of all "
           "P-1 (0: all)", ("--shifts",), 0, MAX_COUNT),
    Option("seed", int, None, "seed of the random shifts (default: the time in seconds; "
           "stored)", ("--seed",), 0, (1 << 32) - 1),
    Size("size", int, MIB, "message size of the bandwidth samples", ("--size",), 1, MAX_SIZE),
    Option("window", int, 8, "messages of --size outstanding to and from the partners in a "
           "bandwidth sample", ("--window",), 1, 1024),
    Size("latency_size", int, 8, "message size of the latency samples (round trips)",
         ("--latency-size",), 0, MIB),
    Option("rounds", int, 20, "round trips per latency sample", ("--rounds",), 1, 1 << 20),
    Option("time", float, 60.0, "time budget in seconds for the measurement: as many samples "
           "per pair as fit, between 3 and --repetitions", ("--time",), 1e-3, MAX_TIME_S),
    Option("repetitions", int, 20, "most samples per pair", ("--repetitions",), 3, MAX_COUNT),
    Option("threshold", float, 4.0, "robust deviations below the reference that name a node "
           "or a link", ("--threshold",), 0.0, 1e3),
    Option("min_ratio", float, 2.0, "and how many times worse than the reference it must be",
           ("--min-ratio",), 1.0, 1e9),
    Option("outliers", str, "auto", "the figures whose outliers are named: auto (both, but "
           "none on a single node or an oversubscribed job, whose pair figures judge no "
           "link), both, bandwidth, latency or none (latency swings widely on nodes shared "
           "with other work); any but auto names them whatever the placement",
           ("--outliers",), choices=FIGURES),
)
BY_KEY = {o.key: o for o in OPTIONS}


def check_combination(options: dict[str, Any], given: set[str]) -> None:
    """``--per-node`` and ``--all-ranks`` exclude each other (``given``: the keys set by a
    flag or in TOML)."""
    if options.get("all_ranks") and "per_node" in given:
        raise UsageError("--per-node and --all-ranks exclude each other: --all-ranks maps "
                         "every rank, --per-node N the first N of each node")
