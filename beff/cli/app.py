"""The ``beff`` command line (typer). Never imports mpi4py.MPI at module level.

``beff imb SUITE ...`` takes IMB's single-dash flags verbatim, so it bypasses typer's option
parsing; everything else is a regular typer command.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from beff import __version__
from beff.cli import options as O
from beff.cli.launch import RESERVED
from beff.core import terminal
from beff.core.errors import UsageError
from beff.core.options import SHARED_BY_KEY, Option
from beff.core.suite import Suite
from beff.render.tables import Table

if TYPE_CHECKING:
    from beff.results.model import RunRecord

app = typer.Typer(
    name="beff",
    help="MPI bandwidth analyzer: b_eff, the Intel MPI Benchmarks set and parallel I/O.\n\n"
    "Run measurements under MPI, e.g. `mpiexec -n 4 beff imb mpi1 PingPong`; "
    "`list`, `describe` and `show` work without mpirun.",
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"beff {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """beff: MPI bandwidth analyzer."""


@app.command("list")
def list_cmd(
    suite: Annotated[str | None, typer.Argument(help="Only this suite.")] = None,
) -> None:
    """List the suites and their benchmarks; opt-in ones run only when named."""
    from beff.bench import options as imb_options
    from beff.bench.registry import load_suite
    from beff.core import suite as suites

    console = terminal.console()
    for s in [suites.get(suite)] if suite else suites.suites():
        if not s.benchmarks:
            own = "".join(f"\n  {', '.join(_spelled(s, o))}: {o.help_line()}"
                          for o in s.options if _spelled(s, o))
            verb = "read with" if s.command == "beff import" else "run with"  # IMB-MT
            console.print(f"[bold]{s.name}[/bold]: {s.title}; {verb} `{s.command}`{own}",
                          highlight=False)
            continue
        imb = (*imb_options.NAMES, *imb_options.IMB)  # IMB-MPI1's: `beff imb SUITE -help`
        own = "; ".join(f"{', '.join(_spelled(s, o))} ({o.help_line()})" for o in s.options
                        if o not in imb and _spelled(s, o))
        t = Table(title=f"{s.name}: {s.title}", show_edge=False,
                  caption=f"its own options: {own}" if own else None)
        t.add_column("benchmark")
        t.add_column("runs")
        t.add_column("kind")
        for spec in load_suite(s.name).values():
            t.add_row(spec.name, "default" if spec.default else "opt-in", spec.kind.value)
        console.print(t)


def _spelled(suite: Suite, o: Option) -> tuple[str, ...]:
    """How ``o`` is typed in ``suite``'s command (none: set in TOML only, or not at all)."""
    if o.toml_only or o.fixed or o.positional:
        return ()
    return o.imb_flags() if suite.command.startswith("beff imb ") else o.long_flags()


@app.command()
def describe(
    name: Annotated[str, typer.Argument(help="Benchmark name (case-insensitive).")],
    suite: Annotated[str, typer.Option(help="Suite of the benchmark.")] = "mpi1",
) -> None:
    """Say exactly what a benchmark times and which bytes it counts."""
    from beff.bench.registry import load_suite

    spec = load_suite(suite).get(name.lower())
    if spec is None:
        raise UsageError(f"unknown benchmark {name!r} in suite {suite}")
    typer.echo(f"{spec.name} ({spec.suite}, {spec.kind.value}, "
               f"{'default' if spec.default else 'opt-in'})\n")
    typer.echo(spec.description)
    typer.echo(f"\ntime scale: {spec.time_scale}  bandwidth scale: {spec.bw_scale}  "
               f"(MB = 10^6 B)")
    if spec.bytes_counted:
        typer.echo(f"bytes counted: {spec.bytes_counted}")


def _load(path: Path) -> RunRecord:
    from beff.api import load
    from beff.core.config import describe_existing
    from beff.results.archive import DamagedFile

    if not path.exists():
        raise UsageError(f"cannot read {path}: no such file")
    if path.is_dir():
        raise UsageError(f"cannot read {path}: it is a directory; give a result file (.h5)")
    try:
        return load(path)
    except DamagedFile as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # h5py's text spans lines: one line, the reason first
        reason = exc.strerror or " ".join(str(exc).split())
        if exc.strerror is None and path.is_file():
            kind = describe_existing(path)
            reason = (f"it is damaged or truncated (HDF5 said: {reason})"
                      if kind.startswith("an HDF5") else f"it is {kind} (HDF5 said: {reason})")
        raise UsageError(f"cannot read {path}: {reason}") from None
    except ValueError as exc:
        raise UsageError(f"cannot read {path}: {' '.join(str(exc).split())}") from None


STRICT = SHARED_BY_KEY["strict"]


