"""The ``beff`` command line (typer). Never imports mpi4py.MPI at module level.

``beff imb SUITE ...`` takes IMB's single-dash flags verbatim, so it bypasses typer's option
parsing; everything else is a regular typer command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from beff import __version__
from beff.cli import netmap
from beff.cli import options as O
from beff.core import terminal
from beff.core.errors import UsageError
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


def _metavar(suite: str) -> str:
    from beff.core import suite as suites

    return f"<{'|'.join(suites.get(suite).formats)}>"


def _formats(suite: str) -> str:
    """A command's --format help: the formats its suite declares."""
    from beff.core import suite as suites

    formats = suites.get(suite).formats
    return f"output: {' | '.join(formats)} (default {formats[0]})"


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
    from beff.bench.registry import load_suite
    from beff.core import suite as suites

    console = terminal.console()
    for s in [suites.get(suite)] if suite else suites.suites():
        if not s.benchmarks:
            own = "".join(f"\n  {', '.join(o.flags) or o.key}: {o.help} (default {o.default})"
                          for o in s.options)
            verb = "read with" if s.command == "beff import" else "run with"  # IMB-MT
            console.print(f"[bold]{s.name}[/bold]: {s.title}; {verb} `{s.command}`{own}",
                          highlight=False)
            continue
        own = "; ".join(f"{', '.join(o.flags) or o.key} ({o.help}, default {o.default})"
                        for o in s.options)
        t = Table(title=f"{s.name}: {s.title}", show_edge=False,
                  caption=f"its own options: {own}" if own else None)
        t.add_column("benchmark")
        t.add_column("runs")
        t.add_column("kind")
        for spec in load_suite(s.name).values():
            t.add_row(spec.name, "default" if spec.default else "opt-in", spec.kind.value)
        console.print(t)


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


