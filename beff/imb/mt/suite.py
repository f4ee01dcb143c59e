"""IMB-MT: ten benchmarks with several threads per rank under MPI_THREAD_MULTIPLE, each
thread on its own duplicate of MPI_COMM_WORLD, with IMB-MT's own options.

Its flags (``-count``, ``-repeat``, ``-warmup``, ``-window_size``, ``-barrier``,
``-datatype``, ``-stride``, ``-check``, ``-malloc_align``, ``-malloc_algo``, beff's
``-threads``) mean what IMB-MT says (:mod:`.options`); its TOML table is ``[mt]``. It is the
only suite that starts MPI with MPI_THREAD_MULTIPLE.
"""

from beff.bench.options import NAMES
from beff.core.suite import Suite, register
from beff.imb.mt.options import OPTIONS

SUITE = register(Suite(
    name="mt", title="IMB-MT (several threads per rank, MPI_THREAD_MULTIPLE)", label="IMB mt",
    family="imb", command="beff imb mt", job="beff.imb.mt.job:job",
    view="beff.imb.mt.view:VIEW", formats=("table", "imb", "json", "csv", "lines"),
    benchmarks=("beff.imb.mt.kernels",), options=(*NAMES, *OPTIONS), thread_level="multiple",
    importer="beff.bench.importer:IMPORTER", order=70))
