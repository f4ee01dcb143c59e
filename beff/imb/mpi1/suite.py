"""IMB-MPI1: point-to-point and collective benchmarks (this folder's p2p and coll)."""

from beff.bench.options import PER_ITERATION, START_POLICY, for_suite
from beff.core.suite import Suite, register

SUITE = register(Suite(
    name="mpi1", title="IMB-MPI1 (point-to-point and collectives)", label="IMB mpi1",
    family="imb", command="beff imb mpi1", job="beff.bench.job:job",
    view="beff.imb.mpi1.view:VIEW", formats=("table", "imb", "json", "csv", "lines"),
    benchmarks=("beff.imb.mpi1.p2p", "beff.imb.mpi1.coll"),
    importer="beff.bench.importer:IMPORTER",
    options=(*for_suite(without=("aggregate_mode",)), *PER_ITERATION, *START_POLICY),
    rules="beff.bench.options:check_together", order=10))
