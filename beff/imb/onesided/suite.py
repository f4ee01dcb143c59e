"""IMB-EXT (MPI-2 one-sided, fence) and IMB-RMA (MPI-3 one-sided, passive target)."""

from beff.core.suite import Suite, register

EXT = register(Suite(
    name="ext", title="IMB-EXT (MPI-2 one-sided communication, fence synchronization)",
    label="IMB ext", family="imb", command="beff imb ext", job="beff.bench.job:job",
    view="beff.imb.onesided.view:EXT", formats=("table", "imb", "json", "csv"),
    benchmarks=("beff.imb.onesided.ext",), one_sided=True,
    importer="beff.bench.importer:IMPORTER"))
RMA = register(Suite(
    name="rma", title="IMB-RMA (MPI-3 one-sided communication, passive target)",
    label="IMB rma", family="imb", command="beff imb rma", job="beff.bench.job:job",
    view="beff.imb.onesided.view:RMA", formats=("table", "imb", "json", "csv"),
    benchmarks=("beff.imb.onesided.rma",), one_sided=True,
    importer="beff.bench.importer:IMPORTER"))