@app.command()
def show(
    path: Annotated[Path, typer.Argument(help="A beff result file (.h5).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="Output: the formats of the "
                                     "file's suite: table, json, csv, and imb (IMB suites) or "
                                     "sum (b_eff, b_eff_io: the original's .sum).")] = "table",
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


@app.command()
def compare(
    first: Annotated[Path, typer.Argument(help="Baseline result file (A).")],
    second: Annotated[Path, typer.Argument(help="Result file to compare (B).")],
    alpha: Annotated[float, typer.Option(
        "--alpha", min=1e-9, max=0.5, help="Level of the tests: a size is called faster or "
        "slower where its Holm-corrected p-value is at most this.")] = 0.05,
    fmt: Annotated[str, typer.Option("--format", "-f", help="Output: table or json.")
                   ] = "table",
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
    c = cmp.Comparison.of(a, b, first.name, second.name, alpha)
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


@app.command()
def run(
    memory_per_proc: Annotated[
        str | None,
        typer.Option("--memory-per-proc", help="Memory per process (e.g. 512MiB, 2G); "
                     "Lmax = memory/128. Default: the node's physical memory / ranks on it."),
    ] = None,
    quick: Annotated[bool | None, typer.Option(
        "--quick", help="b_eff's SHORT mode: 2 repetitions, 0.05 s per loop, 6 random "
        "patterns.", show_default=False)] = None,
    time_per_loop: Annotated[
        float | None, typer.Option("--time-per-loop", help="Seconds per (length, method) summed "
                                   "over all patterns (default 0.5; 0.05 with --quick).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the random patterns (default: "
                                                  "the time in seconds, as b_eff 3.6).")] = None,
    methods: Annotated[
        str | None, typer.Option(help="Comma-separated: sendrecv, alltoallv, nonblocking "
                                 "(b_eff 3.6, the default) and the opt-in irecv-send, "
                                 "isend-recv.", show_default=False)
    ] = None,
    extra_methods_in_beff: Annotated[
        bool | None, typer.Option("--extra-methods-in-beff", help="Let the opt-in methods enter "
                                  "the b_eff figure (they never do otherwise).",
                                  show_default=False)
    ] = None,
    hugepages: Annotated[bool | None, O.option("hugepages")] = None,
    output: Annotated[str | None, O.option("output")] = None,
    fmt: Annotated[str | None, O.option("format", _formats("beff"), _metavar("beff"))] = None,
    config_file: Annotated[str | None, O.option("config_file")] = None,
    report: Annotated[str | None, O.option("report")] = None,
    progress: Annotated[bool | None, O.option("progress")] = None,
    thread_level: Annotated[str | None, O.option("thread_level")] = None,
    backend: Annotated[str | None, O.option("backend")] = None,
    force: Annotated[bool | None, O.option("force")] = None,
    timeout: Annotated[float | None, O.option("timeout")] = None,
    stall_timeout: Annotated[float | None, O.option("stall_timeout")] = None,
) -> None:
    """Under MPI: b_eff, Rabenseifner's effective bandwidth (`mpiexec -n P beff run`).

    Only the options given here override the config file: defaults, then TOML, then flags.
    """
    from beff.core import config

    given = {
        "quick": quick, "extra_methods_in_beff": extra_methods_in_beff,
        "format": fmt, "hugepages": hugepages,
        "backend": backend, "thread_level": thread_level,
        "seed": seed, "output": output, "config_file": config_file, "progress": progress,
        "report": report,
        "time_per_loop": time_per_loop, "timeout": timeout, "stall_timeout": stall_timeout,
        "force": force,
        "methods": None if methods is None else [m.strip() for m in methods.split(",")
                                                 if m.strip()],
    }
    overrides: dict[str, object] = {k: v for k, v in given.items() if v is not None}
    overrides.update(argv=sys.argv[1:])
    if memory_per_proc is not None:
        overrides["memory_per_proc"] = config.parse_size(memory_per_proc, "--memory-per-proc")
    O.run_checked("beff", overrides)


@app.command("io")
def io_cmd(
    directory: Annotated[str | None, typer.Option(
        "--dir", help="Directory of the scratch files (default: the current directory); "
        "every run uses names of its own and removes them.")] = None,
    memory_per_proc: Annotated[str | None, typer.Option(
        "--memory-per-proc", help="Memory per process (e.g. 512MiB, 2G): Lmax = memory/128, "
        "2 MiB to 1 GiB. Default: the node's physical memory / ranks on it (--quick: 256MiB)."
    )] = None,
    total_memory: Annotated[str | None, typer.Option(
        "--total-memory", help="Memory of the whole system, for 'data moved = x % of total "
        "memory' (default: the nodes' physical memory).")] = None,
    scheduled_time: Annotated[float | None, typer.Option(
        "-T", "--time", help="Scheduled time in seconds over all partitions (default 600; "
        "--quick: 2 per partition). Comparable results need T / partitions >= 1800.",
        show_default=False)] = None,
    partitions: Annotated[str | None, typer.Option(
        "-N", "--partitions", help="Partition sizes, e.g. 1,2,4 (default as b_eff_io 2.1: "
        "{1}, {1,2}, or three sizes up to the job's processes).", show_default=False)] = None,
    quick: Annotated[bool | None, typer.Option(
        "--quick", help="A first look: 2 s per partition and Lmax 2 MiB; labelled QUICK "
        "everywhere.", show_default=False)] = None,
    rewrite: Annotated[bool | None, typer.Option(
        "--rewrite", help="Rewrite all five pattern types (default: type 0 only).",
        show_default=False)] = None,
    noshared: Annotated[bool | None, typer.Option(
        "--noshared", help="Type 1 with individual file pointers instead of the shared one "
        "(the result is NOT VALID).", show_default=False)] = None,
    nounique: Annotated[bool | None, typer.Option(
        "--nounique", help="Open files without MPI_MODE_UNIQUE_OPEN.",
        show_default=False)] = None,
    keep_files: Annotated[bool | None, typer.Option(
        "--keep-files", help="Leave the scratch files.", show_default=False)] = None,
    hint: Annotated[list[str] | None, typer.Option(
        "--hint", help="MPI-IO hint key=value for MPI_File_open (repeatable).",
        show_default=False)] = None,
    hints_file: Annotated[str | None, typer.Option(
        "--hints", help="File of hints (key=value or 'key value' per line).")] = None,
    check: Annotated[bool | None, O.option(
        "check", "verify every double read back (always: the stamps of each chunk)")] = None,
    output: Annotated[str | None, O.option("output")] = None,
    fmt: Annotated[str | None, O.option("format", _formats("beffio"),
                                        _metavar("beffio"))] = None,
    config_file: Annotated[str | None, O.option("config_file")] = None,
    report: Annotated[str | None, O.option("report")] = None,
    progress: Annotated[bool | None, O.option("progress")] = None,
    backend: Annotated[str | None, O.option("backend")] = None,
    force: Annotated[bool | None, O.option("force")] = None,
    timeout: Annotated[float | None, O.option("timeout")] = None,
    stall_timeout: Annotated[float | None, O.option("stall_timeout")] = None,
) -> None:
    """Under MPI: b_eff_io, the effective I/O bandwidth (`mpiexec -n P beff io --quick`).

    Only the options given here override the config file: defaults, then TOML, then flags.
    """
    from beff.core import config

    given: dict[str, object | None] = {
        "io_dir": directory, "scheduled_time": scheduled_time, "quick": quick,
        "rewrite": rewrite, "noshared": noshared, "nounique": nounique,
        "keep_files": keep_files, "hints": hint or None, "hints_file": hints_file,
        "check": check, "output": output, "format": fmt,
        "config_file": config_file, "progress": progress, "report": report,
        "backend": backend, "force": force, "timeout": timeout,
        "stall_timeout": stall_timeout,
    }
    overrides: dict[str, object] = {k: v for k, v in given.items() if v is not None}
    overrides.update(argv=sys.argv[1:])
    for key, text in (("memory_per_proc", memory_per_proc), ("total_memory", total_memory)):
        if text is not None:
            overrides[key] = config.parse_size(text, "--" + key.replace("_", "-"))
    if partitions is not None:
        overrides["partitions"] = config.parse_int_list(partitions, "-N")
    flags = {"scheduled_time": "-T", "io_dir": "--dir", "partitions": "-N",
             "hints": "--hint", "hints_file": "--hints"}
    O.run_checked("beffio", overrides, flags)


app.command("map")(netmap.map_cmd)


@app.command()
def info(
    thread_level: Annotated[str, O.option("thread_level")] = "single",
) -> None:
    """Under MPI: library, versions, timer, and where every rank runs."""
    from beff.cli.info import run_info
    from beff.core import config, runtime

    config.check_value("thread_level", thread_level, config.flag_of("thread_level"))
    runtime.run_job(thread_level, lambda MPI: None, run_info)


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
