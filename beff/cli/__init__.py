"""The ``beff`` command line: the typer app (``beff.cli.app``) and ``beff info``."""

from beff.cli.app import app, main

__all__ = ["app", "main"]
