"""The toy suite's declaration: MPI_Barrier timed in samples of ``-iter`` barriers.

Its ``-iter`` is its own (barriers per sample), not IMB-MPI1's
``msgspersample[,overall_vol[,msgs_nonaggr]]``; its TOML table is ``[toy]``.
"""

from beff.core.suite import Option, Suite, register

SUITE = register(Suite(
    name="toy", title="Toy suite (a test plug-in)", label="toy", family="toy",
    command="beff imb toy", job="tests.toy.job:job", view="tests.toy.view:VIEW",
    formats=("table", "imb", "json", "csv"), layout="tests.toy.record:LAYOUT",
    options=(
        Option("iter", int, 4, "barriers per sample", flags=("-iter",), lo=1, hi=10**6),
        Option("samples", int, 3, "samples per run", flags=("-samples",), lo=1, hi=1000),
    )))
