"""Another MPI job on the node, not beff's: it keeps MPICH's shared-memory segment under its
name until its standard input closes (``python -m tests.mpi.shm_holder`` under mpiexec).

Rank 0 prints the segments its process maps, one line, once every rank is up.
"""

from __future__ import annotations

import select
import sys
import time

from mpi4py import MPI

from beff.core import shm

LIFETIME_S = 600.0


def main() -> None:
    world = MPI.COMM_WORLD
    world.Barrier()
    if world.Get_rank() == 0:
        print("segments:", " ".join(shm.mapped()), flush=True)
        select.select([sys.stdin], [], [], LIFETIME_S)  # until the test closes stdin
    req = world.Ibarrier()  # the others wait without spinning
    while not req.Test():
        time.sleep(0.1)


if __name__ == "__main__":
    main()
