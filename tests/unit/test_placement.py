"""beff.core.metadata.placement: node ids in the order of their lowest rank, ranks per node
and the oversubscription verdict, from each rank's facts."""

from __future__ import annotations

from typing import Any

from beff.core.metadata import placement


def facts(leaders: list[int], cpus: list[str]) -> list[dict[str, Any]]:
    return [{"rank": i, "node_leader": ld, "cpus": c, "host": f"h{ld}"}
            for i, (ld, c) in enumerate(zip(leaders, cpus, strict=True))]


def test_nodes_are_numbered_by_their_lowest_rank_and_counted() -> None:
    ranks = facts([0, 0, 2, 2, 2, 5], ["0", "1", "0", "1", "2-3", "0-7"])
    where = placement(ranks)
    assert [r["node"] for r in ranks] == [0, 0, 1, 1, 1, 2]
    assert where["nodes"] == 3 and where["ranks_per_node"] == [2, 3, 1]
    assert where["hosts"] == ["h0", "h2", "h5"] and where["oversubscribed"] is False


def test_more_ranks_than_the_cpus_they_may_use_is_oversubscribed() -> None:
    ranks = facts([0, 0, 0, 3], ["0-1", "0-1", "1", "0-63"])  # 3 ranks on CPUs 0 and 1
    assert placement(ranks)["oversubscribed"] is True
    alone = facts([0, 0, 0, 3], ["0", "1", "2", "0-63"])
    assert placement(alone)["oversubscribed"] is False


def test_a_large_table_keeps_every_rank_on_its_node() -> None:
    """10^5 ranks on 10^3 nodes (one pass over the ranks, not one per node)."""
    per_node = 100
    leaders = [(i // per_node) * per_node for i in range(100_000)]
    ranks = facts(leaders, [str(i % per_node) for i in range(100_000)])
    where = placement(ranks)
    assert where["nodes"] == 1000 and where["ranks_per_node"] == [per_node] * 1000
    assert ranks[-1]["node"] == 999 and where["oversubscribed"] is False


def test_node_ids_from_leaders_number_nodes_by_their_lowest_rank() -> None:
    """runtime.node_ids_of: each rank's node id from each rank's node leader, as np.unique's
    inverse numbers them, on random placements (nodes of any size, ranks interleaved)."""
    import numpy as np

    from beff.core.runtime import node_ids_of

    rng = np.random.default_rng(7)
    for _ in range(300):
        P = int(rng.integers(1, 300))
        node = rng.integers(0, int(rng.integers(1, P + 1)), P)
        first = {int(n): int(np.flatnonzero(node == n)[0]) for n in np.unique(node)}
        leaders = np.array([first[int(n)] for n in node], dtype=np.int64)
        expected = np.unique(leaders, return_inverse=True)[1]
        assert node_ids_of(leaders.copy()).tolist() == expected.tolist()
