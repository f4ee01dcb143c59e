"""IMB-MPI4: the MPI-4.0 persistent collectives (Bcast_persist ... Barrier_persist) and their
``_pure`` twins. Allgather_persist is opt-in, as in IMB 2021.11 (its DEFAULT flag is commented
out there)."""

from __future__ import annotations

from beff.imb.nbc.common import COLLECTIVES, register

SUITE = "mpi4"

register(SUITE, persistent=True,
         defaults=frozenset(f"{c.name}_persist" for c in COLLECTIVES if c.name != "Allgather"))
