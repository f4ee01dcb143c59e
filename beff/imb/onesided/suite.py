"""IMB-EXT (MPI-2 one-sided, fence) and IMB-RMA (MPI-3 one-sided, passive target)."""

from beff.bench.options import for_suite
from beff.core.suite import Suite, register

# IMB-MPI1 flags that IMB-EXT and IMB-RMA lack (IMB_NOTES §2): they move MPI_BYTE and reduce
# MPI_FLOAT, whatever the types.
NOT_IN_EXT = ("data_type", "red_data_type", "msglen", "zero_size", "root_shift", "sync",
              "window_size")
NOT_IN_RMA = ("data_type", "red_data_type", "msglen", "zero_size", "window_size")

EXT = register(Suite(
    name="ext", title="IMB-EXT (MPI-2 one-sided communication, fence synchronization)",
    label="IMB ext", family="imb", command="beff imb ext", job="beff.bench.job:job",
    view="beff.imb.onesided.view:EXT", formats=("table", "imb", "json", "csv", "lines"),
    benchmarks=("beff.imb.onesided.ext",), one_sided=True,
    importer="beff.bench.importer:IMPORTER", options=for_suite(without=NOT_IN_EXT),
    rules="beff.bench.options:check_together", order=40))
RMA = register(Suite(
    name="rma", title="IMB-RMA (MPI-3 one-sided communication, passive target)",
    label="IMB rma", family="imb", command="beff imb rma", job="beff.bench.job:job",
    view="beff.imb.onesided.view:RMA", formats=("table", "imb", "json", "csv", "lines"),
    benchmarks=("beff.imb.onesided.rma",), one_sided=True,
    importer="beff.bench.importer:IMPORTER", options=for_suite(without=NOT_IN_RMA),
    rules="beff.bench.options:check_together", order=50))
