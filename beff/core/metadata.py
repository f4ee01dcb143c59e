"""Small best-effort metadata collectors; none of them raises."""

from __future__ import annotations

import math
import os
import platform
import socket
import sys
import time
import types
from typing import Any

import numpy as np

import beff
from beff.core.mpi import applied_workarounds, applied_yield_settings
from beff.core.versions import dist_version

ENV_PREFIXES = ("OMPI_MCA_", "PRTE_MCA_", "I_MPI_", "UCX_", "FI_", "MPICH_", "MPIR_CVAR_",
                "HYDRA_", "SLURM_JOB", "OMP_")
THREAD_NAMES = {0: "single", 1: "funneled", 2: "serialized", 3: "multiple"}


def _version(dist: str) -> str:
    return dist_version(dist) or "unknown"


def collect_python() -> dict[str, Any]:
    return {
        "beff": beff.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "h5py": _version("h5py"),
        "mpi4py": _version("mpi4py"),
        "rich": _version("rich"),
        "typer": _version("typer"),
        "numba": _version("numba"),
    }


def collect_mpi(MPI: types.ModuleType) -> dict[str, Any]:
    major, minor = MPI.Get_version()
    try:
        vendor = MPI.get_vendor()
    except Exception:  # noqa: BLE001 - older mpi4py
        vendor = ("unknown", (0, 0, 0))
    return {
        "library_version": MPI.Get_library_version().replace("\x00", "").strip(),  # Open MPI: NUL
        "standard_version": f"{major}.{minor}",
        "vendor": f"{vendor[0]} {'.'.join(map(str, vendor[1]))}",
        "thread_level": THREAD_NAMES.get(MPI.Query_thread(), "unknown"),
        "wtick": float(MPI.Wtick()),
        "wtime_is_global": bool(MPI.COMM_WORLD.Get_attr(MPI.WTIME_IS_GLOBAL) or False),
    }


def collect_host() -> dict[str, Any]:
    uname = platform.uname()
    return {
        "hostname": socket.gethostname(),
        "system": uname.system,
        "release": uname.release,
        "version": uname.version,
        "machine": uname.machine,
        "cpu_count": os.cpu_count() or 0,
        "memory_bytes": physical_memory(),
    }


def physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def affinity() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def numa_nodes(cpus: list[int]) -> list[int]:
    """NUMA nodes of the given CPUs, from sysfs (empty where unavailable)."""
    nodes: set[int] = set()
    base = "/sys/devices/system/node"
    try:
        entries = [e for e in os.listdir(base) if e.startswith("node") and e[4:].isdigit()]
    except OSError:
        return []
    wanted = set(cpus)
    for entry in entries:
        try:
            with open(f"{base}/{entry}/cpulist", encoding="ascii") as fh:
                if wanted & parse_cpulist(fh.read()):
                    nodes.add(int(entry[4:]))
        except OSError:
            continue
    return sorted(nodes)


def parse_cpulist(text: str) -> set[int]:
    """Parse a Linux cpulist such as ``0-3,8,10-11``."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return cpus


def format_cpus(cpus: list[int]) -> str:
    """Compact cpulist form of a sorted CPU list."""
    out: list[str] = []
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def process_started() -> float | None:
    """When this process started (time.time's clock), from Linux's /proc: its start in clock
    ticks since boot (10 ms), against the clock since boot now; None elsewhere."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        since_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        now = time.time()
        return now - (since_boot - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def collect_env() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}


# What a batch system tells its job, per scheduler: (job id variable, {field: variable}).
BATCH_SYSTEMS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("slurm", "SLURM_JOB_ID", {"step_id": "SLURM_STEP_ID", "job_name": "SLURM_JOB_NAME",
                               "partition": "SLURM_JOB_PARTITION",
                               "nodelist": "SLURM_JOB_NODELIST", "ntasks": "SLURM_NTASKS",
                               "cluster": "SLURM_CLUSTER_NAME"}),
    ("pbs", "PBS_JOBID", {"job_name": "PBS_JOBNAME", "queue": "PBS_QUEUE"}),
    ("lsf", "LSB_JOBID", {"job_name": "LSB_JOBNAME", "queue": "LSB_QUEUE"}),
    ("flux", "FLUX_JOB_ID", {}),
)


