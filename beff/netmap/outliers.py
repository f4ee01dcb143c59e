"""``beff map``'s outlier rule, as pure functions: which nodes and which links are far worse
than the rest, and whether a pattern points at a node or at a link.

The caller gives each pair one figure: ``beff map`` takes the median of a pair's samples,
for bandwidth and for latency alike, the figure its matrices show, so that a named pair's
figure is the one its cell shows. A slow path is slow in every sample, so in their median;
a disturbance spoils the median only when it spoils half of a pair's samples, and the run
takes the samples in passes over every shift, so a disturbance of a few seconds spoils one
sample of many pairs rather than every sample of a few (each latency sample is itself the
median of its round trips). Figures are compared on a log scale (ratios, not differences),
as ``y = log(bandwidth)`` or ``y = -log(latency)`` (higher is better either way).

* A rank's **row** figure is its best pair as the sender (as the pinging side for
  latency), its **column** figure its best pair as the receiver (the answering side). A
  slow node makes all its pairs slow, so even its best pair is slow; a single slow link does
  not move either figure of its two ends, which have other, healthy partners.
* :func:`far_below` decides what is far worse than the rest: a value is named when it lies
  below the reference by at least ``log(min_ratio)`` (at least ``min_ratio`` times worse)
  *and* by more than ``threshold`` robust deviations. The reference is the median of the
  better half of the values, and a robust deviation is SPREAD times the median absolute
  deviation of that better half (SPREAD makes it the standard deviation for normally
  distributed values; with fewer than SPREAD_MIN values in the better half, only the ratio
  counts). Taking the better half, not all values, keeps the rule working when up to half
  of the nodes are slow (two of four hosts, say), where the median of all values would lie
  among the slow ones.
* Nodes: the rule over the row figures names slow senders, over the column figures slow
  receivers; a node named on both sides is named once ("both").
* Links: a pair is expected to be as good as the worse of its sender's row figure and its
  receiver's column figure; its residual is its figure minus that. The rule over the
  residuals of the pairs no named node explains names the links.

Pairs within a node (shared memory) and pairs across nodes (the network) are analysed apart,
by the caller: they are different things, and a mix would make every network pair look slow.

Where no pair's figure judges a link (every mapped rank on one node, or more ranks than cores
on a node, so that the load of the other ranks decides the figures), :func:`placement_note`
says why, and the default choice ``auto`` (:func:`figures_judged`) names nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

# 1 / (the median absolute deviation, about its median, of the upper half of a normal
# sample, in standard deviations): the MAD of the better half times SPREAD estimates sigma.
SPREAD = 2.5
# The better half's spread is estimated from this many values at least; with fewer (fewer
# than ten nodes) the ratio alone decides: the median absolute deviation of two or three
# values says nothing.
SPREAD_MIN = 5
BANDWIDTH = "bandwidth"
LATENCY = "latency"
ACROSS = "across nodes"
WITHIN = "within nodes"


@dataclass(frozen=True)
class Rule:
    """When a figure is far worse than the rest."""

    threshold: float = 4.0  # robust deviations below the reference
    min_ratio: float = 2.0  # and at least this many times worse

    def describe(self) -> str:
        return (f"named when at least {self.min_ratio:g}x worse than the reference (the "
                f"median of the better half) and more than {self.threshold:g} robust "
                f"deviations ({SPREAD:g} x the median absolute deviation of the better "
                f"half, when it has {SPREAD_MIN} values or more) below it; per pair: the "
                "median of its samples, as in the matrices; log scale")


@dataclass(frozen=True)
class Finding:
    """One named node or link."""

    kind: str  # "node" or "link"
    figure: str  # "bandwidth" or "latency"
    side: str  # node: "send" (its row), "receive" (its column) or "both"; link: "link"
    rank: int  # the node's mapped rank; a link's sender
    peer: int  # a link's receiver; -1 for a node
    value: float  # B/s or s: the node's best pair on that side, or the link's figure
    reference: float  # what it was compared with, in the same unit
    ratio: float  # how many times worse than the reference
    scope: str  # ACROSS or WITHIN

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def placement_note(nodes: int, oversubscribed: bool) -> str:
    """Why the pairs' figures of a job on ``nodes`` nodes judge no link, in words ("": they
    do)."""
    why = []
    if nodes == 1:
        why.append("every mapped rank is on one node, so every pair shares that node's "
                   "memory and no pair crosses a network link")
    if oversubscribed:
        why.append("the job is oversubscribed (more ranks than cores on a node), so ranks "
                   "share cores and a pair's figures follow the load, not its link")
    if not why:
        return ""
    return "pair figures here do not judge links: " + "; and ".join(why)


def figures_judged(choice: str, note: str) -> str:
    """The figures whose outliers are named for the option's ``choice`` (auto, both,
    bandwidth, latency or none) where :func:`placement_note` gave ``note``: ``auto`` is
    both, or none where the note says the figures judge no link; the others as given."""
    if choice == "auto":
        return "none" if note else "both"
    return choice


def consequence(note: str, figures: str) -> str:
    """``note`` (:func:`placement_note`) and what it means for the outliers named by
    ``figures`` (both, bandwidth, latency or none)."""
    if figures == "none":
        return f"{note}; no outliers are named (--outliers both names them anyway)"
    what = "bandwidth and latency" if figures == "both" else figures
    return f"{note}; the outliers named (by {what}) tell that, not slow links"


def far_below(y: np.ndarray, rule: Rule) -> tuple[np.ndarray, float, float]:
    """Which of ``y`` (log figures, higher is better; NaN = none) are far below the rest:
    (mask, reference, cut-off). Fewer than two values name nothing."""
    y = np.asarray(y, dtype=np.float64)
    finite = y[np.isfinite(y)]
    if finite.size < 2:
        return np.zeros(y.shape, dtype=bool), math.nan, math.nan
    top = finite[finite >= np.median(finite)]
    ref = float(np.median(top))
    deviation = SPREAD * float(np.median(np.abs(top - ref))) if top.size >= SPREAD_MIN else 0.0
    cut = ref - max(rule.threshold * deviation, math.log(rule.min_ratio))
    with np.errstate(invalid="ignore"):
        return np.isfinite(y) & (y < cut), ref, cut


def _natural(y: float, higher_is_better: bool) -> float:
    return math.exp(y) if higher_is_better else math.exp(-y)


def best_per_rank(index: np.ndarray, y: np.ndarray, nmapped: int) -> np.ndarray:
    """Per mapped rank: the best ``y`` of the pairs it is ``index`` of (NaN: none)."""
    best = np.full(nmapped, -np.inf)
    np.maximum.at(best, index, y)
    best[np.isneginf(best)] = np.nan
    return best


def analyze(sender: np.ndarray, receiver: np.ndarray, value: np.ndarray, nmapped: int,
            figure: str, rule: Rule, scope: str = ACROSS) -> list[Finding]:
    """The nodes and links that ``rule`` names among the pairs ``sender[i] -> receiver[i]``
    with figures ``value[i]`` (bandwidth in B/s, or latency in s; NaN or <= 0: not
    measured). Nodes first (by rank), then links (worst first)."""
    higher = figure == BANDWIDTH
    sender = np.asarray(sender, dtype=np.int64)
    receiver = np.asarray(receiver, dtype=np.int64)
    value = np.asarray(value, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(value) & (value > 0)
    s, r, v = sender[ok], receiver[ok], value[ok]
    y = np.log(v) if higher else -np.log(v)
    row = best_per_rank(s, y, nmapped)
    col = best_per_rank(r, y, nmapped)
    low_row, ref_row, _ = far_below(row, rule)
    low_col, ref_col, _ = far_below(col, rule)
    found: list[Finding] = []
    for node in np.flatnonzero(low_row | low_col):
        side = "both" if low_row[node] and low_col[node] else (
            "send" if low_row[node] else "receive")
        mine, ref, of = (row[node], ref_row, s) if side != "receive" else \
            (col[node], ref_col, r)
        if side == "both" and ref_col - col[node] > ref_row - row[node]:
            mine, ref, of = col[node], ref_col, r
        best = v[(of == node) & (y == mine)][0]  # the best pair's own figure, not exp(log)
        found.append(Finding("node", figure, side, int(node), -1, float(best),
                             _natural(ref, higher), math.exp(ref - mine), scope))
    explained = low_row[s] | low_col[r]
    expected = np.minimum(row[s], col[r])
    residual = np.where(explained, np.nan, y - expected)
    low_link, ref_res, _ = far_below(residual, rule)
    links = np.flatnonzero(low_link)
    for i in links[np.argsort(residual[links], kind="stable")]:
        found.append(Finding("link", figure, "link", int(s[i]), int(r[i]),
                             float(v[i]),
                             _natural(float(expected[i]) + ref_res, higher),
                             math.exp(ref_res - float(residual[i])), scope))
    return found
