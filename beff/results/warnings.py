"""The warnings a run earns: derived from its metadata and results, archived with it.

Each is found once, printed once (on stderr during a run), and stored in the file's
``warnings`` attribute, from which ``beff show`` prints them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from beff.results.model import Measurement, RunRecord

OVERSUBSCRIBED = ("oversubscribed run: more ranks than allowed cores on a node; timings include "
                  "OS scheduling and are not representative")
ONE_NODE = ("all ranks ran on one node: point-to-point figures are intra-node (shared memory), "
            "not network figures")
WORKAROUND = ("beff set {setting} before MPI_Init: without it Open MPI 5.0's one-sided "
              "component crashes in most runs (set the variable yourself to choose)")
CHECKED = ("check mode: buffers were verified; these timings are not comparable with unchecked "
           "runs")


def _ranks_on(group: dict[str, Any]) -> str:
    return f"ranks {','.join(map(str, group['ranks']))} on {'+'.join(group['hosts'])}"


def run_warnings(attrs: dict[str, Any], network: bool | str) -> list[str]:
    """What the run's metadata tells, before any result: ``network`` when the run measures
    transfers between ranks (a benchmark with a bandwidth column, or b_eff): True, or the
    one-node warning in the suite's own words (``Job.network``, b_eff's)."""
    out = []
    placement = attrs.get("placement", {})
    if placement.get("oversubscribed"):
        out.append(OVERSUBSCRIBED)
    if network and placement.get("nodes", 1) == 1 and attrs.get("nprocs", 1) > 1:
        out.append(network if isinstance(network, str) else ONE_NODE)
    if attrs.get("config", {}).get("check"):
        out.append(CHECKED)
    for key, value in attrs.get("workaround_settings", {}).items():
        out.append(WORKAROUND.format(setting=f"{key}={value}"))
    return out


def result_warnings(attrs: dict[str, Any], m: Measurement,
                    groups: list[dict[str, Any]]) -> list[str]:
    """What one result tells: a point-to-point benchmark whose every group stayed inside one
    node of a multi-node run; window starts (--sync window) on clocks synchronised to no
    better than a microsecond."""
    out = _window_warning(m)
    if attrs.get("placement", {}).get("nodes", 1) == 1 or "mbytes_per_sec" not in m.columns:
        return out
    if not groups or any(g["inter_node"] for g in groups):
        return out
    where = "; ".join(_ranks_on(g) for g in groups[:4])
    more = f"; ... {len(groups) - 4} more groups" if len(groups) > 4 else ""
    return out + [f"{m.benchmark} ({m.nprocs} processes) ran inside one node ({where}{more}): "
                  "intra-node figures, not network figures; use -map PxQ or one rank per node"]


WINDOW_RESIDUAL_S = 1e-6


def _window_warning(m: Measurement) -> list[str]:
    if m.attrs.get("start_policy") != "window":
        return []
    residual = max(m.attrs.get("clock", {}).get("residual_s") or [0.0])
    if residual <= WINDOW_RESIDUAL_S:
        return []
    return [f"{m.benchmark} ({m.nprocs} processes): the clocks were synchronised within "
            f"{residual * 1e6:.2f} µs only (above {WINDOW_RESIDUAL_S * 1e6:g} µs: a loaded "
            "node, or a slow or uneven link), so its window starts are that uncertain"]


def of_record(record: RunRecord) -> list[str]:
    """The archived warnings; for files that predate them, derived again: a result may
    carry its one-node warning (``one_node_warning``, b_eff's record), else a benchmark with
    a bandwidth column earns :data:`ONE_NODE`."""
    stored = record.attrs.get("warnings")
    if isinstance(stored, list):
        return [str(w) for w in stored]
    ms: Iterable[Measurement] = record.measurements
    own = [str(w) for w in (getattr(r, "one_node_warning", "") for r in record.results) if w]
    network: bool | str = own[0] if own else any("mbytes_per_sec" in m.columns for m in ms)
    found = run_warnings(record.attrs, network=network)
    for m in record.measurements:
        found += result_warnings(record.attrs, m, list(m.attrs.get("placement_groups", [])))
    return list(dict.fromkeys(found))
