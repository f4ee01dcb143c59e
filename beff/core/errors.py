"""Exceptions that carry an exit code and a one-line message, and the one mapping from any
exception to beff's exit code (:func:`exit_code`)."""

from __future__ import annotations


class BeffError(Exception):
    """An error reported as one line, without a traceback."""

    exit_code = 1


class UsageError(BeffError):
    """Bad command-line input or configuration: every rank exits with code 2."""

    exit_code = 2


class CollectiveFailure(BeffError):
    """A benchmark failed on some rank (e.g. a disk full), and every rank of its group raises
    this together, at the same point: the benchmark ends with a failed row, the run goes on."""


INTERRUPTED = 130  # the shell's code for SIGINT
# --strict: the run (or `beff show --strict` of its file) finished and its file is complete,
# but its figures cannot be trusted (beff.results.strict); share/docs/exit-codes.md lists
# every code.
STRICT = 4


class StrictFailure(BeffError):
    """``strict=True`` in the Python API (``--strict``): the run finished and its file is
    complete, but its figures cannot be trusted; the message says why, and ``results`` holds
    what :func:`beff.run` would have returned."""

    exit_code = STRICT

    def __init__(self, message: str, results: object = None) -> None:
        super().__init__(message)
        self.results = results


def exit_code(exc: BaseException) -> int:
    """2 for bad input, 130 for Ctrl-C, 1 for anything else (a failed run)."""
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(exc, BeffError):
        return exc.exit_code
    return 1
