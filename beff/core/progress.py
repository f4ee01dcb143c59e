"""A rich progress bar on stderr, on rank 0 only, never mixed into data output."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from beff.core import terminal


@contextmanager
def make_progress(enabled: bool | None, total: int) -> Iterator[Callable[[str], None]]:
    """Yield ``advance(description)``; a no-op unless enabled.

    By default it is enabled when the user's terminal is behind stderr, also under a launcher
    (mpiexec hands ranks a pipe); ``--progress`` forces it (``--no-progress`` turns it off).
    """
    if enabled is None:
        enabled = terminal.is_terminal(2)
    if not enabled or total <= 0:
        yield lambda description: None
        return
    console = terminal.console(stderr=True, force=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, redirect_stdout=False,
                  redirect_stderr=False) as progress:
        task = progress.add_task("starting", total=total)

        def advance(description: str) -> None:
            progress.update(task, advance=1, description=description)

        yield advance
