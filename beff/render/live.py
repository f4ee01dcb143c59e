"""Rank 0's side of a run (:class:`LiveRun`): the result file, written as results come, and
the live output in the run's format. Only rank 0 imports this module: h5py and rich load
there, not on the ranks that only measure."""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from beff.core import suite as suites
from beff.core import terminal
from beff.core.config import RunConfig, default_output
from beff.core.progress import Bar
from beff.render import common, lines
from beff.render.view import LINES, TEXT_FORMATS, View, csv_header, csv_rows, json_text
from beff.results.archive import ResultFile, load
from beff.results.model import Measurement, Result, RunRecord

Notes = Callable[[Result], list[str]]  # the Python API's warnings about one result


def resume_argv(argv: list[str]) -> list[str]:
    """The command line of a run, less what ``--resume`` replaces: the output file (-o,
    --output, and an earlier --resume) and --force."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-o", "--output", "--resume"):
            skip = True
        elif arg != "--force" and not arg.startswith(("--output=", "--resume=")):
            out.append(arg)
    return out


class LiveRun:
    """Rank 0's side of a run: the result file and the live output."""

    def __init__(self, suite: suites.Suite, cfg: RunConfig, streaming: bool,
                 attrs: dict[str, Any], ranks: list[dict[str, Any]], render: bool,
                 notes: Notes | None = None, resumable: bool = False) -> None:
        self.cfg = cfg
        self.fmt = cfg.format if render else ""  # "": store only, print nothing
        self.notes = notes
        self.streaming = streaming  # results are final as they come (else: at the end)
        self.view: View = suite.load("view")
        self.record = RunRecord(attrs=attrs, ranks=ranks)
        self.out = ResultFile(cfg.output or default_output())
        self.out.watch()  # first: a kill during the creation leaves no working copy
        self.kept: list[Result] = []  # --resume: the results the file holds already
        if cfg.resume is not None:
            earlier = load(self.out.path)
            self.out.resume(earlier, ranks, {
                "started": attrs.get("created"), "command_line": attrs.get("command_line"),
                "nprocs": attrs.get("nprocs"),
                "hosts": (attrs.get("placement") or {}).get("hosts", []),
                "batch": attrs.get("batch", {})})
            self.kept = [r for r in earlier.results if r.key]
            for result in self.kept:
                if isinstance(result, Measurement):
                    result.attrs.setdefault("launch", 1)  # as the file reads from now on
                self.record.put(result)
            self.record.attrs["launches"] = self.out.launches
            attrs["launches"] = self.out.launches
        else:
            self.out.create(attrs, ranks, exclusive=not cfg.force)
        self.out.guard()
        from beff.core import mpi as _mpi

        path = os.fspath(self.out.path)
        _mpi.resume_hint = f" in {path}"
        if resumable:  # how to go on, in the line that says the run ended early
            again = shlex.join(["beff", *resume_argv(cfg.argv), "--resume", path])
            _mpi.resume_hint += f" (to measure the rest, launch again: {again})"
        self.stdout = terminal.console()
        self.stderr = terminal.console(stderr=True)
        self.found: list[str] = []
        self.pending: dict[str, Result] = {}  # emitted, not rendered yet (by key)
        self.bar: Bar = Bar()

    def warn(self, new: list[str]) -> None:
        new = [w for w in new if w not in self.found]
        self.found.extend(new)
        if self.fmt:  # else they come back on the record only (the Python API)
            with self.bar.paused():
                common.print_warnings(self.stderr, new)

    def begin(self) -> None:
        fmt = self.fmt
        if fmt in TEXT_FORMATS:
            sys.stdout.write(self.view.text_header(self.record))
        elif fmt == "csv":
            sys.stdout.write(csv_header(self.view))
        if self.kept:
            if self.fmt:
                self.stderr.print(f"[dim]resuming {os.fspath(self.out.path)}: what "
                                  f"launch {len(self.out.launches) - 1} measured is kept "
                                  f"({len(self.kept)} result(s)), measuring the rest[/dim]")
            for result in self.kept:  # the whole run's output: the kept results first
                if self.streaming:
                    self.render(result)
                else:  # unless the run emits a grown one (b_eff's record) meanwhile
                    self.pending[result.key] = result

    def emit(self, result: Result) -> None:
        self.out.add(result)
        self.record.put(result)
        if self.streaming:
            self.render(result)
        else:
            self.pending[result.key] = result

    def render(self, result: Result) -> None:
        self.warn(self.view.result_warnings(result, self.record)
                  + (self.notes(result) if self.notes is not None else []))
        fmt = self.fmt
        with self.bar.paused():
            if fmt in TEXT_FORMATS:
                sys.stdout.write(self.view.text(result, self.record))
            elif fmt == "csv":
                sys.stdout.write(csv_rows(self.view, [result]))
            elif fmt == LINES:
                sys.stdout.write(lines.result_text(self.view, result, self.record))
            elif fmt == "table":
                self.view.table(result, self.record, self.stdout)
            elif fmt == "json":
                pass  # the whole document at the end

    def end(self, status: str, **more: Any) -> None:
        if self.fmt == "table" and self.view.footer_first:
            common.footer(self.record.attrs, self.stdout)  # the warnings went to stderr
        for result in self.pending.values():
            self.render(result)
        self.out.finish(status, warnings=self.found, **more)
        self.record.attrs.update(status=status, warnings=self.found)  # as the file has them
        fmt = self.fmt
        if fmt in TEXT_FORMATS:
            sys.stdout.write(self.view.text_footer(self.record))
        elif fmt == "json":
            sys.stdout.write(json_text(load(self.out.path)))
        elif fmt == LINES:
            sys.stdout.write(lines.footer(self.record))
        elif fmt == "table" and not self.view.footer_first:
            common.footer(self.record.attrs, self.stdout)  # the warnings went to stderr
        sys.stdout.flush()
        if self.fmt:
            self.stderr.print(f"[dim]results written to {os.fspath(self.out.path)}[/dim]")
        self.report()

    def report(self) -> None:
        """``--report``: the page of the finished file (a failed report is a warning: the
        results are safe in their file); without it, the command that would make it."""
        path = os.fspath(self.out.path)
        if not self.cfg.report:
            if self.fmt:
                page = shlex.quote(Path(path).with_suffix(".html").name)
                command = f"beff report {shlex.quote(path)} -o {page}"
                if importlib.util.find_spec("matplotlib") is None:  # the hint must work
                    self.stderr.print(f"[dim]for its report page, add matplotlib (pip install "
                                      f"matplotlib), then: {command}[/dim]", soft_wrap=True)
                else:
                    self.stderr.print(f"[dim]its report page: {command}[/dim]",
                                      soft_wrap=True)
            return
        from beff.render import report

        try:
            written = report.write([load(self.out.path)], [path], self.cfg.report)
        except Exception as exc:  # noqa: BLE001 - any drawing error: say it, keep the run's
            if not self.fmt:  # the Python API: on the record (the file is finished)
                self.found.append(f"the report page could not be written: {exc}")
                return
            self.stderr.print(f"beff: warning: the report page could not be written: {exc}",
                              markup=False, highlight=False, soft_wrap=True)
            return
        if self.fmt:
            self.stderr.print(f"[dim]report written to {os.fspath(written)}[/dim]")
