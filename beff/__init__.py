"""beff: an MPI bandwidth analyzer (b_eff, the Intel MPI Benchmarks set, parallel I/O).

Importing the package never initializes MPI; only :mod:`beff.core.mpi` imports ``mpi4py.MPI``.
``beff.run(suite, **options)`` and ``beff.load(path)`` are the Python API (:mod:`beff.api`),
imported when first used.
"""

import sys as _sys

if _sys.argv[:1] == ["-m"] or _sys.argv[0].endswith("/beff"):  # the command, not a program
    # that imports beff: from its first line on, a Ctrl-C is only noted (beff.core.early
    # acts on it), so that none lands in an import as a traceback
    import _signal  # type: ignore[import-not-found]  # builtin: no typing, enum

    _interrupted = False

    def _note_sigint(signum: int, frame: object) -> None:
        global _interrupted
        _interrupted = True

    _signal.signal(_signal.SIGINT, _note_sigint)

import importlib  # noqa: E402
from typing import Any  # noqa: E402

__version__ = "0.1.0"
__all__ = ["__version__", "load", "run"]


def __getattr__(name: str) -> Any:
    if name in ("run", "load"):  # by name: the package itself stays below every layer
        return getattr(importlib.import_module("beff.api"), name)
    raise AttributeError(f"module 'beff' has no attribute {name!r}")
