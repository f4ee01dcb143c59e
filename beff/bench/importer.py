"""``beff import`` of IMB's text output, of any component (IMB-MPI1, NBC, MPI4, EXT, RMA, IO,
P2P, MT): each benchmark block becomes a :class:`~beff.results.model.Measurement` without
samples, whose table columns hold the values as printed (``Measurement.printed``).

The component comes from the title line (``Intel(R) MPI Benchmarks 2021.11, MPI-1 part``) and
is matched with the ``part`` of the IMB-style suites' views, so a suite is declared in one
place. A benchmark beff knows takes its declaration (kind, columns, scales); one it does not
(IMB-MT's, or a newer IMB's) takes the columns its table printed. :func:`parse` is pure: text
in, records out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from beff.bench.registry import BenchmarkSpec, load_suite
from beff.bench.view import table_columns
from beff.core import suite as suites
from beff.results import build as measured
from beff.results import columns
from beff.results.imported import ImportFailure, utc_time
from beff.results.model import COLUMNS_BY_KIND, OK, OUT_OF_MEM, TIME_OUT, Measurement, RunRecord

# The title of every IMB from 3.x to 2021.x ("Intel (R) MPI Benchmarks 4.1 Update 1", "... 2017
# update 2", "... 2019 Update 5") and of its forerunner ("PALLAS MPI Benchmark Suite V2.2"):
# group 1 the program, 2 the version as printed, 3 the part.
TITLE = re.compile(r"(Intel\s*\(R\)\s*MPI\s+Benchmarks?|PALLAS\s+MPI\s+Benchmarks?)\s+"
                   r"(?:Suite\s+)?(V?\d[\w.]*(?:\s+[Uu]pdate\s+\d+)?)"
                   r"(?: layout\))?,\s*(\S+(?: \S+)*?)\s+part")
# A log without its title (cut above it) still names the program in its calling sequence.
PROGRAM = re.compile(r"^#\s*(?:\S*/)?IMB-(MPI1|NBC|MPI4|EXT|RMA|IO|P2P|MT)\b", re.M)
PART_OF_PROGRAM = {"MPI1": "MPI-1", "NBC": "MPI-NBC", "MPI4": "MPI-4", "EXT": "MPI-2",
                   "RMA": "MPI-RMA", "IO": "MPI-IO", "P2P": "IMB-P2P", "MT": "MT"}
FINALIZE = "# All processes entering MPI_Finalize"
MAX_COUNT = 1 << 62  # sizes and repetitions beyond this are no IMB's
BLOCK = re.compile(r"^# Benchmarking (Multi-)?(\S+)(?:\s+\((.*)\))?\s*$")
GROUPS = re.compile(r"^# \( (\d+) groups of (\d+) processes each running simultaneous \)")
PROCESSES = re.compile(r"^# (?:\( )?#processes = (\d+)(?:\s*\(threads: (\d+)\))?"
                       r"(;\s*rank order)?")
GROUP_RANKS = re.compile(r"^# Group\s+(\d+):((?:\s+\d+)*)\s*$")
IDLE = re.compile(r"^# \( (\d+) additional process(?:es)? waiting in MPI_Barrier\)")
MODE = re.compile(r"^#\s+MODE: (\S+)")
NEEDED = re.compile(r"needed X=\s*([\d.]+) GB")
INFO = {"Machine": "machine", "System": "system", "Release": "release", "Version": "version"}
TYPES = {"MPI_BYTE": "byte", "MPI_CHAR": "char", "MPI_INT": "int", "MPI_FLOAT": "float",
         "MPI_DOUBLE": "double"}
THREADS = {"MPI_THREAD_FUNNELED": "funneled", "MPI_THREAD_SERIALIZED": "serialized",
           "MPI_THREAD_MULTIPLE": "multiple"}
# The columns of a benchmark beff does not declare, by the header IMB printed.
GENERIC = {"#bytes": "bytes", "#repetitions": "repetitions", "t[usec]": "t",
           "t_min[usec]": "t_min", "t_max[usec]": "t_max", "t_avg[usec]": "t_avg",
           "Mbytes/sec": "mbytes_per_sec", "Msg/sec": "msg_per_sec", "t_ovrl[usec]": "t_ovrl",
           "t_pure[usec]": "t_pure", "t_CPU[usec]": "t_cpu", "overlap[%]": "overlap",
           "defects": "defects"}


@dataclass
class Block:
    """One ``# Benchmarking`` block as printed."""

    name: str
    multi_prefix: bool
    grid: str = ""
    nprocs: int = 0
    ngroups: int = 1
    idle: int = 0
    threads: int | None = None
    ranks: list[list[int]] = field(default_factory=list)  # per group
    map_rows: list[list[int]] = field(default_factory=list)
    mode: str = ""
    headers: list[str] = field(default_factory=list)
    # (group or None, size, values or None, status, needed GB)
    rows: list[tuple[int | None, int, list[float] | None, str, float]] = \
        field(default_factory=list)


