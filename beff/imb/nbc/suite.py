"""IMB-NBC and IMB-MPI4: nonblocking and persistent collectives, with overlap."""

from beff.bench.options import START_POLICY, for_suite
from beff.core.suite import Suite, register

NBC = register(Suite(
    name="nbc", title="IMB-NBC (nonblocking collectives, with overlap)", label="IMB nbc",
    family="imb", command="beff imb nbc", job="beff.bench.job:job",
    view="beff.imb.nbc.view:NBC", formats=("table", "imb", "json", "csv", "lines"),
    benchmarks=("beff.imb.nbc.nbc",), importer="beff.bench.importer:IMPORTER",
    options=(*for_suite(without=("aggregate_mode",)), *START_POLICY),
    rules="beff.bench.options:check_together", order=20))
MPI4 = register(Suite(
    name="mpi4", title="IMB-MPI4 (MPI-4.0 persistent collectives, with overlap)",
    label="IMB mpi4", family="imb", command="beff imb mpi4", job="beff.bench.job:job",
    view="beff.imb.nbc.view:MPI4", formats=("table", "imb", "json", "csv", "lines"),
    benchmarks=("beff.imb.nbc.mpi4",), importer="beff.bench.importer:IMPORTER",
    options=(*for_suite(without=("aggregate_mode",)), *START_POLICY),
    rules="beff.bench.options:check_together", order=30))
