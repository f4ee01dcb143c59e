"""The ``beff`` command line: the typer app (``beff.cli.app``), ``beff imb`` (``beff.cli.imb``,
IMB's flags, without typer) and ``beff info``."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """The ``beff`` command. Every usage error, typer's own parse errors included, ends as
    one ``beff: error:`` line printed once (by rank 0 under mpiexec) and exit code 2; a
    Ctrl-C before the job handles it, or in a command without MPI, as one line and 130."""
    from beff.core import early

    one_blas_thread()
    try:
        early.defer()  # under a launcher, until MPI_Init has returned (beff.core.early)
        _main(argv)
    except KeyboardInterrupt:
        interrupted()
    if early.pending:  # a command that started no MPI: it acts now
        interrupted()


def one_blas_thread() -> None:
    """No BLAS thread pool in a beff process, unless the user asks for one: numpy's OpenBLAS
    starts a thread per core when it loads, in every rank, and beff does no linear algebra
    worth them. At 64 ranks on a 64-core node that is 4,032 threads; on a 2-core machine the
    pool took 0.08 CPU-s of each ``import numpy`` (0.24 against 0.16 s)."""
    import os

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def interrupted() -> None:
    """Ctrl-C: one line (rank 0's), exit 130 (:func:`beff.core.runtime.interrupted_exit`;
    while the modules still load, without them)."""
    runtime = sys.modules.get("beff.core.runtime")
    if runtime is not None and hasattr(runtime, "interrupted_exit"):
        runtime.interrupted_exit()
    import os

    from beff.core import early

    if early.env_rank() in (None, 0):
        sys.stderr.write("beff: interrupted (SIGINT)\n")
    os._exit(130)  # not sys.exit: a second Ctrl-C would interrupt the tear-down


def _main(argv: list[str] | None) -> None:
    from beff.core import runtime
    from beff.core.errors import UsageError

    for stream in (sys.stdout, sys.stderr):  # PYTHONIOENCODING=ascii: "µs" must not crash
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-list", "-help"):  # IMB users' habits
        args = ["list"] if args[0] == "-list" else ["--help"]
    if args == ["--version"]:  # answered before typer and the suites' declarations load
        from beff import __version__

        sys.stdout.write(f"beff {__version__}\n")
        return
    try:
        if args and args[0] == "imb":
            from beff.cli.imb import imb_main

            imb_main(args[1:])
            return
        from beff.cli.launch import launch

        if launch(args):
            return
        from beff.cli.app import run_app

        result = run_app(args)
    except UsageError as exc:
        runtime.usage_exit(str(exc))
    except Exception as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click's Abort for a Ctrl-C
            runtime.interrupted_exit()
        format_message = getattr(exc, "format_message", None)
        if getattr(exc, "exit_code", None) != 2 or format_message is None:
            raise
        message = " ".join(str(format_message()).split())
        where = args[0] if args and "No such command" not in message else ""
        runtime.usage_exit(f"{message} (see `beff {where + ' ' if where else ''}--help`)")
    if isinstance(result, int) and result:
        sys.exit(result)


__all__ = ["main"]