@app.command()
def show(
    path: Annotated[Path, typer.Argument(help="A beff result file (.h5).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="Output: the formats of the "
                                     "file's suite: table, json, csv, lines (one figure a "
                                     "line: NAME VALUE UNIT), and imb (IMB suites) or sum "
                                     "(b_eff, b_eff_io: the original's .sum).")] = "table",
    strict: Annotated[bool, typer.Option(
        *STRICT.long_flags(), help=f"{STRICT.help[0].upper()}{STRICT.help[1:]}.")
    ] = STRICT.default,
) -> None:
    """Render a result file without MPI."""
    from beff.core import suite as suites
    from beff.render import view

    record = _load(path)
    suites.get(record.suite).check_format(fmt)
    if record.attrs.get("status") == "running":
        typer.echo(f"beff: note: {path} is still being written, or its run was killed: "
                   f"showing the {len(record.results)} results written so far", err=True)
    elif "status_note" in record.attrs:
        typer.echo(f"beff: note: {path}: {record.attrs['status_note']}; showing the "
                   f"{len(record.results)} results written before", err=True)
    text = view.render(record, fmt)
    if text is None:
        view.table(record, terminal.console())
    else:
        sys.stdout.write(text)
    if strict:
        from beff.core.errors import STRICT as STRICT_EXIT
        from beff.results import strict as judge

        found = judge.reasons(record)
        if found:
            sys.stdout.flush()
            typer.echo(judge.line(found), err=True)
            raise typer.Exit(STRICT_EXIT)


@app.command()
def compare(
    first: Annotated[Path, typer.Argument(help="Baseline result file (A).")],
    second: Annotated[Path, typer.Argument(help="Result file to compare (B).")],
    alpha: Annotated[float, typer.Option(
        "--alpha", min=1e-9, max=0.5, help="Level of the tests: a size is called faster or "
        "slower where its Holm-corrected p-value is at most this.")] = 0.05,
    fmt: Annotated[str, typer.Option("--format", "-f", help="Output: table or json.")
                   ] = "table",
    across_policies: Annotated[bool, typer.Option(
        "--across-policies", help="Test the sizes of collectives whose start policies differ "
        "(--sync barrier vs window) too; without it they are shown untested.")] = False,
) -> None:
    """Compare two result files without MPI: t_avg(B) / t_avg(A) per size, each tested
    (Mann-Whitney U on the batches, Holm-corrected), or b_eff's figures (ratio only)."""
    if fmt not in ("table", "json"):
        raise UsageError(f"--format: compare writes table|json, not {fmt!r}")
    import json

    from beff.render import compare as cmp
    from beff.results.model import OK

    a, b = _load(first), _load(second)
    kinds = cmp.kind_of_run(a), cmp.kind_of_run(b)
    if kinds[0] != kinds[1]:
        raise UsageError(f"cannot compare {first.name} ({kinds[0]}) with {second.name} "
                         f"({kinds[1]})")
    c = cmp.Comparison.of(a, b, first.name, second.name, alpha, across_policies)
    if not c.figures and not c.rows:
        for path, record in ((first, a), (second, b)):
            if record.measurements and not any(
                    OK in m.status for m in record.measurements):
                states = sorted({s for m in record.measurements for s in m.status})
                raise UsageError(f"nothing was measured in {path} (every size ended "
                                 f"{' or '.join(states)}): there is nothing to compare")
        raise UsageError("the files have no benchmark, process count and size in common")
    if fmt == "json":
        from beff.render.common import _json_default

        sys.stdout.write(json.dumps(cmp.json_doc(c), indent=2, default=_json_default) + "\n")
    else:
        cmp.print_report(c, terminal.console())


@app.command("import")
def import_cmd(
    source: Annotated[Path, typer.Argument(
        help="An output of the original programs: IMB's text (any component: MPI1, NBC, "
        "MPI4, EXT, RMA, IO, P2P, MT), b_eff 3.6's .sum or .prot (the other one is read too "
        "when it lies beside it), or b_eff_io's .sum. The format is told by the content.")],
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="The result file to write (default: SOURCE with the suffix "
        ".h5, beside it). One source makes one result file.", show_default=False)] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace an existing result file.")] = False,
) -> None:
    """Import an output of the original C programs into a beff result file (no MPI needed).

    The file says that it was imported, from which file and format, and that it has no raw
    samples: its figures are those the original printed. `beff show` renders it in every
    format, and `beff compare` compares it with beff's runs or other imported ones.
    """
    from beff.core.config import check_output_path
    from beff.results import imported

    out = output if output is not None else source.with_suffix(".h5")
    records = imported.read_all(source)
    targets = imported.outputs(out, len(records))
    for target in targets:
        if target.exists() and source.exists() and target.samefile(source):
            raise UsageError(f"-o {target}: that is the file to import")
        check_output_path(str(target), force)
    fmt = records[0].attrs["imported"]["format"]
    for record, target in zip(records, targets, strict=True):
        imported.write(record, target, force)
        count = len(record.results)
        run = f"run {record.attrs['imported']['run']}: " if len(records) > 1 else ""
        state = "" if record.attrs.get("status") == "complete" else \
            f" ({record.attrs.get('status')}: {'; '.join(record.attrs.get('warnings', []))})"
        typer.echo(f"{source} ({fmt}): {run}{count} result{'s' if count != 1 else ''} "
                   f"written to {target}{state}", err=True)