def collect_batch() -> dict[str, str]:
    """The batch job this run is part of, from rank 0's environment: the scheduler, the job
    id and what else it tells ({} outside a batch job)."""
    for scheduler, job_var, fields in BATCH_SYSTEMS:
        job_id = os.environ.get(job_var)
        if job_id:
            return {"scheduler": scheduler, "job_id": job_id,
                    **{k: os.environ[v] for k, v in fields.items() if os.environ.get(v)}}
    return {}


def collect_rank(MPI: types.ModuleType) -> dict[str, Any]:
    """Placement of this rank: host, allowed CPUs, NUMA nodes, node-local rank and size."""
    world = MPI.COMM_WORLD
    node = world.Split_type(MPI.COMM_TYPE_SHARED, world.Get_rank())
    local_rank, local_size = node.Get_rank(), node.Get_size()
    leader = node.bcast(world.Get_rank(), root=0)
    node.Free()
    cpus = affinity()
    return {
        "rank": world.Get_rank(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "cpus": format_cpus(cpus),
        "ncpus": len(cpus),
        "numa": ",".join(map(str, numa_nodes(cpus))),
        "local_rank": local_rank,
        "local_size": local_size,
        "node_leader": leader,
        "host_cpu_count": os.cpu_count() or 0,
        "memory_bytes": physical_memory(),
    }


def placement(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """Node ids (from MPI_Comm_split_type SHARED) and the oversubscription verdict."""
    leaders = sorted({r["node_leader"] for r in ranks})
    node_of = {leader: i for i, leader in enumerate(leaders)}
    # one pass over the ranks (a pass per node was O(nodes x ranks): hours at 10^6 ranks)
    members = [0] * len(leaders)
    cpus: list[set[int]] = [set() for _ in leaders]
    for r in ranks:
        node = r["node"] = node_of[r["node_leader"]]
        members[node] += 1
        cpus[node] |= parse_cpulist(r["cpus"])
    return {
        "nodes": len(leaders),
        "hosts": sorted({r["host"] for r in ranks}),
        "oversubscribed": any(n > max(len(c), 1) for n, c in zip(members, cpus, strict=True)),
        "ranks_per_node": members,
    }


def program_name() -> str:
    """How the user started beff: ``beff`` (also for ``python -m beff``, whose argv[0] is
    beff's ``__main__.py``), else the script's name."""
    name = os.path.basename(sys.argv[0])
    return "beff" if name in ("__main__.py", "beff") else name


def run_attrs(MPI: types.ModuleType, argv: list[str]) -> dict[str, Any]:
    """Root attributes of the result file gathered on rank 0."""
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command_line": [program_name()] + argv,
        "versions": collect_python(),
        "mpi": collect_mpi(MPI),
        "host": collect_host(),
        "env": collect_env(),
        "batch": collect_batch(),
        "nprocs": MPI.COMM_WORLD.Get_size(),
        # the MPI yield variables beff itself set on an oversubscribed node (not the user)
        "yield_settings": dict(applied_yield_settings),
        # MPI variables beff set to avoid a known defect of the MPI (not the user)
        "workaround_settings": dict(applied_workarounds),
    }


def node_memory_per_rank(ranks: list[dict[str, Any]]) -> int:
    """Physical memory of a node divided by the ranks on it; the smallest over nodes."""
    best = math.inf
    for r in ranks:
        mem = int(r.get("memory_bytes", 0))
        if mem > 0:
            best = min(best, mem // max(1, int(r["local_size"])))
    return int(best) if math.isfinite(best) else 1 << 30


def uname_fields() -> list[str]:
    u = os.uname()
    return [u.sysname, u.nodename, u.release, u.version, u.machine]
