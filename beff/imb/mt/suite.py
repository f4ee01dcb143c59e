"""IMB-MT (multithreaded point-to-point and collectives): beff has no kernels for it, but
``beff import`` reads its text, so that old IMB-MT runs can be shown and compared."""

from typing import NoReturn

from beff.core.errors import UsageError
from beff.core.suite import Suite, register


def job(suite: Suite) -> NoReturn:
    """IMB-MT is not measured by beff."""
    raise UsageError("beff does not measure IMB-MT; `beff import` reads IMB-MT's text")


SUITE = register(Suite(
    name="mt", title="IMB-MT (not measured by beff: its text is imported)",
    label="IMB mt", family="imb", command="beff import", job="beff.imb.mt.suite:job",
    view="beff.imb.mt.view:VIEW", formats=("table", "imb", "json", "csv"),
    importer="beff.bench.importer:IMPORTER"))
