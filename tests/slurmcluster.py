"""A one-node Slurm for the tests, as a site has it: Debian's ``slurm-wlm`` and ``munge``,
with slurmctld and slurmd started as root on free ports from a configuration in a temporary
directory (``proctrack/linuxproc``, ``task/none``, munge authentication, no accounting).

The node declares 8 CPUs (``SlurmdParameters=config_overrides``), so that ``srun -n 4`` runs
on a 2-core machine, as ``mpiexec -n 4`` does in the other tests. ``KillWait=5``: a job past
its time limit gets SIGTERM, then SIGKILL 5 s later (sites use 30 s or more). Slurm checks
time limits every 30 s, so a job with ``--time=1`` ends between 60 and 90 s after it starts.

munged is the machine's own when one answers; otherwise one is started as the ``munge`` user
and stopped at the end. Clients find the cluster through ``SLURM_CONF`` (:attr:`Slurm.env`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

INSTALL = "apt-get install -y slurm-wlm munge"
UP_WAIT_S = 30.0


def missing() -> str | None:
    """Why no test Slurm can start here (None: it can)."""
    for tool in ("slurmctld", "slurmd", "srun", "sbatch", "munged"):
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            return f"{tool} is not installed ({INSTALL})"
    if os.geteuid() != 0:
        return "starting slurmctld and slurmd needs root"
    return None


@dataclass
class Slurm:
    base: Path
    env: dict[str, str]
    daemons: list[subprocess.Popen[bytes]] = field(default_factory=list)
    munged: bool = False  # started here (else the machine's own)

    def logs(self) -> str:
        """The daemons' logs, for a failed test's message."""
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.base.glob("*.log")))

    def run(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (sinfo, squeue, scontrol, sbatch, ...)."""
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})


def _free_ports(count: int) -> list[int]:
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _munge_answers() -> bool:
    try:
        return subprocess.run("munge -n | unmunge", shell=True, capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


MUNGED_PID = Path("/run/munge/munged.pid")


def _start_munged() -> None:
    run_dir = Path("/run/munge")
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.chown(run_dir, "munge", "munge")
    key = Path("/etc/munge/munge.key")
    if not key.exists():  # the package makes one; a trimmed image may lack it
        subprocess.run(["runuser", "-u", "munge", "--", "mungekey", "--create"], check=True)
    subprocess.run(["runuser", "-u", "munge", "--", "munged", f"--pid-file={MUNGED_PID}"],
                   check=True, timeout=30)
    deadline = time.monotonic() + 10
    while not _munge_answers():
        if time.monotonic() > deadline:
            raise RuntimeError("munged started but does not answer")
        time.sleep(0.1)


def _config(base: Path, host: str, ctld_port: int, slurmd_port: int) -> str:
    return "\n".join([
        "ClusterName=befftest",
        f"SlurmctldHost={host}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        f"StateSaveLocation={base}/state",
        f"SlurmdSpoolDir={base}/spool",
        f"SlurmctldPidFile={base}/slurmctld.pid",
        f"SlurmdPidFile={base}/slurmd.pid",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        f"SlurmctldLogFile={base}/slurmctld.log",
        f"SlurmdLogFile={base}/slurmd.log",
        "ReturnToService=2",
        "KillWait=5",
        "InactiveLimit=0",
        "MinJobAge=600",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SlurmdParameters=config_overrides",
        f"NodeName={host} CPUs=8 State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def shut_down(client: Callable[..., object], daemons: list[subprocess.Popen[bytes]]) -> None:
    """Cancel every job (``client`` runs a Slurm command), then stop the daemons, the last
    started first."""
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        client("scancel", "--user=root", timeout=10)
    for daemon in reversed(daemons):
        stop(daemon)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a daemon: SIGTERM, then SIGKILL after 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def cluster(base: Path) -> Iterator[Slurm]:
    """Start the cluster in ``base``, wait until its node is idle, yield it, stop it."""
    base.mkdir(parents=True, exist_ok=True)
    for sub in ("state", "spool"):
        (base / sub).mkdir(exist_ok=True)
    host = socket.gethostname()
    conf = base / "slurm.conf"
    conf.write_text(_config(base, host, *_free_ports(2)))
    slurm = Slurm(base, {"SLURM_CONF": str(conf)})
    if not _munge_answers():
        _start_munged()
        slurm.munged = True
    env = {**os.environ, **slurm.env}
    try:
        for daemon in (["slurmctld", "-D", "-c", "-i"], ["slurmd", "-D"]):
            slurm.daemons.append(subprocess.Popen(
                [*daemon, "-f", str(conf)], env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        deadline = time.monotonic() + UP_WAIT_S
        while slurm.run("sinfo", "-h", "-o", "%T").stdout.strip() != "idle":
            if time.monotonic() > deadline or any(d.poll() is not None for d in slurm.daemons):
                raise RuntimeError(f"the test Slurm did not come up:\n{slurm.logs()}")
            time.sleep(0.2)
        yield slurm
    finally:
        shut_down(slurm.run, slurm.daemons)
        if slurm.munged:  # this one alone: another module's Slurm may have its own munged
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(MUNGED_PID.read_text()), signal.SIGTERM)
