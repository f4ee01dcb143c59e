"""beff.core.clocks on a simulated clock: ranks whose clocks are off by up to 1 ms and drift
by up to 50 ppm, ping-pongs with random one-way latencies; the fitted models recover every
rank's time on rank 0's clock, and the window policy measures a collective's true duration
where IMB's barrier policy adds the barrier's exit skew."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from beff.core import clocks

BASE_S = 1000.0  # clocks count from the boot, as MPI_Wtime's may (float64: 1e-13 s there)
LATENCY_S = 1e-6
NOISE_S = 0.2e-6  # the mean of each one-way latency's exponential excess
ROUNDS, FITPOINTS, SPACING_S = 10, 20, 0.05


class Cluster:
    """P simulated ranks: local_i(t) = t (1 + drift_i) + offset_i, t the true time."""

    def __init__(self, nprocs: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.offset = self.rng.uniform(-1e-3, 1e-3, nprocs)
        self.drift = self.rng.uniform(-50e-6, 50e-6, nprocs)

    def local(self, rank: int, t: float) -> float:
        return t * (1 + self.drift[rank]) + self.offset[rank]

    def true(self, rank: int, local: float) -> float:
        return (local - self.offset[rank]) / (1 + self.drift[rank])

    def latency(self) -> float:
        return LATENCY_S + float(self.rng.exponential(NOISE_S))

    def exchanges(self, ref: int, client: int, t: float) -> np.ndarray:
        """FITPOINTS x ROUNDS ping-pongs from ``t`` on: client send, reference stamp,
        client receive (each on its own clock)."""
        out = np.empty((FITPOINTS, ROUNDS, 3))
        for p in range(FITPOINTS):
            now = t + p * SPACING_S
            for k in range(ROUNDS):
                there = now + self.latency()
                back = there + self.latency()
                out[p, k] = (self.local(client, now), self.local(ref, there),
                             self.local(client, back))
                now = back + 1e-6
        return out

    def models(self, pairs: Sequence[Sequence[tuple[int, int]]]) -> tuple[
            list[clocks.Affine], list[clocks.Fit]]:
        """Every rank's model of rank 0's clock, through the rounds of pairs."""
        n = len(self.offset)
        parent, fits = [-1] * n, {}
        found = []
        for i, round_pairs in enumerate(pairs):
            for ref, client in round_pairs:
                f = clocks.fit(self.exchanges(ref, client, BASE_S + i * FITPOINTS * SPACING_S))
                fits[client], parent[client] = f.model, ref
                found.append(f)
        return clocks.compose(fits, parent), found


def test_one_pair_recovers_the_offset_and_the_drift() -> None:
    c = Cluster(2, seed=1)
    f = clocks.fit(c.exchanges(0, 1, BASE_S))
    t = BASE_S + 0.5
    error = f.model(c.local(1, t)) - c.local(0, t)
    assert abs(error) < 1e-6 + 2 * NOISE_S
    relative = (1 + c.drift[1]) / (1 + c.drift[0]) - 1
    assert abs(f.drift - relative) < 2e-6  # 50 ppm injected, 2 ppm recovered
    assert f.residual < 2 * NOISE_S and f.min_rtt >= 2 * LATENCY_S


@pytest.mark.parametrize("nprocs,seed", [(2, 3), (4, 4), (7, 5), (16, 6)])
def test_every_rank_reads_rank_0s_clock_within_1us_plus_twice_the_noise(
        nprocs: int, seed: int) -> None:
    c = Cluster(nprocs, seed)
    models, _ = c.models(clocks.tree_rounds(nprocs))
    t = BASE_S + 2.0
    for rank, model in enumerate(models):
        assert abs(model(c.local(rank, t)) - c.local(0, t)) < 1e-6 + 2 * NOISE_S, rank
    # the control: without the models, the clocks are up to 2 ms apart
    assert max(abs(c.local(r, t) - c.local(0, t)) for r in range(nprocs)) > 1e-5


def test_a_window_measures_the_true_duration_where_a_barrier_adds_its_skew() -> None:
    nprocs, duration, skew = 4, 5e-6, 20e-6
    c = Cluster(nprocs, seed=9)
    models, _ = c.models(clocks.tree_rounds(nprocs))
    t = BASE_S + 3.0
    # IMB: every rank leaves the barrier at its own moment (up to `skew` apart); the
    # collective ends everywhere `duration` after the last one started
    exits = t + np.array([0.0, skew, 0.3 * skew, 0.6 * skew])
    end = exits.max() + duration
    barrier = clocks.barrier_duration([c.local(r, exits[r]) for r in range(nprocs)],
                                      [c.local(r, end) for r in range(nprocs)])
    assert barrier == pytest.approx(duration + skew, abs=0.1e-6)
    # the window: every rank starts when its model says rank 0's clock shows the start
    start = c.local(0, t + 1e-3)
    begins = [c.true(r, models[r].inverse(start)) for r in range(nprocs)]
    end = max(begins) + duration
    window = clocks.window_duration([models[r](c.local(r, end)) for r in range(nprocs)],
                                    start)
    assert abs(window - duration) < 1e-6 + 2 * NOISE_S


def test_a_rank_that_arrives_after_the_start_makes_the_repetition_invalid() -> None:
    start = clocks.window_start(10.0, 1e-4, 3)
    assert start == pytest.approx(10.0003)
    assert not clocks.late([10.0001, 10.0002], start)
    assert clocks.late([10.0001, 10.00031], start)


def test_the_tree_makes_every_rank_but_0_a_client_once_in_disjoint_rounds() -> None:
    for n in (1, 2, 3, 5, 8, 13, 64, 100):
        rounds = clocks.tree_rounds(n)
        assert len(rounds) == (0 if n == 1 else int(np.ceil(np.log2(n))))
        clients = [c for pairs in rounds for _, c in pairs]
        assert sorted(clients) == list(range(1, n))
        synced = {0}
        for pairs in rounds:
            busy = [x for pair in pairs for x in pair]
            assert len(busy) == len(set(busy))  # disjoint: they run at once
            assert all(ref in synced for ref, _ in pairs)  # a reference is synced first
            synced |= {c for _, c in pairs}


def test_hierarchical_rounds_cross_nodes_only_among_leaders() -> None:
    node_of = [0, 0, 1, 1, 1, 2, 0, 2, 2, 2]  # three nodes, interleaved ranks
    rounds = clocks.hierarchical_rounds(node_of)
    clients = [c for pairs in rounds for _, c in pairs]
    assert sorted(clients) == list(range(1, len(node_of)))
    leaders = {0, 2, 5}
    outer = [pairs for pairs in rounds if any(node_of[a] != node_of[b] for a, b in pairs)]
    assert len(outer) == 2  # ceil(log2 3) rounds between nodes
    for pairs in outer:
        assert all(a in leaders and b in leaders for a, b in pairs)
    inner = rounds[len(outer):]
    assert len(inner) == 2  # the largest node has 4 ranks: 2 rounds, all nodes at once
    assert all(node_of[a] == node_of[b] for pairs in inner for a, b in pairs)


def test_models_compose_along_the_tree() -> None:
    to_parent = {1: clocks.Affine(2.0, 1.5), 2: clocks.Affine(-1.0, 0.5)}
    models = clocks.compose(to_parent, [-1, 0, 1])
    assert models[0](7.0) == 7.0
    assert models[2](4.0) == pytest.approx(to_parent[1](to_parent[2](4.0)))
    assert models[2].inverse(models[2](4.0)) == pytest.approx(4.0)


def test_resync_comes_when_the_drift_error_can_reach_the_bound() -> None:
    assert clocks.resync_after(1e-7, 1e-6) == pytest.approx(10.0)
    assert clocks.resync_after(0.0, 1e-6) == float("inf")
