"""IMB-MT's view: IMB's text with IMB-MT's title."""

from beff.bench.view import ImbView

VIEW = ImbView("MT")
