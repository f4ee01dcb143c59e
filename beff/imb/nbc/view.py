"""The views of IMB-NBC and IMB-MPI4: IMB's text with each component's header whitespace."""

from beff.bench.view import ImbView

NBC = ImbView("MPI-NBC", style=("", "", "#"))
MPI4 = ImbView("MPI-4", style=("", "", "# "))
