"""Where a measurement ran: its groups' ranks, hosts and nodes, and whether they crossed nodes.

Derived from the run's ranks table (every rank's host and node id), so a stored file gives
the same answer as the live run.
"""

from __future__ import annotations

from typing import Any

from beff.results.model import Measurement


def placement_groups(m: Measurement, ranks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group of ``m``: its world ranks, their hosts, node count and whether it crossed nodes.

    Nodes are the MPI_Comm_split_type(SHARED) groups (the ``node`` column of the ranks table),
    not host names; a rank without a node id counts its host as its node. Without ``ranks``
    (a file written without a ranks table) the groups stored with the measurement are used.
    """
    if not ranks:
        return list(m.attrs.get("placement_groups", []))
    by_rank = {int(r["rank"]): r for r in ranks}
    out = []
    for g in range(m.ngroups):
        # dict.fromkeys: a rank appears once (IMB-MT stores a column per rank and thread)
        members = list(dict.fromkeys(int(w) for w in m.world_ranks[m.group == g]))
        hosts = [str(by_rank.get(w, {}).get("host", "?")) for w in members]
        nodes = {by_rank.get(w, {}).get("node", hosts[k]) for k, w in enumerate(members)}
        out.append({"group": g, "ranks": members, "hosts": list(dict.fromkeys(hosts)),
                    "nodes": len(nodes), "inter_node": len(nodes) > 1})
    return out


def _ranks_on(group: dict[str, Any]) -> str:
    return f"ranks {','.join(map(str, group['ranks']))} on {'+'.join(group['hosts'])}"


def placement_label(m: Measurement, ranks: list[dict[str, Any]]) -> str:
    """Which hosts the measured ranks ran on, and whether groups crossed nodes."""
    groups = placement_groups(m, ranks)
    parts = []
    for grp in groups:
        parts.append(f"{_ranks_on(grp)} ({'inter-node' if grp['inter_node'] else 'intra-node'})")
        if len(parts) >= 4 and len(groups) > 5:
            parts.append(f"... {len(groups) - 4} more groups")
            break
    if len(groups) > 1:
        crossing = sum(1 for grp in groups if grp["inter_node"])
        parts.append(f"{crossing} of {len(groups)} groups inter-node")
    return "; ".join(parts)


def annotate(m: Measurement, ranks: list[dict[str, Any]]) -> None:
    """Store where ``m`` ran with it (its label and groups), as every IMB-style job does."""
    m.attrs["placement"] = placement_label(m, ranks)
    m.attrs["placement_groups"] = placement_groups(m, ranks)
