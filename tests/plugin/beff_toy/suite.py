"""The toy plug-in's suites: MPI_Barrier timed in samples of ``iter`` barriers.

One option declaration gives each suite everything: ``SAMPLES`` declares no flag, so
``beff imb toy`` spells it ``-samples`` (IMB's style) and ``beff toyrun`` ``--samples`` (a
typer option); its TOML key is ``samples`` in the suite's table (``[toy]``, ``[toyrun]``);
its help and its rule come with it. The toy's ``-iter`` is its own (barriers per sample), not
IMB-MPI1's ``msgspersample[,overall_vol[,msgs_nonaggr]]``.
"""

from beff.core.options import Option
from beff.core.suite import Suite, register

ITER = Option("iter", int, 4, "barriers per sample", lo=1, hi=10**6)
SAMPLES = Option("samples", int, 3, "samples per run", lo=1, hi=1000)

SUITE = register(Suite(
    name="toy", title="Toy suite (a test plug-in)", label="toy", family="toy",
    command="beff imb toy", job="beff_toy.job:job", view="beff_toy.view:VIEW",
    formats=("table", "imb", "json", "csv"), layout="beff_toy.record:LAYOUT",
    options=(ITER, SAMPLES)))
RUN = register(Suite(
    name="toyrun", title="Toy suite with a command of its own (a test plug-in)",
    label="toyrun", family="toy", command="beff toyrun", job="beff_toy.job:job",
    view="beff_toy.view:VIEW", formats=("table", "json", "csv"),
    layout="beff_toy.record:LAYOUT", options=(ITER, SAMPLES), unused=("check", "hugepages")))
