"""The I/O suites: IMB-IO (``beff imb io``) and b_eff_io (``beff io``)."""

from beff.core.suite import Suite, register

IMBIO = register(Suite(
    name="io", title="IMB-IO (MPI-IO: file writes, reads and open/close)", label="IMB io",
    family="imb", command="beff imb io", job="beff.io.job:imbio_job",
    view="beff.io.view:IMBIO", formats=("table", "imb", "json", "csv"),
    benchmarks=("beff.io.imbio",), importer="beff.bench.importer:IMPORTER"))
BEFFIO = register(Suite(
    name="beffio", title="b_eff_io, the effective I/O bandwidth (beff io)", label="b_eff_io",
    family="io", command="beff io", job="beff.io.job:beffio_job", view="beff.io.view:VIEW",
    formats=("table", "sum", "json", "csv"), layout="beff.io.record:LAYOUT",
    importer="beff.io.importer:IMPORTER"))
