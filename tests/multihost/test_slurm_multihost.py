"""beff under a two-node Slurm whose nodes are two emulated hosts: ``srun -N 2 --mpi=pmi2``
starts ranks on hostA and hostB, which talk TCP over the veth bridge (UCX says so), and the
result file records both hosts and the job.

The hosts are ``netns-cluster.sh``'s (:mod:`tests.multihost.cluster`). slurmctld and one
slurmd run logged in on hostA, the other slurmd on hostB, all as root, from the one-node test
Slurm's configuration (:mod:`tests.slurmcluster`: Debian's slurm-wlm 22.05, munge,
``proctrack/linuxproc``, ``task/none``) with two nodes at the hosts' addresses and per-node
spool, pid and log files. The file system is shared, so every host reads the one
configuration, and srun runs on hostA as on a login node.

Two things differ from the one-node Slurm:

- munged is one of the test's own, with its socket in /run (``AuthInfo=socket=``), so that it
  neither depends on nor stops the machine's munged, which the one-node Slurm may be using.
- ``cgroup.conf`` names ``CgroupPlugin=cgroup/v1``. ``ip netns exec`` mounts a fresh /sys
  for the namespace, with nothing on /sys/fs/cgroup; slurmd 22.05 then fails to detect the
  cgroup version ("No filesystem mounted on /sys/fs/cgroup", "slurmd initialization
  failed"). Naming the plugin skips the detection; proctrack/linuxproc and task/none use no
  cgroup.

Skipped where Slurm is not installed or not root (failed instead in CI, as the Slurm tests
are), or where no hosts can be emulated (as the multi-host tests are). Everything is stopped
after the module whatever happens: the daemons, munged, then the hosts.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from beff.effbw.view import beff_summary
from beff.results.archive import load
from tests import slurmcluster
from tests.mpirun import is_open_mpi_cached
from tests.multihost.cluster import CLUSTER, Cluster, emulated, ok, show

pytestmark = [pytest.mark.multihost, pytest.mark.slurm, pytest.mark.timeout(240),
              pytest.mark.skipif(is_open_mpi_cached(),
                                 reason="the test Slurm runs MPICH's ranks (srun --mpi=pmi2)")]

HOSTS = ("hostA", "hostB")
ADDRESSES = {"hostA": "10.200.0.1", "hostB": "10.200.0.2"}  # netns-cluster.sh's, in order
CPUS = 4  # declared per node (config_overrides): 4 ranks on a node of this 2-core machine
# glibc fills each new malloc block with 255 ^ 0xFF, zero (srun passes its environment on)
ZEROED_MALLOC = {"MALLOC_PERTURB_": "255"}
# Each host has its own network namespace, so the daemons' usual ports are free there
CTLD_PORT, SLURMD_PORT = 6817, 6818


# ----------------------------------------------------------------------------- the cluster
@dataclass
class TwoNodeSlurm:
    hosts: Cluster
    base: Path
    conf: Path
    munge_dir: Path
    daemons: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def logs(self) -> str:
        """The daemons' logs, for a failed test's message."""
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.base.glob("*.log")))

    def client(self, *cmd: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (sinfo, scancel, ...) on the head node: slurmctld listens
        on hostA's address, which the root namespace cannot reach."""
        return subprocess.run([str(CLUSTER), "exec", self.hosts.hosts[0], *cmd],
                              capture_output=True, text=True, timeout=timeout,
                              env={**self.hosts.env, **self.env}, check=False)

    def srun(self, *args: str, extra_env: dict[str, str] | None = None,
             timeout: float = 150) -> subprocess.CompletedProcess[str]:
        """``srun ARGS python -m beff ...`` on the head node, in the cluster's work dir.

        The ranks' malloc fills new blocks with zeros (``MALLOC_PERTURB_``): MPICH 5's PMI-1
        client puts the ranks' UCX addresses through an uninitialised buffer, hex-encoded
        with runs of zeros shortened, and old heap contents there (pointers, paths) made
        some ``cmd=put`` lines longer than the 1,024 bytes slurmstepd reads; it cut them,
        and UCX then failed to unpack the address or to connect, or srun hung (4 of 5
        runs of this module from a venv without bytecode, 1 of 9 whole sessions here)."""
        return self.hosts.on_head(["srun", "--mpi=pmi2", *args],
                                  extra_env={**self.env, **ZEROED_MALLOC, **(extra_env or {})},
                                  timeout=timeout)


