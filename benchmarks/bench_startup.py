"""How long beff takes to answer at once, and how its start-up work grows with the ranks.

Timing mode (default): ``beff --version``, and a refused bad flag at 1 and 4 ranks
(``mpiexec -n N beff imb mpi1 -time nope``), whole commands, median of N launches.
Run: ``python benchmarks/bench_startup.py [--repeat 15] [--tree OTHER_CHECKOUT]``. With
``--tree``, each case alternates launches of this checkout's beff and OTHER_CHECKOUT's (put
first on PYTHONPATH; same Python and MPI), so that before/after figures share the machine's
state. Targets (issue 24): under 1 s for ``--version`` and under 2 s for a bad flag at 4
ranks, on a quiet machine. Prints the 1-minute load before and after: report it.

Growth-curve mode: ``python benchmarks/bench_startup.py --curve 1,2,4,8,16,32,64``
launches a tiny real run (``mpiexec -n N python -m beff imb mpi1 PingPong -msglog 0:1
-iter_policy off -iter 5 -o TMP.h5``; ``--beff-args`` replaces the part after ``-m beff``)
at each N and reports, per rank (rank 0, and the median and max of the other ranks):
the modules imported (``len(sys.modules)`` at exit), the files opened and bytes read under
the Python environment (the Python installation, the venv, beff's source tree) and under
beff's compiled-loop cache ($BEFF_CACHE_DIR, else $XDG_CACHE_HOME/beff or ~/.cache/beff), the
read calls and bytes of /proc/self/io, and the time to the first barrier (the sum of the
four start-up phases of the result file's /ranks table). Each N is launched twice: once as
is (times, modules, /proc/self/io) and once under ``strace -f`` (files and bytes; install
strace with ``apt-get install -y strace`` or ``dnf install strace``; without it, or with
``--no-strace``, only /proc/self/io's figures are given). Each rank runs through a wrapper,
written to a temporary directory, that writes its figures at exit. Ends with a paper
estimate for ``--nodes`` nodes of ``--per-node`` ranks from the largest N measured. On a
small machine the large N are oversubscribed: the curve measures work, not speed. With
``--tree``, the whole curve is measured for both checkouts. Rank 1's figures before/after a
change, at 2 ranks of b_eff: ``--curve 2 --tree OLD --beff-args "run --quick
--memory-per-proc 1MiB --time-per-loop 0.01"``.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from _tools import find_tool

HERE = Path(__file__).resolve().parents[1]
CURVE_ARGS = "imb mpi1 PingPong -msglog 0:1 -iter_policy off -iter 5"
STARTUP_COLUMNS = ("startup_imports_s", "startup_mpi_init_s", "startup_setup_s",
                   "startup_barrier_s")  # beff.core.runtime.STARTUP_COLUMNS
MB = 1e6


def cases(mpiexec: str) -> dict[str, list[str]]:
    py = [sys.executable, "-m", "beff"]
    return {
        "beff --version": [*py, "--version"],
        "bad flag, 1 rank": [mpiexec, "-n", "1", *py, "imb", "mpi1", "-time", "nope"],
        "bad flag, 4 ranks": [mpiexec, "-n", "4", *py, "imb", "mpi1", "-time", "nope"],
    }


def launch_env(tree: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(tree), OMPI_ALLOW_RUN_AS_ROOT="1",
                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")


def once(cmd: list[str], tree: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=launch_env(tree),
                          timeout=120)
    elapsed = time.perf_counter() - start
    expected = 0 if "--version" in cmd else 2
    if proc.returncode != expected:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-500:]}")
    return elapsed


def timing(trees: dict[str, Path], repeat: int) -> None:
    mpiexec = find_tool("mpiexec", "bench_startup")
    print(f"load before: {os.getloadavg()[0]:.2f}")
    for name, cmd in cases(mpiexec).items():
        times: dict[str, list[float]] = {t: [] for t in trees}
        for _ in range(repeat):
            for label, tree in trees.items():
                times[label].append(once(cmd, tree))
        row = ", ".join(f"{label} median {statistics.median(v):.3f} s "
                        f"(min {min(v):.3f}, max {max(v):.3f})" for label, v in times.items())
        print(f"{name}: {row}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


# --- growth curve -------------------------------------------------------------------------

# Each rank runs ``python WRAPPER ARGS``: it runs beff as ``python -m beff ARGS`` does and, at
# exit (after beff's own exit functions), writes DIR/rank-R.txt. len(sys.modules) is taken
# before anything is opened; the wrapper itself imports nothing that ``-m`` would not.
WRAPPER = '''\
import atexit, os, sys

def _figures():
    modules = len(sys.modules)
    env = os.environ
    rank = env.get("PMI_RANK") or env.get("OMPI_COMM_WORLD_RANK") or env.get("PMIX_RANK") or "0"
    io = {{}}
    try:
        with open("/proc/self/io") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                io[key] = value.strip()
    except OSError:
        pass
    beff = getattr(sys.modules.get("beff"), "__file__", "") or ""
    lines = [f"rank {{rank}}", f"pid {{os.getpid()}}", f"modules {{modules}}",
             f"rchar {{io.get('rchar', -1)}}", f"syscr {{io.get('syscr', -1)}}", f"beff {{beff}}"]
    with open(os.path.join({out!r}, f"rank-{{rank}}.txt"), "w") as fh:
        fh.write("\\n".join(lines) + "\\n")

atexit.register(_figures)
import runpy
runpy.run_module("beff", run_name="__main__", alter_sys=True)
'''

LOOKUPS = ("newfstatat", "statx", "stat", "lstat", "access", "faccessat", "faccessat2",
           "readlink", "readlinkat")
STRACE_CALLS = ",".join(("openat", "read", "pread64", *LOOKUPS, "clone", "clone3", "fork",
                         "vfork"))
CATEGORIES = ("python", "venv", "beff", "cache", "run", "other")
ENV_CATEGORIES = ("python", "venv", "beff")
_LINE = re.compile(r"^(\d+)\s+(.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(.*)$")
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
_FD_PATH = re.compile(r"^\d+<(.*?)>,")
# openat(DIRFD<dir>, "path", FLAGS...), newfstatat(DIRFD<dir>, "path", ...), stat("path", ...)
_PATH_ARGS = re.compile(r'^(?:[^,<"]*(?:<(.*?)>)?, )?"((?:[^"\\]|\\.)*)"(?:, ([A-Z_|0-9]+))?')
_OPENED = re.compile(r"^(\d+)<(.*)>$")


def cache_root() -> Path:
    """beff's compiled-loop cache root, as beff.core.capi.cache_dir finds it."""
    root = os.environ.get("BEFF_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "beff")
    return Path(root)


@dataclass(frozen=True)
class Roots:
    """The directories whose files are counted apart."""

    python: str  # the Python installation (sys.base_prefix: stdlib, libpython)
    venv: str  # sys.prefix: site-packages (numpy, numba, llvmlite, mpi4py, h5py, MPI)
    beff: str  # the beff package that runs
    cache: str  # the compiled-loop cache
    run: str  # the run's directory (the result file)

    def category(self, path: str) -> str:
        for name in ("cache", "beff", "run", "venv", "python"):  # innermost first
            root = getattr(self, name)
            if path == root or path.startswith(root + os.sep):
                return name
        return "other"


def make_roots(tree: Path, run_dir: Path) -> Roots:
    def real(p: str | Path) -> str:
        return os.path.realpath(p)

    return Roots(python=real(sys.base_prefix), venv=real(sys.prefix), beff=real(tree / "beff"),
                 cache=real(cache_root()), run=real(run_dir))


@dataclass
class Files:
    """What one process (or one rank, its threads and children folded in) did to files."""

    opened: Counter[str] = field(default_factory=Counter)  # successful openat, by category
    failed: Counter[str] = field(default_factory=Counter)  # failed openat (searches)
    lookups: Counter[str] = field(default_factory=Counter)  # stat, access, readlink of a path
    read: Counter[str] = field(default_factory=Counter)  # bytes of read/pread64
    written: int = 0  # loop-cache files opened to be created or written (not lock files)
    paths: set[str] = field(default_factory=set)  # distinct files opened (env and cache)

    def add(self, other: Files) -> None:
        self.opened.update(other.opened)
        self.failed.update(other.failed)
        self.lookups.update(other.lookups)
        self.read.update(other.read)
        self.written += other.written
        self.paths |= other.paths


def parse_strace(trace: Path, roots: Roots) -> tuple[dict[int, Files], dict[int, int]]:
    """Per traced process/thread id, its file figures; and each new id's parent id."""
    per: dict[int, Files] = {}
    parent: dict[int, int] = {}
    pending: dict[int, str] = {}
    with open(trace, errors="replace") as fh:
        for raw in fh:
            m = _LINE.match(raw.rstrip("\n"))
            if m is None:
                continue
            pid, text = int(m.group(1)), m.group(2)
            if text.endswith("<unfinished ...>"):
                pending[pid] = text[: -len("<unfinished ...>")]
                continue
            resumed = _RESUMED.match(text)
            if resumed is not None:
                text = pending.pop(pid, resumed.group(1) + "(") + resumed.group(2)
            call = _CALL.match(text)
            if call is None:
                continue
            name, args, ret = call.groups()
            if name in ("clone", "clone3", "fork", "vfork"):
                if ret.isdigit() and int(ret) > 0:
                    parent[int(ret)] = pid
                continue
            files = per.setdefault(pid, Files())
            if name == "openat":
                note(files, args, ret, roots)
            elif name in LOOKUPS:
                spec = _PATH_ARGS.match(args)
                if spec is not None and spec.group(2):  # "" with AT_EMPTY_PATH: an fstat
                    files.lookups[roots.category(where(spec, roots))] += 1
            elif name in ("read", "pread64"):
                fd = _FD_PATH.match(args)
                if fd is not None and fd.group(1).startswith("/") and ret.isdigit():
                    files.read[roots.category(fd.group(1))] += int(ret)
    return per, parent


def note(files: Files, args: str, ret: str, roots: Roots) -> None:
    """One openat call."""
    opened = _OPENED.match(ret)
    spec = _PATH_ARGS.match(args)
    flags = (spec.group(3) or "") if spec is not None else ""
    if opened is not None:
        path = opened.group(2)
        if not path.startswith("/"):  # a socket, a pipe, an anonymous file
            return
        cat = roots.category(path)
        files.opened[cat] += 1
        if cat in (*ENV_CATEGORIES, "cache"):
            files.paths.add(path)
        if cat == "cache" and not path.endswith(".lock") and \
                any(f in flags for f in ("O_WRONLY", "O_CREAT", "O_TRUNC")):
            files.written += 1
    elif spec is not None:
        files.failed[roots.category(where(spec, roots))] += 1


def where(spec: re.Match[str], roots: Roots) -> str:
    """The absolute path a call named: relative to its directory fd, else to the run's."""
    return os.path.normpath(os.path.join(spec.group(1) or roots.run, spec.group(2)))


def fold(per: dict[int, Files], parent: dict[int, int], rank_of_pid: dict[int, int],
         ) -> dict[int, Files]:
    """Each rank's figures: its process's, its threads' and its children's (a subprocess of
    rank 0, for example), found through the clone calls."""
    ranks: dict[int, Files] = {r: Files() for r in rank_of_pid.values()}
    for pid, files in per.items():
        p: int | None = pid
        seen = 0
        while p is not None and p not in rank_of_pid and seen < 64:
            p = parent.get(p)
            seen += 1
        if p is not None and p in rank_of_pid:
            ranks[rank_of_pid[p]].add(files)
    return ranks


@dataclass
class Dump:
    """What the wrapper wrote at one rank's exit."""

    pid: int
    modules: int
    rchar: int
    syscr: int
    beff: str


def read_dumps(out: Path) -> dict[int, Dump]:
    dumps: dict[int, Dump] = {}
    for path in out.glob("rank-*.txt"):
        kv = dict(line.split(" ", 1) for line in path.read_text().splitlines() if " " in line)
        dumps[int(kv["rank"])] = Dump(pid=int(kv["pid"]), modules=int(kv["modules"]),
                                      rchar=int(kv["rchar"]), syscr=int(kv["syscr"]),
                                      beff=kv.get("beff", ""))
    return dumps


def read_startup(h5: Path) -> dict[int, float]:
    """Each rank's time to its first barrier: the sum of its start-up phases (the result
    file's /ranks table); empty where the file or the columns are missing."""
    try:
        import h5py
    except ImportError:
        return {}
    if not h5.is_file():
        return {}
    with h5py.File(h5, "r") as f:
        if "ranks" not in f or any(c not in f["ranks"] for c in STARTUP_COLUMNS):
            return {}
        ranks = [int(r) for r in f["ranks/rank"][()]]
        total = sum(f["ranks"][c][()] for c in STARTUP_COLUMNS)
    return {r: float(t) for r, t in zip(ranks, total, strict=True)}


@dataclass
class Point:
    """One N of the curve."""

    n: int
    wall: float = float("nan")
    wall_traced: float = float("nan")
    dumps: dict[int, Dump] = field(default_factory=dict)
    barrier: dict[int, float] = field(default_factory=dict)
    files: dict[int, Files] | None = None  # from the traced run
    roots: Roots | None = None  # the traced run's


class LaunchFailed(Exception):
    pass


def launch(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> float:
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LaunchFailed(f"no end after {timeout:.0f} s") from exc
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stdout[-600:] + proc.stderr[-1500:]).strip()
        raise LaunchFailed(f"exit code {proc.returncode}: {tail}")
    return elapsed


@dataclass
class Curve:
    """Settings of one curve."""

    mpiexec: list[str]
    beff_args: list[str]
    strace: str | None
    timeout: float


def measure(curve: Curve, tree: Path, n: int, work: Path) -> Point:
    """Both launches of one N, in a fresh directory under ``work``."""
    point = Point(n)
    env = launch_env(tree)
    for traced in (False, True):
        if traced and curve.strace is None:
            break
        run_dir = work / f"n{n}-{'strace' if traced else 'plain'}"
        run_dir.mkdir()
        wrapper = run_dir / "rank_figures.py"
        wrapper.write_text(WRAPPER.format(out=str(run_dir)))
        beff = [*curve.mpiexec, "-n", str(n), sys.executable, str(wrapper), *curve.beff_args,
                "-o", str(run_dir / "result.h5")]
        if not traced:
            point.wall = launch(beff, env, run_dir, curve.timeout)
            point.dumps = read_dumps(run_dir)
            point.barrier = read_startup(run_dir / "result.h5")
            continue
        assert curve.strace is not None
        trace = run_dir / "strace.txt"
        cmd = [curve.strace, "-f", "-qq", "-y", "-s", "0", "-e", f"trace={STRACE_CALLS}",
               "-e", "signal=none", "-o", str(trace), *beff]
        point.wall_traced = launch(cmd, env, run_dir, curve.timeout)
        rank_of_pid = {d.pid: r for r, d in read_dumps(run_dir).items()}
        point.roots = make_roots(tree, run_dir)
        per, parent = parse_strace(trace, point.roots)
        point.files = fold(per, parent, rank_of_pid)
        trace.unlink()  # tens of MB at 64 ranks
    missing = sorted(set(range(n)) - set(point.dumps))
    if missing:
        raise LaunchFailed(f"ranks {missing[:8]} wrote no figures")
    return point


# --- rendering ------------------------------------------------------------------------------

_sizes: dict[str, int] = {}


def size_of(path: str) -> int:
    if path not in _sizes:
        try:
            _sizes[path] = os.stat(path).st_size
        except OSError:
            _sizes[path] = 0
    return _sizes[path]


def is_shared_object(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(".so") or ".so." in name


Getter = Callable[[Point], dict[int, float]]


def from_files(value: Callable[[Files], float]) -> Getter:
    def get(p: Point) -> dict[int, float]:
        return {} if p.files is None else {r: value(f) for r, f in p.files.items()}

    return get


def env_sum(counter: Counter[str]) -> int:
    return sum(counter[c] for c in ENV_CATEGORIES)


def so_bytes(f: Files) -> float:
    return float(sum(size_of(p) for p in f.paths if is_shared_object(p)))


METRICS: list[tuple[str, str, Getter]] = [
    ("modules imported (len(sys.modules) at exit)", "{:.0f}",
     lambda p: {r: float(d.modules) for r, d in p.dumps.items()}),
    ("env files opened (Python install + venv + beff tree; strace)", "{:.0f}",
     from_files(lambda f: env_sum(f.opened))),
    ("env opens that failed (library and path searches; strace)", "{:.0f}",
     from_files(lambda f: env_sum(f.failed))),
    ("env path lookups (stat, access, readlink of a path; strace)", "{:.0f}",
     from_files(lambda f: env_sum(f.lookups))),
    ("env MB read (read/pread64 calls; strace)", "{:.2f}",
     from_files(lambda f: env_sum(f.read) / MB)),
    ("env shared objects opened, MB (mapped, paged in, not read; strace)", "{:.1f}",
     from_files(lambda f: so_bytes(f) / MB)),
    ("loop-cache files opened (incl. .lock; strace)", "{:.0f}",
     from_files(lambda f: f.opened["cache"])),
    ("loop-cache MB read (strace)", "{:.3f}", from_files(lambda f: f.read["cache"] / MB)),
    ("read calls, all (/proc/self/io syscr: files, pipes, sockets)", "{:.0f}",
     lambda p: {r: float(d.syscr) for r, d in p.dumps.items() if d.syscr >= 0}),
    ("MB read, all (/proc/self/io rchar)", "{:.2f}",
     lambda p: {r: d.rchar / MB for r, d in p.dumps.items() if d.rchar >= 0}),
    ("time to first barrier, s (sum of the 4 start-up phases; untraced run)", "{:.2f}",
     lambda p: p.barrier),
]


def split(values: dict[int, float]) -> tuple[float | None, float | None, float | None]:
    """Rank 0's value, and the median and max of the others'."""
    others = [v for r, v in values.items() if r != 0]
    return (values.get(0), statistics.median(others) if others else None,
            max(others) if others else None)


def cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def print_curve(points: list[Point]) -> None:
    print(f"{'N':>4}  {'wall s':>8}  {'under strace':>12}")
    for p in points:
        traced = "-" if p.files is None else f"{p.wall_traced:.2f}"
        print(f"{p.n:>4}  {p.wall:>8.2f}  {traced:>12}")
    for title, fmt, get in METRICS:
        rows = [(p.n, get(p)) for p in points]
        if not any(v for _, v in rows):
            continue
        print(f"\n{title}\n{'N':>4}  {'rank 0':>10}  {'others med':>10}  {'others max':>10}")
        for n, values in rows:
            r0, med, top = split(values)
            print(f"{n:>4}  {cell(r0, fmt):>10}  {cell(med, fmt):>10}  {cell(top, fmt):>10}")
    last = points[-1]
    if last.files:
        roots = last.roots
        assert roots is not None
        print(f"\nat N={last.n}, by directory: rank 0 | median of the others")
        print(f"  {'':<7} {'opened':>13} {'failed opens':>13} {'lookups':>13} {'MB read':>15}")
        for cat in CATEGORIES:
            row = []
            for kind, fmt in (("opened", "{:.0f}"), ("failed", "{:.0f}"),
                              ("lookups", "{:.0f}"), ("read", "{:.2f}")):
                scale = MB if kind == "read" else 1.0
                r0, med, _ = split({r: getattr(f, kind)[cat] / scale
                                    for r, f in last.files.items()})
                row.append(f"{cell(r0, fmt):>6} |{cell(med, fmt):>6}")
            print(f"  {cat:<7} " + " ".join(f"{c:>13}" for c in row[:3]) + f" {row[3]:>15}")
        print("  " + ", ".join(f"{c}: {getattr(roots, c)}" for c in CATEGORIES[:-1])
              + "; other: /sys, /proc, /dev, /etc, /usr (node-local on a cluster)")
    cold = [(p.n, sum(1 for f in p.files.values() if f.written)) for p in points if p.files]
    for n, count in cold:
        if count:
            print(f"note: at N={n}, {count} rank(s) wrote loop-cache files (a cold cache)")


def human(x: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.1f} {unit}"
    return f"{x:.0f} "


def paper(point: Point, nodes: int, per_node: int) -> None:
    """Metadata requests and bytes from the shared file system for ``nodes`` x ``per_node``
    ranks, from the median of the worker ranks (1..N-1) of one measured point."""
    assert point.files is not None and point.roots is not None
    roots = point.roots
    total = nodes * per_node
    r0 = point.files[0]
    workers = [f for r, f in point.files.items() if r != 0] or [r0]

    def med(value: Callable[[Files], float]) -> float:
        return float(statistics.median(value(f) for f in workers))

    def requests(f: Files, cats: tuple[str, ...]) -> float:
        return float(sum(f.opened[c] + f.failed[c] + f.lookups[c] for c in cats))

    env_cats, cache_cats = ENV_CATEGORIES, ("cache",)
    union: set[str] = set()
    for f in point.files.values():
        union |= f.paths
    in_cache = [p for p in union if roots.category(p) == "cache"]
    env_set = sum(size_of(p) for p in union if roots.category(p) in env_cats)
    cache_set = sum(size_of(p) for p in in_cache)
    so = med(so_bytes)

    print(f"\npaper estimate: {nodes:,} nodes x {per_node} ranks = {total:,} ranks, from the "
          f"median of ranks 1..{point.n - 1} at N={point.n}")
    print("assumptions: a rank's figures do not grow with the job (the curve above says whether "
          "they stay flat at this size);\n"
          "  every open, failed open and path lookup (stat, access, readlink) is one metadata "
          "request to the shared file\n"
          "  system (no client-side caching of names: the worst case, and what Python imports do "
          "to Lustre/GPFS at scale);\n"
          "  bytes of read() are counted per rank (without a client page cache: an upper bound; "
          "with one, a node reads each\n"
          "  file once: about one rank's figure per node); shared objects are mapped, not read: "
          "counted at their full size\n"
          "  once per node (an upper bound on the pages touched); rank 0's own excess (the "
          "result file, rendering) is left out:\n"
          f"  it is one rank ({requests(r0, (*env_cats, *cache_cats)):,.0f} requests, "
          f"{human(r0.read['cache'] + env_sum(r0.read))}B read at N={point.n}).")

    def block(title: str, cats: tuple[str, ...]) -> None:
        req = med(lambda f: requests(f, cats))
        opened = med(lambda f: float(sum(f.opened[c] for c in cats)))
        failed = med(lambda f: float(sum(f.failed[c] for c in cats)))
        looked = med(lambda f: float(sum(f.lookups[c] for c in cats)))
        nbytes = med(lambda f: float(sum(f.read[c] for c in cats)))
        print(f"{title}\n"
              f"  per rank: {opened:,.0f} opens + {failed:,.0f} failed opens + {looked:,.0f} "
              f"lookups = {req:,.0f} metadata requests; {human(nbytes)}B read\n"
              f"  per node ({per_node} ranks): {req * per_node:,.0f} requests; "
              f"{human(nbytes * per_node)}B read (page cache: ~{human(nbytes)}B); "
              f"+ up to {human(so)}B of shared objects\n"
              f"  whole job ({total:,} ranks on one shared file system): "
              f"{human(req * total)} requests; {human(nbytes * total)}B read "
              f"(page cache: ~{human(nbytes * nodes)}B); + up to {human(so * nodes)}B of "
              f"shared objects")

    worker_so = sorted((p for p in workers[0].paths if is_shared_object(p)), key=size_of,
                       reverse=True)
    print(f"  a worker's {len(worker_so)} shared objects, the largest: " + ", ".join(
        f"{os.path.basename(p)} {human(size_of(p))}B" for p in worker_so[:4]))
    block("A. environment and loop cache on the shared file system:", (*env_cats, *cache_cats))
    block("B. loop cache node-local (BEFF_CACHE_DIR on node-local disk), environment shared:",
          env_cats)
    print("C. loop cache node-local and the environment broadcast: a container image (squashfs),"
          " or a packed venv sent with\n"
          "  sbcast and unpacked to node-local disk (`srun --bcast` alone sends the executable,"
          " with --send-libs its libraries,\n  not the Python tree):\n"
          "  per rank: 0 requests and 0 B for the environment and the cache; what is left on the"
          " shared file system is the\n"
          "  job's working directory and rank 0's result file\n"
          f"  per node: the image, 1 open; its working set is {human(env_set)}B (the distinct "
          f"environment files the ranks opened,\n"
          f"  shared objects whole): a squashfs image on the shared file system is read for these"
          f" blocks once per node\n"
          f"  ({nodes:,} opens, {human(env_set * nodes)}B for the job); sbcast reads it once for "
          f"the job and fans it out over the network\n"
          f"  loop cache: {len(in_cache)} files, {human(cache_set)}B of objects: shipped in the "
          f"image, or compiled once per node (the node's\n"
          f"  first rank takes the object's lock and compiles, the node's other ranks wait for it"
          f" and load it)")


def run_curve(args: argparse.Namespace, trees: dict[str, Path]) -> None:
    mpiexec = [find_tool("mpiexec", "bench_startup"), *shlex.split(args.mpiexec_args)]
    strace = None if args.no_strace else shutil.which("strace")
    sizes = sorted({int(x) for x in args.curve.split(",") if x.strip()})
    curve = Curve(mpiexec=mpiexec, beff_args=shlex.split(args.beff_args), strace=strace,
                  timeout=args.launch_timeout)
    cores = os.cpu_count() or 1
    print(f"growth curve: {shlex.join(mpiexec)} -n N {sys.executable} -m beff "
          f"{args.beff_args} -o TMP.h5 (through a wrapper that writes each rank's figures)")
    print(f"this machine: {cores} cores; N > {cores} ranks are oversubscribed: the figures "
          f"count work (modules, files, bytes), and the times grow with N/{cores}, not with "
          f"what a job of N ranks on N cores would take")
    if strace is None:
        print("strace: not used (install it: apt-get install -y strace, or dnf install strace);"
              " files and bytes come from /proc/self/io alone (every read: files, pipes, sockets)")
    print(f"loop cache: {os.path.realpath(cache_root())}; load before: {os.getloadavg()[0]:.2f}")
    t_all = time.perf_counter()
    for label, tree in trees.items():
        print(f"\n=== {label}: {tree} (beff from {tree / 'beff'})")
        compileall.compile_dir(str(tree / "beff"), quiet=1)  # as pip would: no compile per launch
        points: list[Point] = []
        with tempfile.TemporaryDirectory(prefix="beff-startup-") as tmp:
            work = Path(tmp)
            try:  # warm-up: fills the loop cache (a tree may key it apart) and the page cache
                warm = work / "warm-up"
                warm.mkdir()
                launch([*mpiexec, "-n", str(min(2, sizes[0] or 1)), sys.executable, "-m", "beff",
                        *curve.beff_args, "-o", str(warm / "r.h5")], launch_env(tree), warm,
                       curve.timeout)
            except LaunchFailed as exc:
                print(f"warm-up failed: {exc}")
            for n in sizes:
                try:
                    point = measure(curve, tree, n, work)
                except LaunchFailed as exc:
                    print(f"N={n} failed, the curve stops here: {exc}")
                    break
                ran = {d.beff for d in point.dumps.values()}
                if not all(s.startswith(str(tree)) for s in ran):
                    print(f"warning: the ranks ran beff from {sorted(ran)}, not {tree}")
                points.append(point)
                print(f"  N={n}: {point.wall:.1f} s" + ("" if point.files is None else
                      f", under strace {point.wall_traced:.1f} s"), file=sys.stderr, flush=True)
        if not points:
            continue
        print()
        print_curve(points)
        last = max((p for p in points if p.files), key=lambda p: p.n, default=None)
        if last is not None and last.n >= 2:
            paper(last, args.nodes, args.per_node)
        else:
            print("\npaper estimate: needs an N >= 2 measured under strace")
    print(f"\nload after: {os.getloadavg()[0]:.2f}; the whole curve took "
          f"{time.perf_counter() - t_all:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--tree", type=Path, help="another checkout to alternate with")
    parser.add_argument("--curve", metavar="N,N,...",
                        help="growth-curve mode at these rank counts, e.g. 1,2,4,8,16,32,64")
    parser.add_argument("--beff-args", default=CURVE_ARGS,
                        help=f"the curve's beff command line, after -m beff "
                        f"(default: {CURVE_ARGS})")
    parser.add_argument("--mpiexec-args", default="",
                        help="more mpiexec flags for the curve, e.g. '-launcher fork'")
    parser.add_argument("--no-strace", action="store_true",
                        help="do not trace: /proc/self/io's figures only")
    parser.add_argument("--launch-timeout", type=float, default=1800.0,
                        help="seconds one launch of the curve may take (default 1800)")
    parser.add_argument("--nodes", type=int, default=10_000, help="paper estimate: nodes")
    parser.add_argument("--per-node", type=int, default=64, help="paper estimate: ranks a node")
    args = parser.parse_args()
    trees = {"this": HERE}
    if args.tree is not None:
        trees["other"] = args.tree.resolve()
    if args.curve:
        run_curve(args, trees)
    else:
        timing(trees, args.repeat)


if __name__ == "__main__":
    main()
