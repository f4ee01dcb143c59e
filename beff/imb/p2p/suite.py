"""IMB-P2P: eight point-to-point patterns on all ranks at once, with IMB-P2P's own options.

Its ``-iter``, ``-msglog`` and ``-msglen`` mean what IMB-P2P says (:mod:`.options`), not
IMB-MPI1's; its other flags are its own (``-msgsz``, ``-msgrd``, ``-msgwr``, ``-pause``,
``-seed``), and beff's ``--per-iteration``; its TOML table is ``[p2p]``.
"""

from dataclasses import replace

from beff.bench.options import NAMES, PER_ITERATION
from beff.core.suite import Suite, register
from beff.imb.p2p.options import OPTIONS

SUITE = register(Suite(
    name="p2p", title="IMB-P2P (point-to-point patterns on all ranks)", label="IMB p2p",
    family="imb", command="beff imb p2p", job="beff.imb.p2p.job:job",
    view="beff.imb.p2p.view:VIEW", formats=("table", "imb", "json", "csv", "lines"),
    benchmarks=("beff.imb.p2p.kernels",),
    options=(NAMES[0], *OPTIONS, *(replace(o, table="") for o in PER_ITERATION)),
    importer="beff.bench.importer:IMPORTER", order=60))