def config(base: Path, munge_socket: Path) -> str:
    """The one-node Slurm's configuration with two nodes at the hosts' addresses, slurmctld
    on the first, munge through ``munge_socket``, and spool, pid and log files per node
    (slurmd puts its node's name for ``%n``)."""
    head = HOSTS[0]
    override = {
        "SlurmctldHost": [f"SlurmctldHost={head}({ADDRESSES[head]})"],
        "AuthType": ["AuthType=auth/munge", f"AuthInfo=socket={munge_socket}"],
        "SlurmdSpoolDir": [f"SlurmdSpoolDir={base}/spool-%n"],
        "SlurmdPidFile": [f"SlurmdPidFile={base}/slurmd-%n.pid"],
        "SlurmdLogFile": [f"SlurmdLogFile={base}/slurmd-%n.log"],
        "NodeName": [f"NodeName={h} NodeAddr={ADDRESSES[h]} CPUs={CPUS} State=UNKNOWN"
                     for h in HOSTS],
        "PartitionName": [f"PartitionName=debug Nodes={','.join(HOSTS)} Default=YES "
                          "MaxTime=INFINITE State=UP"],
    }
    lines: list[str] = []
    for line in slurmcluster._config(base, head, CTLD_PORT, SLURMD_PORT).splitlines():
        lines += override.pop(line.split("=", 1)[0], [line])
    assert not override, f"the one-node configuration has no {sorted(override)}"
    return "\n".join(lines) + "\n"


