"""beff: an MPI bandwidth analyzer (b_eff, the Intel MPI Benchmarks set, parallel I/O).

Importing the package never initializes MPI; only :mod:`beff.core.mpi` imports ``mpi4py.MPI``.
``beff.run(suite, **options)`` and ``beff.load(path)`` are the Python API (:mod:`beff.api`),
imported when first used.
"""

import importlib
from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "load", "run"]


def __getattr__(name: str) -> Any:
    if name in ("run", "load"):  # by name: the package itself stays below every layer
        return getattr(importlib.import_module("beff.api"), name)
    raise AttributeError(f"module 'beff' has no attribute {name!r}")
