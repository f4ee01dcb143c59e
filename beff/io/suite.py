"""The I/O suites: IMB-IO (``beff imb io``) and b_eff_io (``beff io``)."""

from beff.bench.options import for_suite
from beff.core.suite import Suite, register
from beff.io.options import BEFFIO as BEFFIO_OPTIONS
from beff.io.options import IMBIO as IMBIO_OPTIONS

# IMB-MPI1 flags that IMB-IO lacks (IMB_NOTES §2).
NOT_IN_IMBIO = ("data_type", "red_data_type", "msglen", "zero_size", "root_shift", "sync",
                "window_size")
IMBIO = register(Suite(
    name="io", title="IMB-IO (MPI-IO: file writes, reads and open/close)", label="IMB io",
    family="imb", command="beff imb io", job="beff.io.job:imbio_job",
    view="beff.io.view:IMBIO", formats=("table", "imb", "json", "csv", "lines"),
    benchmarks=("beff.io.imbio",), importer="beff.bench.importer:IMPORTER",
    options=(*for_suite(without=NOT_IN_IMBIO), *IMBIO_OPTIONS),
    rules="beff.bench.options:check_together", order=80))
BEFFIO = register(Suite(
    name="beffio", title="b_eff_io, the effective I/O bandwidth (beff io)", label="b_eff_io",
    family="io", command="beff io", job="beff.io.job:beffio_job", view="beff.io.view:VIEW",
    formats=("table", "sum", "json", "csv", "lines"), layout="beff.io.record:LAYOUT",
    importer="beff.io.importer:IMPORTER", options=BEFFIO_OPTIONS,
    unused=("hugepages", "batches", "thread_level"), order=90))
