"""The views of IMB-EXT and IMB-RMA: IMB's text with each component's header whitespace."""

from beff.bench.view import ImbView

EXT = ImbView("MPI-2", style=("", "", "#"))
RMA = ImbView("MPI-RMA", style=(" ", "", "# "))
