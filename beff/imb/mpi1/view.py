"""IMB-MPI1's view: IMB's text with IMB-MPI1's header whitespace (IMB_g_info.c)."""

from beff.bench.view import ImbView

VIEW = ImbView("MPI-1", style=(" ", " ", "# "))
