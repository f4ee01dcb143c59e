"""Usage errors that rank 0 decides after MPI_Init, many in one launch, for
tests/mpi/test_bad_input.py: ``mpiexec -n N python -m tests.mpi.usage_script CASES.json``.

CASES.json holds ``{"out": DIR, "cases": [{"name", "argv", "cwd"}, ...]}``. Each case takes
the command line's own path, :func:`beff.cli.main`: MPI_Init (done here first, at the
thread level IMB-MT needs, so each case finds MPI initialized), rank 0's validation, its
broadcast, and the exit with code 2 on every rank, which each rank catches here to go on to
the next case, where the job's processes would have ended. Each rank writes ``{name:
{"code", "stdout", "stderr"}}`` to DIR/rank.R.json after every case: a case that is not
refused runs its job and ends the program, and the files then lack it and every case after.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any


def main(cases_path: str) -> None:
    from beff.cli import main as beff_main
    from beff.core import mpi as _mpi
    from beff.core import runtime

    runtime.OTHER_RANKS_EXIT_DELAY = 0.0  # the wait is the launcher's, which sees no exit
    _mpi.init("multiple")  # as IMB-MT asks for it; the other suites' cases take it as given
    spec = json.loads(Path(cases_path).read_text(encoding="utf-8"))
    rank = _mpi.mpi().COMM_WORLD.Get_rank()
    done: dict[str, Any] = {}
    for case in spec["cases"]:
        os.chdir(case["cwd"])
        out, err = io.StringIO(), io.StringIO()
        code: object = None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                beff_main(case["argv"])
            except SystemExit as exc:
                code = exc.code
        done[case["name"]] = {"code": code, "stdout": out.getvalue(),
                              "stderr": err.getvalue()}
        Path(spec["out"], f"rank.{rank}.json").write_text(json.dumps(done), encoding="utf-8")
    _mpi.guard(None, "")  # the start-up guard the last case armed
    _mpi.stop_watchdog()


if __name__ == "__main__":
    main(sys.argv[1])
