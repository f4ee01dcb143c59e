"""IMB-NBC: the MPI-3 nonblocking collectives (Ibcast ... Ibarrier) and their ``_pure`` twins."""

from __future__ import annotations

from beff.imb.nbc.common import register

SUITE = "nbc"

register(SUITE, persistent=False)