@app.command("report")
def report_cmd(
    paths: Annotated[list[Path], typer.Argument(
        help="beff result files (.h5); with several, their figures are overlaid and each is "
        "compared with the first.", show_default=False)],
    output: Annotated[str | None, typer.Option(
        "-o", "--output", help="The page to write (default: the first file's name with "
        ".html, in the current directory).", show_default=False)] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace an existing page (never one of the result files).")] = False,
) -> None:
    """Write one self-contained HTML page of result files, with every figure (no MPI)."""
    from beff.render import plot
    from beff.render import report as page

    plot.require("beff report")
    target = plot.check_output(paths[0].with_suffix(".html").name if output is None else output,
                               "-o", inputs=paths, force=force)
    records = [_load(p) for p in paths]
    page.write(records, paths, target)
    typer.echo(f"report written to {target}", err=True)


@app.command("plot")
def plot_cmd(
    paths: Annotated[list[Path], typer.Argument(
        help="beff result files (.h5); with several, overlaid with a ratio panel.",
        show_default=False)],
    output: Annotated[str, typer.Option(
        "-o", "--output", help="The image: .png, .svg or .pdf.", show_default=False)],
    benchmark: Annotated[str | None, typer.Option(
        "--benchmark", "-b", help="What to draw: a benchmark (PingPong), b_eff, b_eff_io, or "
        "one figure (PingPong/bandwidth, b_eff/patterns). Default: the file's first.",
        show_default=False)] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace an existing image (never one of the result files).")] = False,
) -> None:
    """Draw one figure of result files for a paper or slides (no MPI)."""
    from beff.render import charts, plot
    from beff.render import report as page

    plot.require("beff plot")
    target = plot.check_output(output, "-o", plot.FORMATS, inputs=paths, force=force)
    records = [_load(p) for p in paths]
    figures = page.figures_of(records, page.run_labels(paths))
    subjects = charts.subjects(figures)
    if not figures:
        raise UsageError(f"{paths[0]}: no measured result to plot")
    chosen = charts.select(figures, benchmark or subjects[0])
    if not chosen:
        raise UsageError(f"{paths[0]} has no benchmark {benchmark!r} (it has: "
                         f"{', '.join(subjects)})")
    if benchmark is None and len(subjects) > 1:
        typer.echo(f"beff: note: drew {subjects[0]}; the others: {', '.join(subjects[1:])} "
                   "(--benchmark NAME)", err=True)
    plot.save(chosen, target, plot.significance(records) if len(records) > 1 else {})
    typer.echo(f"figure written to {target}", err=True)


def _run_suite(suite: Suite, overrides: dict[str, object]) -> None:
    from beff import runner  # h5py, numpy: after the flags

    runner.run(suite.name, overrides)


def _suite_commands() -> None:
    """A command for every suite run as ``beff NAME`` (b_eff's ``run``, b_eff_io's ``io``,
    ``map``, a plug-in's), generated from its options' declarations."""
    from beff.core import suite as suites

    for s in suites.suites():
        words = s.command.split()
        if len(words) != 2 or words[0] != "beff" or words[1] in RESERVED:
            continue
        title = re.sub(r" \(beff \w+\)$", "", s.title)
        app.command(words[1], help=f"Under MPI: {title} (`mpiexec -n P {s.command}`).\n\n"
                    "Only the options given here override the config file: defaults, then "
                    "TOML, then flags.")(O.typer_command(s, _run_suite))


_suite_commands()


@app.command()
def info(
    thread_level: Annotated[str, typer.Option(
        "--thread-level", help="MPI thread level (default single).", show_default=False,
        metavar="<single|funneled|serialized|multiple>")] = "single",
) -> None:
    """Under MPI: library, versions, timer, and where every rank runs."""
    from beff.cli.info import run_info
    from beff.core import runtime
    from beff.core.options import SHARED_BY_KEY

    SHARED_BY_KEY["thread_level"].check(thread_level, "--thread-level")
    runtime.run_job(thread_level, lambda MPI: None, run_info)


@app.command()
def prepare(
    names: Annotated[list[str] | None, typer.Argument(
        help="Suites to prepare (default: all), as `beff list` names them.",
        show_default=False, metavar="[SUITE]...")] = None,
) -> None:
    """Compile every timed loop the suites need for this MPI library and keep them in the
    loop cache (BEFF_CACHE_DIR, default ~/.cache/beff): once per installation, or in a job
    script before srun, so that runs load the loops instead of compiling them. One process
    is enough (no launcher needed); under mpiexec each loop is still compiled once."""
    from beff.cli.prepare import check, run_prepare
    from beff.core import runtime

    chosen = check(list(names or []))
    runtime.run_job("single", lambda MPI: chosen, run_prepare)


@app.command(
    "imb",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def imb_cmd(ctx: typer.Context) -> None:
    """Run an IMB suite with IMB's own flags: `mpiexec -n 4 beff imb mpi1 -msglog 3:7 PingPong`."""
    from beff.cli.imb import imb_main

    imb_main(list(ctx.args))


def run_app(args: list[str]) -> object:
    """Run the typer app on ``args`` (every command but ``beff imb``, see beff.cli.main)."""
    return app(args=args, prog_name="beff", standalone_mode=False)
