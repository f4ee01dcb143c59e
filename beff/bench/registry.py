"""Declarative benchmark registry: one kernel function plus one decorator per benchmark.

IMB's per-benchmark flags (SINGLE_TRANSFER, SCALE_TIME_HALF, SCALE_BW_DOUBLE, SENDBUF_SIZE_2I,
HAS_ROOT, ...) become fields of :class:`BenchmarkSpec`, so time, byte and bandwidth
arithmetic is table-driven and testable without MPI.
"""

from __future__ import annotations

import enum
import importlib
import inspect
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from beff.core import suite as suites
from beff.core.errors import UsageError
from beff.results.model import COLUMNS_BY_KIND

if TYPE_CHECKING:
    from beff.bench.ctx import Ctx

# A kernel is set up for one message size (its per-size preparation: buffers, handles,
# calibrations recorded with ctx.prepare) and yields ``run(n)``: the seconds this rank spent
# in the timed region over n iterations, one float per declared metric (a plain float for
# one metric). It never prints.
Runner = Callable[[int], "float | tuple[float, ...]"]
Kernel = Callable[["Ctx", int], AbstractContextManager[Runner]]


@dataclass(frozen=True)
class Metric:
    """A timed figure a kernel yields per run: seconds over the run's iterations."""

    name: str
    description: str = ""
    units: str = "s"


TIME = Metric("t", "time per iteration on this rank")

# The modes of IMB-EXT, IMB-RMA and IMB-IO: a sample's operations complete together at its
# end (aggregate) or each one before the next (non-aggregate).
AGGREGATE = "aggregate"
NON_AGGREGATE = "non-aggregate"


class Sizes(str, enum.Enum):
    """A benchmark's message lengths: IMB's (0, 2^min .. 2^max or -msglen), IMB-EXT's (the
    second length at most one element, whatever -msglog's min) or one element only."""

    IMB = "imb"
    EXT = "ext"
    ELEMENT = "element"


class Root(str, enum.Enum):
    """How a rooted benchmark's root moves from call to call: by -root_shift (FLAG: 0 or 1),
    always (root = call index mod NP), by -root_shift in the pure pass and always in the
    overlap pass (OVERLAP: IMB-NBC's Ireduce), or never (root 0)."""

    FLAG = "flag"
    ALWAYS = "always"
    OVERLAP = "overlap"
    NEVER = "never"


class Kind(str, enum.Enum):
    """IMB's benchmark classes; they choose the process counts and the output table."""

    SINGLE_TRANSFER = "single_transfer"
    PARALLEL_TRANSFER = "parallel_transfer"
    MSG_RATE = "parallel_transfer_msg_rate"
    COLLECTIVE = "collective"
    SYNC = "sync"


@dataclass(frozen=True)
class BenchmarkSpec:
    """How a benchmark is run and how its bytes, time and bandwidth are counted.

    * reported time per rank = timed seconds / repetitions * ``time_scale``
    * bandwidth [MB/s, MB = 10^6 B] = ``bw_scale`` * bytes / t_max
    * memory needed = send + receive buffer, each a factor of the message size (times the
      group size where ``send_np``/``recv_np`` is set), as IMB's SENDBUF_SIZE_*/RECVBUF_SIZE_*
    """

    name: str
    suite: str
    kernel: Kernel
    kind: Kind
    default: bool = True
    procs: int | None = None  # exact group size (2 for ping-pong style benchmarks)
    min_procs: int = 1
    time_scale: float = 1.0
    bw_scale: float = 1.0
    sendbuf: float = 1.0
    recvbuf: float = 1.0
    send_np: bool = False
    recv_np: bool = False
    rooted: bool = False
    reduction: bool = False
    nonaggr: bool = False  # starts from msgs_nonaggr repetitions in every mode (-iter)
    description: str = ""
    bytes_counted: str = ""
    metrics: tuple[Metric, ...] = (TIME,)
    columns: tuple[str, ...] = ()  # ids of beff.results.columns; () = the kind's columns
    modes: tuple[str, ...] = ("",)  # run order, e.g. (AGGREGATE, NON_AGGREGATE); "" = none
    root_rotation: Root = Root.FLAG
    # The calls are bound to one send and one receive buffer (persistent requests), so
    # -off_cache has no effect.
    one_buffer: bool = False
    # Its kernel moves a message beyond a C int count as block types (beff.core.counts);
    # other benchmarks refuse such sizes.
    large_counts: bool = False
    # C functions (capi names) the benchmark needs beyond MPI-3; without them it is recorded
    # as unsupported instead of run.
    requires: tuple[str, ...] = ()
    # Bytes per rank of resources beyond the send/receive buffers (RMA windows, I/O buffers)
    # at message length X with NP ranks; they count towards -mem.
    other_memory: Callable[[int, int], float] | None = None
    sizes_rule: Sizes = Sizes.IMB
    # Bytes the lengths are multiples of; 0 = the size of -data_type (-red_data_type for
    # reductions).
    size_unit: int = 0
    # The n operations of a sample share one completion (a flush or fence after the loop), so
    # they are timed in one batch whatever --batches says (so are all aggregate modes).
    single_batch: bool = False
    # Extra lines printed under the benchmark's name in IMB's list of benchmarks.
    comments: tuple[str, ...] = ()
    # Set up once per mode and process count, around all sizes (e.g. the benchmark's file);
    # what it yields is ctx.state. It may raise CollectiveFailure (on every rank together).
    setup: Callable[[Ctx, list[int]], AbstractContextManager[Any]] | None = None
    # IMB warms up before each size (-warm_up); IMB-IO does not.
    warm_up: bool = True
    # The smallest process count when -npmin is not given (IMB-IO: 1; the others: 2).
    default_npmin: int = 2

    @property
    def has_bandwidth(self) -> bool:
        return "mbytes_per_sec" in self.table_columns

    @property
    def table_columns(self) -> tuple[str, ...]:
        return self.columns or COLUMNS_BY_KIND[self.kind.value]

    def describe(self) -> dict[str, Any]:
        """Plain-data definition, stored with every result and shown by ``beff describe``."""
        return {
            "name": self.name,
            "suite": self.suite,
            "kind": self.kind.value,
            "default": self.default,
            "procs": self.procs,
            "min_procs": self.min_procs,
            "time_scale": self.time_scale,
            "bw_scale": self.bw_scale,
            "rooted": self.rooted,
            "description": self.description,
            "bytes_counted": self.bytes_counted,
            "metrics": [m.name for m in self.metrics],
            "columns": list(self.table_columns),
            "modes": [m for m in self.modes if m],
        }