def _munge_answers(socket: Path) -> bool:
    try:
        return subprocess.run(f"munge -S {socket} -n | unmunge -S {socket}", shell=True,
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _start_munged(where: Path, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """munged as the munge user, in the foreground, with its socket, pid, seed and log files
    in ``where`` (which munged wants owned by munge and open to all)."""
    where.mkdir(mode=0o755)
    shutil.chown(where, "munge", "munge")
    if not Path("/etc/munge/munge.key").exists():  # as slurmcluster does
        subprocess.run(["runuser", "-u", "munge", "--", "mungekey", "--create"], check=True)
    proc = subprocess.Popen(
        ["munged", "--foreground", f"--socket={where}/munge.socket",
         f"--pid-file={where}/munged.pid", f"--seed-file={where}/munged.seed",
         f"--log-file={where}/munged.log"],
        user="munge", group="munge", extra_groups=[], stdin=subprocess.DEVNULL, stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 10
    while not _munge_answers(where / "munge.socket"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"munged did not answer on {where}/munge.socket")
        time.sleep(0.1)
    return proc


@contextlib.contextmanager
def two_node_slurm(hosts: Cluster) -> Iterator[TwoNodeSlurm]:
    """slurmctld and slurmd on hostA, slurmd on hostB; yields once both nodes are idle, and
    stops the daemons and munged whatever happens (the hosts are the caller's)."""
    base = hosts.workdir / "slurm"
    for sub in ("state", *(f"spool-{h}" for h in HOSTS)):
        (base / sub).mkdir(parents=True, exist_ok=True)
    slurm = TwoNodeSlurm(hosts, base, base / "slurm.conf", Path(f"/run/{hosts.prefix}-munge"))
    slurm.conf.write_text(config(base, slurm.munge_dir / "munge.socket"))
    (base / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\n")  # see the module's doc
    munged: subprocess.Popen[bytes] | None = None
    try:
        with (base / "munged.out.log").open("wb") as log:
            munged = _start_munged(slurm.munge_dir, log)
        for host, daemon in ((HOSTS[0], ["slurmctld", "-D", "-c", "-i"]),
                             (HOSTS[0], ["slurmd", "-D", "-N", HOSTS[0]]),
                             (HOSTS[1], ["slurmd", "-D", "-N", HOSTS[1]])):
            with (base / f"{daemon[0]}-{host}.out.log").open("wb") as log:
                # the login execs the daemon: this process is the daemon itself
                slurm.daemons.append(subprocess.Popen(
                    [str(CLUSTER), "exec", host, *daemon, "-f", str(slurm.conf)],
                    env={**hosts.env, **slurm.env}, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + slurmcluster.UP_WAIT_S
        while (states := slurm.client("sinfo", "-h", "-N", "-o", "%N %T").stdout.split()) \
                != [HOSTS[0], "idle", HOSTS[1], "idle"]:
            if time.monotonic() > deadline or any(d.poll() is not None for d in slurm.daemons):
                raise RuntimeError(f"the two-node Slurm did not come up ({states}):\n"
                                   f"{slurm.logs()}")
            time.sleep(0.5)
        yield slurm
    finally:
        slurmcluster.shut_down(slurm.client, slurm.daemons)
        if munged is not None:
            slurmcluster.stop(munged)
        shutil.rmtree(slurm.munge_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoNodeSlurm]:
    why = slurmcluster.missing()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the Slurm tests: {why}")
        pytest.skip(why)
    with emulated(HOSTS, tmp_path_factory.mktemp("slurm-multihost"), tag="slurm") as hosts, \
            two_node_slurm(hosts) as cluster:
        yield cluster


# ----------------------------------------------------------------------------- helpers
def beff(*args: str) -> list[str]:
    return [sys.executable, "-m", "beff", *args]


def assert_ran_on_both_hosts(path: Path, per_node: int) -> dict[str, Any]:
    """The file is complete, from ``per_node`` ranks on hostA then as many on hostB, in a
    step of a Slurm job on both nodes; its batch attribute."""
    record = load(path)
    nprocs = 2 * per_node
    assert record.attrs["status"] == "complete" and record.attrs["nprocs"] == nprocs
    where = record.attrs["placement"]
    assert where["nodes"] == 2 and where["hosts"] == list(HOSTS), where
    assert where["ranks_per_node"] == [per_node, per_node], where
    by_rank = {int(r["rank"]): r for r in record.ranks}
    assert [by_rank[i]["host"] for i in range(nprocs)] == \
        [h for h in HOSTS for _ in range(per_node)]
    assert [by_rank[i]["node"] for i in range(nprocs)] == \
        [n for n in range(2) for _ in range(per_node)]
    batch: dict[str, Any] = record.attrs["batch"]
    assert batch["scheduler"] == "slurm" and batch["job_id"].isdigit(), batch
    assert batch["nodelist"] == ",".join(HOSTS) and batch["partition"] == "debug", batch
    assert batch["step_id"] == "0" and batch["ntasks"] == str(nprocs), batch
    return batch


# ----------------------------------------------------------------------------- tests
def test_srun_on_two_nodes_runs_a_rank_on_each_host(slurm: TwoNodeSlurm) -> None:
    """``srun -N 2 -n 2``: rank 0 on hostA, rank 1 on hostB, PingPong between them over TCP."""
    out = slurm.hosts.workdir / "pingpong.h5"
    # UCX says which transport each peer got (it logs to stdout)
    r = ok(slurm.srun("-N", "2", "-n", "2", *beff(
        "imb", "mpi1", "PingPong", "-msglog", "0:3", "-iter_policy", "off", "-iter", "20",
        "-o", str(out)), extra_env={"UCX_LOG_LEVEL": "info"}))
    batch = assert_ran_on_both_hosts(out, per_node=1)
    (pp,) = load(out).measurements
    assert (pp.benchmark, list(pp.world_ranks)) == ("PingPong", [0, 1])
    assert pp.attrs["placement"] == "ranks 0,1 on hostA+hostB (inter-node)"
    text = " ".join(show(out).split())
    assert f"batch: slurm job {batch['job_id']} step 0 (partition debug, nodelist " \
           f"{','.join(HOSTS)})" in text, text
    if "MPIR_CVAR_CH4_NETMOD" not in os.environ:  # UCX: MPICH's default netmod
        log = r.stdout + r.stderr
        for host in HOSTS:
            assert re.search(rf"\[{host}:\d+\s*:\d+\].*inter-node cfg#\d+ tag\(tcp/eth0\)",
                             log), log


def test_b_eff_quick_on_two_nodes_two_ranks_each(slurm: TwoNodeSlurm) -> None:
    """``srun -N 2 -n 4``: b_eff's quick mode, some of whose patterns cross the hosts."""
    out = slurm.hosts.workdir / "beff.h5"
    ok(slurm.srun("-N", "2", "-n", "4", "--ntasks-per-node=2", *beff(
        "run", "--quick", "--memory-per-proc", "16MiB", "--methods", "sendrecv",
        "--time-per-loop", "0.01", "-o", str(out))))
    assert_ran_on_both_hosts(out, per_node=2)
    summary = beff_summary(load(out))
    assert summary is not None
    for key in ("b_eff_MBps", "pingpong_latency_us", "pingpong_bandwidth_MBps"):
        assert math.isfinite(summary[key]) and summary[key] > 0, (key, summary[key])
    shares = [p["cross_node_share"] for p in summary["patterns"]]
    assert min(shares) == 0 and max(shares) > 0, shares


def test_daemons_run_in_their_hosts(slurm: TwoNodeSlurm) -> None:
    """Each slurmd is in its host's network namespace (the check that ``-N 2`` crossed the
    veth bridge and not the loopback of one namespace)."""
    ctld, slurmd_a, slurmd_b = slurm.daemons
    for proc, host in ((ctld, HOSTS[0]), (slurmd_a, HOSTS[0]), (slurmd_b, HOSTS[1])):
        assert proc.poll() is None, slurm.logs()
        pids = subprocess.run(["ip", "netns", "pids", f"{slurm.hosts.prefix}-{host}"],
                              capture_output=True, text=True, check=True).stdout.split()
        assert str(proc.pid) in pids, (host, proc.args)
