"""b_eff, Rabenseifner's effective bandwidth (``beff run``)."""

from beff.core.suite import Suite, register
from beff.effbw.options import OPTIONS

SUITE = register(Suite(
    name="beff", title="b_eff, the effective bandwidth (beff run)", label="b_eff",
    family="b_eff", command="beff run", job="beff.effbw.job:job", view="beff.effbw.view:VIEW",
    formats=("table", "sum", "json", "csv", "lines"), layout="beff.effbw.record:LAYOUT",
    importer="beff.effbw.importer:IMPORTER", options=OPTIONS,
    unused=("check", "batches"), order=100))