_REGISTRY: dict[str, dict[str, BenchmarkSpec]] = {}


def known_suites() -> list[str]:
    """Every IMB-style suite (those that declare benchmark modules), the plug-ins' included."""
    return [s.name for s in suites.suites() if s.benchmarks]


def benchmark(
    name: str, *, suite: str, kind: Kind, **fields: Any
) -> Callable[[Kernel], Kernel]:
    """Register ``kernel`` as benchmark ``name`` of ``suite``; the docstring says what is timed."""

    def wrap(kernel: Kernel) -> Kernel:
        doc = inspect.getdoc(kernel) or ""
        spec = BenchmarkSpec(
            name=name, suite=suite, kernel=kernel, kind=kind, description=doc, **fields
        )
        table = _REGISTRY.setdefault(suite, {})
        if name.lower() in table:
            raise ValueError(f"benchmark {name} registered twice in suite {suite}")
        table[name.lower()] = spec
        return kernel

    return wrap


def load_suite(suite: str) -> dict[str, BenchmarkSpec]:
    """Import the suite's kernel modules and return its benchmarks in registration order."""
    modules = suites.get(suite).benchmarks
    if not modules:
        raise UsageError(f"suite {suite!r} has no IMB-style benchmarks (known: "
                         f"{', '.join(known_suites())})")
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    # Run order = the suite's module order, then registration order, whichever module
    # happened to be imported first.
    rank = {module: i for i, module in enumerate(modules)}
    table = _REGISTRY.get(suite, {})
    return dict(sorted(table.items(), key=lambda kv: rank.get(kv[1].kernel.__module__, len(rank))))


def iter_suites() -> Iterator[tuple[str, dict[str, BenchmarkSpec]]]:
    for suite in known_suites():
        yield suite, load_suite(suite)


def resolve(suite: str, names: list[str], include: list[str],
            exclude: list[str]) -> list[BenchmarkSpec]:
    """IMB's selection: named benchmarks (case-insensitive) or the default list, +include -exclude.

    The order is IMB's: the -include names first, then the named benchmarks in the order
    given (or the default list in the suite's order). A name given twice runs once (IMB runs
    it twice, and the second result would replace the first in the file).
    """
    table = load_suite(suite)

    def lookup(token: str) -> BenchmarkSpec:
        spec = table.get(token.lower())
        if spec is None:
            raise UsageError(f"unknown benchmark {token!r} in suite {suite} (see `beff list`)")
        return spec

    chosen = [lookup(n) for n in include]
    chosen += [lookup(n) for n in names] if names else [s for s in table.values() if s.default]
    dropped = {lookup(n).name for n in exclude}
    unique: dict[str, BenchmarkSpec] = {}
    for spec in chosen:
        if spec.name not in dropped:
            unique.setdefault(spec.name, spec)
    if not unique:
        raise UsageError("no benchmark left to run after -include/-exclude")
    return list(unique.values())
