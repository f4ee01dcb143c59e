"""Placement of measured groups: node grouping, labels, stored structure and warnings."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from beff.render import common
from beff.results import placement as report
from beff.results import warnings
from beff.results.archive import ResultFile, load
from beff.results.model import OK, Measurement, RunRecord

# Two nodes (node ids from MPI_Comm_split_type), two ranks each.
RANKS: list[dict[str, Any]] = [
    {"rank": 0, "host": "hostA", "node": 0}, {"rank": 1, "host": "hostA", "node": 0},
    {"rank": 2, "host": "hostB", "node": 1}, {"rank": 3, "host": "hostB", "node": 1},
]
ATTRS: dict[str, Any] = {"nprocs": 4, "placement": {"nodes": 2, "hosts": ["hostA", "hostB"],
                                                    "oversubscribed": False}}


def measurement(benchmark: str, kind: str, world_ranks: list[int],
                groups: list[int] | None = None) -> Measurement:
    R = len(world_ranks)
    group = np.zeros(R, dtype=int) if groups is None else np.array(groups)
    ngroups = int(group.max()) + 1
    return Measurement(
        suite="mpi1", benchmark=benchmark, kind=kind, nprocs=R // ngroups, ngroups=ngroups,
        multi=None if ngroups == 1 else 1, idle=0, sizes=np.array([0, 1]),
        repetitions=np.array([10, 10]), status=[OK, OK], times=np.full((2, R), 1e-6),
        group=group, world_ranks=np.array(world_ranks), samples=np.full((2, R, 1), 1e-5),
        batch_iters=np.full((2, R, 1), 10),
    )


def test_groups_cross_nodes_by_node_id() -> None:
    intra = report.placement_groups(measurement("PingPong", "single_transfer", [0, 1]), RANKS)
    inter = report.placement_groups(measurement("PingPong", "single_transfer", [0, 2]), RANKS)
    assert intra == [{"group": 0, "ranks": [0, 1], "hosts": ["hostA"], "nodes": 1,
                      "inter_node": False}]
    assert inter == [{"group": 0, "ranks": [0, 2], "hosts": ["hostA", "hostB"], "nodes": 2,
                      "inter_node": True}]


def test_node_grouping_wins_over_host_names() -> None:
    """MPI_Comm_split_type decides, not the host name: a shared name on two nodes is inter-node,
    and two names on one shared-memory node (e.g. aliases) are intra-node."""
    same_name = [{"rank": 0, "host": "x", "node": 0}, {"rank": 1, "host": "x", "node": 1}]
    aliases = [{"rank": 0, "host": "a", "node": 0}, {"rank": 1, "host": "b", "node": 0}]
    m = measurement("PingPong", "single_transfer", [0, 1])
    assert report.placement_groups(m, same_name)[0]["inter_node"] is True
    assert report.placement_groups(m, aliases)[0]["inter_node"] is False
    assert report.placement_label(m, aliases) == "ranks 0,1 on a+b (intra-node)"


def test_label_of_several_groups_counts_crossing_ones() -> None:
    m = measurement("PingPong", "single_transfer", [0, 2, 1, 3], groups=[0, 0, 1, 1])
    assert report.placement_label(m, RANKS) == (
        "ranks 0,2 on hostA+hostB (inter-node); ranks 1,3 on hostA+hostB (inter-node); "
        "2 of 2 groups inter-node")


def test_point_to_point_inside_one_node_warns_in_a_multi_node_run() -> None:
    intra = measurement("PingPong", "single_transfer", [0, 1])
    inter = measurement("PingPong", "single_transfer", [0, 2])
    coll = measurement("Allreduce", "collective", [0, 1])
    def found(attrs: dict[str, object], ms: list[Measurement]) -> list[str]:
        out = warnings.run_warnings(attrs, network=any("mbytes_per_sec" in m.columns
                                                       for m in ms))
        for m in ms:
            out += warnings.result_warnings(attrs, m, report.placement_groups(m, RANKS))
        return out

    assert found(ATTRS, [inter, coll]) == []
    warned = found(ATTRS, [intra, inter, coll])
    assert len(warned) == 1
    assert warned[0].startswith("PingPong (2 processes) ran inside one node (ranks 0,1 on hostA)")
    # a single-node run has one global warning, not one per benchmark
    single = {"nprocs": 2, "placement": {"nodes": 1, "hosts": ["hostA"]}}
    w = found(single, [intra])
    assert len(w) == 1 and w[0].startswith("all ranks ran on one node")
    # ... and none when nothing measured a transfer between ranks (collectives only)
    assert found(single, [coll]) == []


def test_stored_groups_render_without_a_ranks_table(tmp_path: Path) -> None:
    m = measurement("PingPong", "single_transfer", [0, 2])
    m.attrs["placement"] = report.placement_label(m, RANKS)
    m.attrs["placement_groups"] = report.placement_groups(m, RANKS)
    out = ResultFile(tmp_path / "p.h5")
    out.create(ATTRS, [])
    out.add(m)
    back = load(out.path).measurements[0]
    assert back.attrs["placement_groups"] == m.attrs["placement_groups"]
    assert report.placement_label(back, []) == "ranks 0,2 on hostA+hostB (inter-node)"


def test_header_lists_each_node_with_its_ranks() -> None:
    buf = io.StringIO()
    common.render_header(RunRecord(attrs=ATTRS, ranks=RANKS), Console(file=buf, width=120))
    text = buf.getvalue()
    assert "4 ranks on 2 node(s): hostA, hostB" in text
    assert "node 0 (hostA): ranks 0-1" in text and "node 1 (hostB): ranks 2-3" in text