@dataclass
class Header:
    """What the text says before its first block."""

    version: str = ""
    part: str = ""
    program: str = "imb"  # "pmb": the PALLAS MPI Benchmarks, IMB's forerunner
    info: dict[str, str] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    min_len: int | None = None
    max_len: int | None = None
    user_lengths: bool = False
    config: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    comments: dict[str, list[str]] = field(default_factory=dict)


def sniff(text: str) -> str | None:
    """``IMB <version> text (<part> part)`` when ``text`` is IMB's output, else None. Several
    runs in one text are ``IMB text (N runs: ...)``."""
    if "# Benchmarking " not in text:
        return None
    heads = TITLE.findall(text)
    if not heads:
        program = PROGRAM.search(text[:65536])
        return None if program is None else \
            f"IMB text without its title ({PART_OF_PROGRAM[program.group(1)]} part)"
    names = [f"{'PMB' if p.upper().startswith('PALLAS') else 'IMB'} {v.removeprefix('V')} "
             f"text ({part} part)" for p, v, part in heads]
    if len(names) == 1:
        return names[0]
    return f"IMB text ({len(names)} runs: {', '.join(dict.fromkeys(names))})"


def _number(token: str) -> float:
    try:
        return float(token)
    except ValueError:
        return math.nan


def _value_after_colon(line: str) -> str:
    return line.split(":", 1)[1].strip() if ":" in line else ""


def parse_header(lines: list[str]) -> Header:
    """The title, the system, the calling sequence, the lengths and the list of benchmarks."""
    h = Header()
    i = 0
    in_list = False
    while i < len(lines) and not lines[i].startswith("# Benchmarking "):
        line = lines[i]
        body = line[1:].strip() if line.startswith("#") else ""
        head = TITLE.search(line)
        key = body.split(":", 1)[0].strip() if ":" in body else ""
        if head and not h.part:
            h.version, h.part = head.group(2).removeprefix("V"), head.group(3)
            h.program = "pmb" if head.group(1).upper().startswith("PALLAS") else "imb"
        elif key in INFO:
            h.info[INFO[key]] = _value_after_colon(body)
        elif key == "MPI Version":
            h.info["mpi_version"] = _value_after_colon(body)
        elif key == "MPI Thread Environment":
            h.info["thread_level"] = THREADS.get(_value_after_colon(body), "single")
        elif body.startswith("Calling sequence was"):
            j = i + 1
            while j < len(lines) and lines[j].strip() in ("", "#"):
                j += 1
            if j < len(lines) and lines[j].startswith("#"):
                h.command = lines[j][1:].split()
                i = j
        elif body.startswith(("Minimum message length", "Minimum io portion")):
            h.min_len = int(body.rsplit(":", 1)[1])
        elif body.startswith(("Maximum message length", "Maximum io portion")):
            h.max_len = int(body.rsplit(":", 1)[1])
        elif "lengths were user defined" in body:
            h.user_lengths = True
        elif key in ("MPI_Datatype", "MPI_Datatype for reductions"):
            value = TYPES.get(_value_after_colon(body))
            if value:
                h.config["data_type" if key == "MPI_Datatype" else "red_data_type"] = value
        elif body.startswith("List of Benchmarks to run"):
            in_list = True
        elif in_list and line.startswith("#     ") and h.names:
            h.comments.setdefault(h.names[-1], []).append(line[6:].rstrip())
        elif in_list and re.fullmatch(r"[A-Za-z]\w*", body):
            h.names.append(body)
        elif in_list and body.startswith("Minimum"):
            in_list = False
        i += 1
    return h


