"""A rich progress bar on stderr, on rank 0 only, never mixed into data output."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


@contextmanager
def make_progress(enabled: bool | None, total: int) -> Iterator[Callable[[str], None]]:
    """Yield ``advance(description)``; a no-op unless enabled (default: stderr is a terminal)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled or total <= 0:
        yield lambda description: None
        return
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, redirect_stdout=False,
                  redirect_stderr=False) as progress:
        task = progress.add_task("starting", total=total)

        def advance(description: str) -> None:
            progress.update(task, advance=1, description=description)

        yield advance
