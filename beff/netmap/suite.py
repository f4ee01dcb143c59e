"""``beff map``: bandwidth and latency between every pair of nodes, with the outliers named."""

from beff.core.suite import Suite, register
from beff.netmap.options import OPTIONS

SUITE = register(Suite(
    name="map", title="network map: bandwidth and latency of every pair of nodes (beff map)",
    label="beff map", family="map", command="beff map", job="beff.netmap.job:job",
    view="beff.netmap.view:VIEW", formats=("table", "json", "csv", "lines"),
    layout="beff.netmap.record:LAYOUT", options=OPTIONS,
    rules="beff.netmap.options:check_combination",
    unused=("check", "batches", "hugepages", "thread_level"), order=110))