def parse_blocks(lines: list[str]) -> list[Block]:
    """Every ``# Benchmarking`` block, its process counts, mode, columns and rows."""
    blocks: list[Block] = []
    b: Block | None = None
    in_map = False
    for line in lines:
        m = BLOCK.match(line)
        if m:
            b = Block(m.group(2), bool(m.group(1)), m.group(3) or "")
            blocks.append(b)
            in_map = False
            continue
        if b is None:
            continue
        if line.startswith("# All processes entering MPI_Finalize"):
            b = None
            continue
        if (g := GROUPS.match(line)) is not None:
            b.ngroups, b.nprocs = int(g.group(1)), int(g.group(2))
        elif (p := PROCESSES.match(line)) is not None:
            b.nprocs = int(p.group(1))
            b.threads = int(p.group(2)) if p.group(2) else None
            in_map = bool(p.group(3))
        elif (r := GROUP_RANKS.match(line)) is not None:
            b.ranks.append([int(x) for x in r.group(2).split()])
        elif in_map and re.fullmatch(r"#(\s+\d+)+\s*", line):
            b.map_rows.append([int(x) for x in line[1:].split()])
        elif (d := IDLE.match(line)) is not None:
            b.idle = int(d.group(1))
        elif (md := MODE.match(line)) is not None:
            b.mode = md.group(1).lower()
        elif not b.headers and "#repetitions" in line and not line.startswith("#"):
            b.headers = line.split()
        elif b.headers and line.strip() and not line.startswith("#"):
            _row(b, line)
    return [b for b in blocks if b.headers]


def _row(b: Block, line: str) -> None:
    tokens = line.split()
    grouped = b.headers[0] == "Group"
    at = 1 if grouped else 0
    group = int(tokens[0]) if grouped and tokens[0].isdigit() else None
    sized = len(b.headers) > at and b.headers[at] == "#bytes"
    if "time-out" in line or "out-of-mem" in line:
        if not sized or len(tokens) <= at or not tokens[at].isdigit():
            return
        need = NEEDED.search(line)
        if int(tokens[at]) >= MAX_COUNT:
            raise ImportFailure(f"{b.name}: #bytes {tokens[at]} is out of range (a damaged "
                                "log?)")
        b.rows.append((group, int(tokens[at]), None,
                       TIME_OUT if "time-out" in line else OUT_OF_MEM,
                       float(need.group(1)) if need else math.nan))
        return
    if len(tokens) != len(b.headers) or (grouped and group is None):
        return
    values = [_number(t) for t in tokens]
    for k, header in enumerate(b.headers):
        if header in ("#bytes", "#repetitions", "Group") and not 0 <= values[k] < MAX_COUNT:
            raise ImportFailure(f"{b.name}: {header} {tokens[k]} is out of range (a damaged "
                                "log?)")
    size = int(values[at]) if sized and math.isfinite(values[at]) else -1
    b.rows.append((group, size, values, OK, math.nan))


def _spec(suite: str, name: str) -> BenchmarkSpec | None:
    if not suites.get(suite).benchmarks:
        return None
    return load_suite(suite).get(name.lower())


def _column_ids(headers: list[str], declared: list[str]) -> list[str | None]:
    """Each printed header's column id: the declared column of that header, else beff's
    generic one, else None (a column beff does not know: kept out)."""
    known: dict[str, str] = {}
    for cid in declared:
        col = columns.lookup(cid)
        if col is not None:
            known.setdefault(col.imb.strip(), cid)
    return [known.get(h, GENERIC.get(h)) for h in headers]


