"""The emulated cluster shared by the multi-host tests: ``netns-cluster.sh`` (a verbatim copy
of the project's tool ``tools/netns-cluster``, with its ``nfq-delay.py``) brought up with
some hosts, torn down whatever happens, the root namespace checked unchanged; jobs started
on the head node through the real MPI launcher.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.mpirun import launcher, mpi_env

CLUSTER = Path(__file__).resolve().parent / "netns-cluster.sh"
LOCK = "/run/beff-tests-netns-cluster.lock"
SETUP_TIMEOUT = 60.0
JOB_TIMEOUT = 90.0


# ----------------------------------------------------------------------------- environment
def run_quiet(cmd: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def why_no_cluster() -> str | None:
    """Why this machine cannot emulate hosts, or None when it can."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces (multi-host emulation)"
    for tool in ("ip", "unshare", "mount", "hostname"):
        if shutil.which(tool) is None:
            return f"needs `{tool}` (iproute2/util-linux) for multi-host emulation"
    if run_quiet(["ip", "netns", "list"]).returncode != 0:
        return "`ip netns` is unavailable"
    # An anonymous namespace pair is created and discarded: nothing persists.
    probe = run_quiet(["unshare", "--net", "--mount", "--uts", "--ipc", "true"])
    if probe.returncode != 0:
        return f"cannot create network namespaces: {probe.stderr.strip()}"
    return None


def root_namespace_state() -> dict[str, str]:
    """What the tool promises never to change in the root namespace."""
    state = {}
    for key, cmd in {"links": ["ip", "-o", "link", "show"], "addrs": ["ip", "-o", "addr", "show"],
                     "routes": ["ip", "route", "show"]}.items():
        text = re.sub(r"(valid|preferred)_lft \S+", "", run_quiet(cmd).stdout)  # DHCP timers
        state[key] = re.sub(r"[ \t]+", " ", text)
    state["/etc/hosts"] = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else ""
    return state


def launcher_version() -> str:
    try:
        r = run_quiet([launcher(), "--version"])
    except (OSError, RuntimeError, subprocess.TimeoutExpired):
        return ""
    return r.stdout + r.stderr


def installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


# ----------------------------------------------------------------------------- the cluster
@dataclass
class Cluster:
    prefix: str
    env: dict[str, str]
    workdir: Path
    hosts: tuple[str, ...]

    def namespaces(self) -> list[str]:
        return [f"{self.prefix}-{h}" for h in self.hosts]

    def tool(self, *args: str, timeout: float = SETUP_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CLUSTER), *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env, check=False)

    def kill_jobs(self) -> None:
        """End what still runs inside our host namespaces (only processes we started there)."""
        for ns in self.namespaces():
            pids = run_quiet(["ip", "netns", "pids", ns]).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass

    def on_head(self, cmd: list[str], extra_env: dict[str, str] | None = None,
                timeout: float = JOB_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` logged in on the first host (the head node), with a hard time-out."""
        env = {**self.env, **(extra_env or {})}
        proc = subprocess.Popen([str(CLUSTER), "exec", self.hosts[0], *cmd],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=self.workdir, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            self.kill_jobs()
            out, err = proc.communicate(timeout=30)
            pytest.fail(f"timed out after {timeout:.0f} s: {' '.join(cmd)}\n{out}\n{err}")
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@contextlib.contextmanager
def emulated(hosts: tuple[str, ...], workdir: Path, tag: str = "") -> Iterator[Cluster]:
    """A cluster of ``hosts`` (skips the test where none can be made); always torn down, and
    the root network namespace and /etc/hosts checked unchanged."""
    reason = why_no_cluster()
    if reason is not None:
        pytest.skip(reason)
    assert os.access(CLUSTER, os.X_OK), f"{CLUSTER} must be executable (git mode 100755)"
    prefix = f"bmh{os.getpid()}{tag}"  # unique, so concurrent sessions do not collide
    env = mpi_env({"MNC_PREFIX": prefix, "MNC_STATE": f"/run/{prefix}-cluster"})
    env.pop("MNC_SSH_KEEPENV", None)
    c = Cluster(prefix, env, workdir, hosts)
    # one cluster at a time on this machine (pytest-xdist workers, other sessions): the root
    # namespace must be unchanged across this cluster's life, so no other may come or go
    with open(LOCK, "a") as lock:  # closing it releases the lock
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield from _emulated(c, prefix, hosts)


def _emulated(c: Cluster, prefix: str, hosts: tuple[str, ...]) -> Iterator[Cluster]:
    before = root_namespace_state()
    try:
        up = c.tool("up", *hosts)
        assert up.returncode == 0, f"netns-cluster up failed:\n{up.stdout}\n{up.stderr}"
        yield c
    finally:
        down = c.tool("down")
        leftover = [ns for ns in run_quiet(["ip", "netns", "list"]).stdout.split()
                    if ns.startswith(prefix + "-")]
        after = root_namespace_state()
    assert down.returncode == 0, f"netns-cluster down failed:\n{down.stdout}\n{down.stderr}"
    assert leftover == [], f"namespaces left behind: {leftover}"
    assert not Path(f"/run/{prefix}-cluster").exists()
    assert after == before, "the root network namespace or /etc/hosts changed"


# ----------------------------------------------------------------------------- launchers
@dataclass
class Launch:
    name: str
    argv: list[str]  # launcher and flags: ranks in blocks of per_host on each host, in order

    def job(self, *beff_args: str) -> list[str]:
        return [*self.argv, sys.executable, "-m", "beff", *beff_args]


def mpich_launch(hosts: tuple[str, ...], per_host: int) -> Launch:
    # hydra forwards the whole environment; -ppn places ranks in blocks (default: round-robin)
    return Launch("mpich", [launcher(), "-n", str(len(hosts) * per_host), "-ppn",
                            str(per_host), "-hosts", ",".join(hosts)])


def open_mpi_launch(hosts: tuple[str, ...], per_host: int) -> Launch:
    # PRRTE forwards no environment (the ssh stand-in gives a clean login): pass it with -x.
    # --bind-to none: every emulated host sees the same cores.
    forward = ["PATH", "PYTHONUNBUFFERED", "COLUMNS", "OMPI_MCA_mpi_yield_when_idle"]
    forward += [v for v in ("PYTHONPATH", "VIRTUAL_ENV") if v in os.environ]
    argv = [launcher(), "--allow-run-as-root", "--bind-to", "none"]
    for var in forward:
        argv += ["-x", var]
    return Launch("openmpi", argv + ["-n", str(len(hosts) * per_host), "--host",
                                     ",".join(f"{h}:{per_host}" for h in hosts)])


# ----------------------------------------------------------------------------- helpers
def ok(r: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r


def show(path: Path, *args: str) -> str:
    """``beff show`` runs here, in the root namespace, without MPI."""
    r = subprocess.run([sys.executable, "-m", "beff", "show", str(path), *args],
                       capture_output=True, text=True, timeout=60, env=mpi_env(), check=False)
    return ok(r).stdout
