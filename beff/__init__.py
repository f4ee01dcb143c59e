"""beff: an MPI bandwidth analyzer (b_eff, the Intel MPI Benchmarks set, parallel I/O).

Importing the package never initializes MPI; only :mod:`beff.core.mpi` imports ``mpi4py.MPI``.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
