"""Progress on rank 0's stderr: a live bar that gives way to tables, or plain lines."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from beff.core import progress, terminal


def test_the_live_bar_is_erased_before_a_table_and_comes_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()  # stdout and stderr on one terminal, as a user sees them
    monkeypatch.setattr(terminal, "is_terminal", lambda fd: True)
    monkeypatch.setattr(terminal, "line_relay", lambda: False)
    monkeypatch.setattr(terminal, "console", lambda stderr=False, force=None: Console(
        file=screen, force_terminal=True, width=80))
    monkeypatch.setattr("sys.stdout", screen)
    with progress.make_progress(None, 3) as bar:
        bar("PingPong np=2 0 B")
        with bar.paused():
            screen.write("MPI1 PingPong table\n")
        bar("Sendrecv np=2 0 B")
    text = screen.getvalue()
    before, after = text.split("MPI1 PingPong table\n")
    assert "━" in before and "━" in after  # drawn, and drawn again after the table
    # the bar's line was erased and the cursor is at its start when the table begins
    assert re.search(r"\r(\x1b\[1A)?\x1b\[2K$", before), repr(before[-40:])


def test_off_the_terminal_progress_is_plain_lines_at_most_every_interval(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    now = [100.0]
    monkeypatch.setattr("beff.core.progress.time.monotonic", lambda: now[0])
    monkeypatch.setattr(terminal, "is_terminal", lambda fd: False)
    with progress.make_progress(False, 4) as bar:  # --no-progress: nothing
        bar("a")
    assert capsys.readouterr().err == ""
    with progress.make_progress(None, 4) as bar:  # by default, a log gets lines
        now[0] += 2.0
        bar("PingPong np=2 0 B")  # the first step is always told
        now[0] += progress.LINE_INTERVAL_S / 2
        bar("PingPong np=2 1 B")
        now[0] += progress.LINE_INTERVAL_S
        bar("PingPong np=2 2 B")
    lines = capsys.readouterr().err.splitlines()
    # no estimate from the first step (it holds the start-up); then the pace of the others
    assert lines == [
        "progress: 1/4 PingPong np=2 0 B, 0:00:02 elapsed",
        "progress: 3/4 PingPong np=2 2 B, 0:00:17 elapsed, about 0:00:08 left"]
    with progress.make_progress(True, 400) as bar:
        now[0] += 0.2
        bar("PingPong np=2 0 B")  # too early to estimate the rest
    assert capsys.readouterr().err == "progress: 1/400 PingPong np=2 0 B, 0:00:00 elapsed\n"


def test_a_relay_of_whole_lines_gets_lines_even_on_a_terminal(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(terminal, "is_terminal", lambda fd: True)
    monkeypatch.setattr(terminal, "line_relay", lambda: True)
    with progress.make_progress(None, 2) as bar:
        bar("b_eff rep 1/2")
    err = capsys.readouterr().err
    assert err.startswith("progress: 1/2 b_eff rep 1/2, ") and "\x1b" not in err


def test_the_estimate_leaves_out_the_start_up() -> None:
    """A first step of 60 s (compiling the loops, the first calibration), then steps of
    2 s: the time left is 2 s per step to go, not the first step's pace."""
    now = [0.0]
    est = progress.Estimate(10, lambda: now[0])
    now[0] = 60.0
    est.step()
    assert est.left() is None  # one step says nothing of the pace
    for _ in range(3):
        now[0] += 2.0
        est.step()
    assert est.left() == 2.0 * 6