def measurement(suite: str, b: Block, multi: int | None, sync_size: int) -> Measurement:
    """A block as a Measurement with the values as printed and no samples."""
    spec = _spec(suite, b.name)
    grouped = b.headers[0] == "Group"
    headers = b.headers[1:] if grouped else b.headers
    if multi is None and (grouped or b.multi_prefix):
        multi = 1 if grouped else 0
    kind = spec.kind.value if spec is not None else _kind(headers)
    declared = list(spec.table_columns) if spec is not None else []
    ids = _column_ids(headers, declared)
    probe = measured.imported(suite=suite, benchmark=b.name, kind=kind, nprocs=b.nprocs,
                              ngroups=b.ngroups, multi=multi, idle=0, sizes=[],
                              repetitions=np.zeros(0), status=[], group=[], world_ranks=[],
                              columns=tuple(declared), printed={})
    if spec is None or [c for c in ids if c] != table_columns(probe):
        declared = [c for c in ids if c and c != "defects"]
    # Each row is a size of its own, in the order printed: a size printed twice (IMB's
    # reductions round -msglen's lengths to whole elements) stays twice. A table with a Group
    # column prints one row per group for each size: a new size starts where the group
    # number does not grow.
    index: list[int] = []
    sizes: list[int] = []
    last_group = -1
    for group, size, _, _, _ in b.rows:
        if group is None or group <= last_group or not sizes or sizes[-1] != size:
            sizes.append(size)
        index.append(len(sizes) - 1)
        last_group = group if group is not None else -1
    sizes = [sync_size if size == -1 else size for size in sizes]
    ngroups_printed = b.ngroups if grouped else 1
    S = len(sizes)
    printed = {cid: np.full((S, ngroups_printed), np.nan) for cid in ids if cid}
    reps = np.zeros(S, dtype=np.int64)
    status = [OK] * S
    needed = np.full(S, np.nan)
    for s, (group, _, values, state, need) in zip(index, b.rows, strict=True):
        g = group if group is not None and group < ngroups_printed else 0
        if values is None:
            status[s], needed[s] = state, need
            continue
        for cid, value in zip(ids, values[1:] if grouped else values, strict=True):
            if cid == "repetitions" and g == 0:
                reps[s] = int(value) if math.isfinite(value) else 0
            elif cid:
                printed[cid][s, g] = value
    for cid in ("bytes", "repetitions"):
        printed.pop(cid, None)
    P = b.nprocs * b.ngroups
    world = [r for ranks in b.ranks for r in ranks] if b.ranks else list(range(P))
    group_of = [g for g, ranks in enumerate(b.ranks) for _ in ranks] if b.ranks else \
        [k // max(1, b.nprocs) for k in range(P)]
    attrs: dict[str, Any] = {"imported": True}
    if spec is not None:
        attrs.update(description=spec.description, bytes_counted=spec.bytes_counted)
    if b.threads is not None:
        attrs["threads"] = b.threads
    if b.map_rows:
        attrs["map_rows"] = b.map_rows
    if b.grid:
        attrs["decomposition"] = b.grid
    return measured.imported(
        suite=suite, benchmark=spec.name if spec is not None else b.name, kind=kind,
        nprocs=b.nprocs, ngroups=b.ngroups, multi=multi, idle=b.idle, sizes=sizes,
        repetitions=reps, status=status, group=group_of, world_ranks=world,
        time_scale=spec.time_scale if spec is not None else 1.0,
        bw_scale=spec.bw_scale if spec is not None else 1.0,
        needed_gb=needed if np.isfinite(needed).any() else None,
        attrs=attrs, mode=b.mode, columns=tuple(declared),
        metric=spec.metrics[0].name if spec is not None else "t",
        printed=printed,
    )


def _kind(headers: list[str]) -> str:
    """The IMB class whose table has these columns (a benchmark beff does not declare)."""
    ids = tuple(GENERIC.get(h, h) for h in headers)
    for kind, cols in COLUMNS_BY_KIND.items():
        if ids == cols:
            return kind
    return "collective"


def _suite_of(part: str, names: list[str]) -> str:
    """The IMB-style suite whose view prints ``part`` (IMB's component name). IMB 3.x and
    4.x printed "MPI-2 part" for both IMB-EXT and IMB-IO: there the benchmarks tell."""
    imb = [s for s in suites.suites() if s.importer == IMPORTER_NAME]
    parts = {s.name: getattr(s.load("view"), "part", None) for s in imb}
    found = [s.name for s in imb if parts[s.name] == part]

    def known(suite: str) -> int:
        return sum(_spec(suite, n) is not None for n in names) if suites.get(suite).benchmarks \
            else 0

    if part == "MPI-2" and names:
        best = max((s.name for s in imb), key=known)
        if known(best) > (known(found[0]) if found else 0):
            return best
    if found:
        return found[0]
    raise ImportFailure(f"IMB's {part} part is not a component beff knows")


def _config(h: Header, multi: int | None, sizes: list[int]) -> dict[str, Any]:
    cfg: dict[str, Any] = dict(h.config)
    cfg["sizes"] = sorted(s for s in set(sizes) if s >= 0)  # IMB-P2P's header shows them
    if h.user_lengths:
        cfg["msglen"] = sorted(s for s in set(sizes) if s >= 0)
    top = h.max_len if h.max_len is not None else max(sizes, default=0)
    if top > 0:
        cfg["msglog_max"] = int(math.log2(top)) if top & (top - 1) == 0 else \
            math.ceil(math.log2(top))
    if h.min_len is not None:
        cfg["zero_size"] = h.min_len == 0
        if h.min_len > 0:
            cfg["msglog_min"] = int(math.log2(h.min_len))
    if multi is not None:
        cfg["multi"] = multi
    return cfg


def _multi_flag(command: list[str]) -> int | None:
    for flag, value in zip(command, command[1:], strict=False):
        if flag == "-multi" and value in ("0", "1"):
            return int(value)
    return None


def split_runs(lines: list[str]) -> list[list[str]]:
    """The runs of a text, each from its title line (batch jobs append several runs to one
    output file); what comes before the first title belongs to the first run."""
    starts = [i for i, line in enumerate(lines) if TITLE.search(line)]
    cuts = [0, *starts[1:], len(lines)]
    return [lines[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]


def parse_all(text: str) -> list[RunRecord]:
    """Every IMB run in ``text`` as a beff run of its own (:func:`parse_run`), in order."""
    lines = text.replace("part#-", "part\n#-").splitlines()
    runs = split_runs(lines)
    return [parse_run(run, k + 1 if len(runs) > 1 else 0) for k, run in enumerate(runs)]


def parse(text: str) -> RunRecord:
    """The one IMB run in ``text``; ImportFailure if it holds several (:func:`parse_all`)."""
    records = parse_all(text)
    if len(records) > 1:
        raise ImportFailure(f"the text holds {len(records)} runs (parse_all reads each)")
    return records[0]


def parse_run(lines: list[str], number: int = 0) -> RunRecord:
    """One IMB run's text as a beff run: its header as the run's attributes, each block as a
    Measurement of the component's suite. ``number``: its place among the runs of the text
    (0: the only one). Raises ImportFailure when nothing is found.

    A run without IMB's closing line (killed, or its log cut) is ``incomplete``, with a
    warning that names what is missing: the benchmarks listed but not printed, and a last
    table that stops short of the largest size."""
    h = parse_header(lines)
    where = f"run {number}: " if number else ""
    warnings: list[str] = []
    if not h.part:
        named = next((m for line in lines[:200] if (m := PROGRAM.match(line))), None)
        if named is None:
            raise ImportFailure(f"{where}no IMB title line (Intel(R) MPI Benchmarks ..., ... "
                                "part)")
        h.part = PART_OF_PROGRAM[named.group(1)]
        h.command = h.command or named.string[1:].split()
        warnings.append("the log starts without IMB's title: the version and the system "
                        "are unknown")
    blocks = parse_blocks(lines)
    if not blocks:
        raise ImportFailure(f"{where}IMB {h.part} text without a benchmark table")
    suite = _suite_of(h.part, [b.name for b in blocks])
    multi = _multi_flag(h.command)
    sync_size = h.max_len if h.max_len is not None else 0
    results = [measurement(suite, b, multi, sync_size) for b in blocks]
    date = next((line.split(":", 1)[1].strip() for line in lines
                 if line.startswith("# Date ")), "")
    world = max((b.nprocs * b.ngroups + b.idle for b in blocks), default=0)
    names = h.names or list(dict.fromkeys(m.benchmark for m in results))
    finished = any(line.startswith(FINALIZE) for line in lines)
    if not finished:
        warnings.append(_unfinished(h, blocks, names))
    attrs: dict[str, Any] = {
        "suite": suite, "nprocs": world, "status": "complete" if finished else "incomplete",
        "created": utc_time(date),
        "command_line": h.command, "benchmarks": names,
        "benchmark_comments": {k: v for k, v in h.comments.items() if v},
        "config": _config(h, multi, [int(s) for m in results for s in m.sizes]),
        "host": {k: h.info.get(k, "") for k in INFO.values()},
        "mpi": {"standard_version": h.info.get("mpi_version", ""),
                "thread_level": h.info.get("thread_level", "single"), "library_version": ""},
        "versions": {h.program: h.version}, "placement": {}, "warnings": warnings,
    }
    if number:
        attrs["imported"] = {"run": number}
    return RunRecord(attrs=attrs, results=list(results))


def _unfinished(h: Header, blocks: list[Block], names: list[str]) -> str:
    """The warning of a run without IMB's closing line: what it lacks."""
    printed = {b.name.lower() for b in blocks}
    missing = [n for n in names if n.lower().removeprefix("(multi-)") not in printed]
    text = ("the log ends without IMB's closing line (\"All processes entering "
            "MPI_Finalize\"): the run did not finish, or its log was cut")
    last = blocks[-1]
    sizes = [size for _, size, _, _, _ in last.rows if size >= 0]
    if h.max_len is not None and sizes and max(sizes) < h.max_len and \
            not any(state != OK for _, _, _, state, _ in last.rows):
        text += (f"; the last table ({last.name} at {last.nprocs} processes) stops at "
                 f"{max(sizes)} bytes of {h.max_len}")
    if missing:
        text += f"; listed but not in the log: {', '.join(missing)}"
    return text


@dataclass(frozen=True)
class ImbTextImporter:
    """The importer of IMB's text (:class:`beff.results.imported.Importer`)."""

    def sniff(self, text: str) -> str | None:
        return sniff(text)

    def parse(self, text: str, path: Path) -> RunRecord:
        return parse(text)

    def parse_all(self, text: str, path: Path) -> list[RunRecord]:
        return parse_all(text)


IMPORTER_NAME = "beff.bench.importer:IMPORTER"
IMPORTER = ImbTextImporter()
