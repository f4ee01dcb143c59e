"""Exceptions that carry an exit code and a one-line message."""

from __future__ import annotations


class BeffError(Exception):
    """An error reported as one line, without a traceback."""

    exit_code = 1


class UsageError(BeffError):
    """Bad command-line input or configuration: every rank exits with code 2."""

    exit_code = 2
