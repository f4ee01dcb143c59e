"""Progress on stderr, on rank 0 only, never mixed into data output.

On the user's terminal it is a live rich bar. Elsewhere (a pipe or a batch job's log, or a
relay that forwards whole lines, as slurmstepd does under plain srun) it is a plain line at
the first step and then at most every ``LINE_INTERVAL_S``, by default too, so that a log
shows a long run's progress: a bar redrawn in place would arrive late and garble the log.
``--no-progress`` silences both.
"""

from __future__ import annotations

import datetime
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from beff.core import terminal

if TYPE_CHECKING:  # imported where a live bar is drawn: a run into a log or pipe needs none
    from rich.progress import Progress

LINE_INTERVAL_S = 10.0


class Bar:
    """``bar(description)`` records one finished step; ``with bar.paused():`` wraps rank 0's
    printing of a table or a warning. This base class shows nothing."""

    def __call__(self, description: str) -> None:
        pass

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Flushes stdout after the block, so that each table is out when printed."""
        try:
            yield
        finally:
            sys.stdout.flush()


class Estimate:
    """The time left, at the pace of the steps after the first: the first holds the run's
    start-up (loading or compiling the timed loops, the first calibration), which made the
    first estimates several times too long. None until two steps are done."""

    def __init__(self, total: int, clock: Callable[[], float] | None = None) -> None:
        self.total = total
        self.clock = clock or (lambda: time.monotonic())
        self.done = 0
        self.first: float | None = None  # when the first step was done

    def step(self) -> None:
        self.done += 1
        if self.done == 1:
            self.first = self.clock()

    def left(self) -> float | None:
        if self.first is None or self.done < 2:
            return None
        return (self.clock() - self.first) / (self.done - 1) * max(0, self.total - self.done)


class LiveBar(Bar):
    """A rich bar, redrawn in place; taken off the terminal while a table is printed, so
    that the two never share a line."""

    def __init__(self, progress: Progress, total: int) -> None:
        self._progress = progress
        self._task = progress.add_task("starting", total=total, left="")
        self._estimate = Estimate(total)

    def __call__(self, description: str) -> None:
        self._estimate.step()
        left = self._estimate.left()
        self._progress.update(self._task, advance=1, description=description,
                              left="" if left is None else f"{_clock(left)} left")

    @contextmanager
    def paused(self) -> Iterator[None]:
        self._progress.stop()  # transient: erases the bar
        try:
            with super().paused():
                yield
        finally:
            self._progress.start()


class LineBar(Bar):
    """One line per ``LINE_INTERVAL_S`` (and at the first step): steps done, elapsed time and
    an estimate of the time left."""

    def __init__(self, total: int, clock: Callable[[], float] | None = None) -> None:
        self.total = total
        self.clock = clock or (lambda: time.monotonic())
        self.started = self.clock()
        self.last: float | None = None
        self.estimate = Estimate(total, self.clock)

    @property
    def done(self) -> int:
        return self.estimate.done

    def __call__(self, description: str) -> None:
        self.estimate.step()
        now = self.clock()
        if self.last is not None and now - self.last < LINE_INTERVAL_S:
            return
        self.last = now
        elapsed = now - self.started
        line = f"progress: {self.done}/{self.total} {description}, {_clock(elapsed)} elapsed"
        left = self.estimate.left()
        if left is not None and elapsed >= 1.0:  # below a second: "about 0:00:00 left"
            line += f", about {_clock(left)} left"
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _clock(seconds: float) -> str:
    return str(datetime.timedelta(seconds=round(seconds)))


@contextmanager
def make_progress(enabled: bool | None, total: int) -> Iterator[Bar]:
    """Yield the :class:`Bar` of ``total`` steps.

    By default it is a live bar when the user's terminal is behind stderr, also under a
    launcher (mpiexec hands ranks a pipe), and plain lines otherwise (a log); ``--progress``
    asks for it explicitly, ``--no-progress`` turns it off.
    """
    if enabled is False or total <= 0:
        yield Bar()
        return
    on_terminal = terminal.is_terminal(2)
    if not on_terminal or terminal.line_relay():
        yield LineBar(total)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = terminal.console(stderr=True, force=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[left]}"))
    with Progress(*columns, console=console, transient=True, redirect_stdout=False,
                  redirect_stderr=False) as progress:
        yield LiveBar(progress, total)
