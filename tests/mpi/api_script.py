"""A user's MPI program that calls the Python API (``mpiexec -n 2 python -m
tests.mpi.api_script DIR [uncaught]``), for tests/mpi/test_api.py: every case in one launch
(and, with ``uncaught``, a program that lets beff.run's error end it).

Each rank writes one JSON line per step to DIR/steps.RANK.jsonl; stderr must stay empty
until the last step, which asks for progress (rank 0 marks its start on stderr). The
program catches what beff.run raises and goes on to a final barrier, as a user's program
would.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import beff
from beff.core import backstop
from beff.core.errors import BeffError, StrictFailure, UsageError

QUICK: dict[str, Any] = {"benchmarks": ["PingPong"], "msglog_max": 3, "msgspersample": 20,
                         "batches": 2}


def armed() -> dict[str, Any]:
    """What of beff could still end this program: backstops and watchdog timers."""
    timers = [t.name for t in threading.enumerate()
              if isinstance(t, threading.Timer) and t.is_alive()]
    return {"backstops": sorted(backstop.armed()), "timers": timers}


def main(directory: str) -> None:
    from mpi4py import MPI  # the user's own import, before beff starts anything

    rank = MPI.COMM_WORLD.Get_rank()
    out = str(Path(directory) / "pp.h5")
    hook = sys.excepthook

    def say(step: str, **data: Any) -> None:  # a file per rank: the launcher mixes lines
        with open(Path(directory) / f"steps.{rank}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"rank": rank, "step": step, **data}) + "\n")

    def raised(call: Any) -> dict[str, Any]:
        try:
            call()
        except UsageError as exc:
            return {"type": "UsageError", "message": str(exc)}
        except StrictFailure as exc:
            return {"type": "StrictFailure", "message": str(exc),
                    "problems": [str(p) for p in exc.results.problems()]}
        except BeffError as exc:
            return {"type": "BeffError", "message": str(exc)}
        return {"type": None, "message": ""}

    record = beff.run("mpi1", time=5.0, output=out, **QUICK)
    say("first", kind=type(record).__name__,
        status=[m.status for m in record.measurements],
        problems=[str(p) for p in record.problems()], warnings=record.warnings,
        run_status=record.attrs.get("status"), hook_kept=sys.excepthook is hook, **armed())

    say("again", **raised(lambda: beff.run("mpi1", time=5.0, output=out, **QUICK)))
    say("bad value", **raised(lambda: beff.run("mpi1", msglog_max=99, output=out + "2")))
    say("unknown", **raised(lambda: beff.run("mpi1", msglog_mx=3, output=out + "2")))
    say("bad pair", **raised(lambda: beff.run("mpi1", msglog_min=5, msglog_max=3,
                                               output=out + "2")))
    say("bad map", **raised(lambda: beff.run("mpi1", map=[4, 4], output=out + "2", **QUICK)))
    say("bad format", **raised(lambda: beff.run("mpi1", format="sum", output=out + "2")))

    # A tiny time limit: IMB's time-out row at the first size; force=True replaces the file.
    record = beff.run("mpi1", time=1e-6, output=out, force=True, timeout=600, **QUICK)
    stored = beff.load(out)
    say("time-out", status=[m.status for m in record.measurements],
        problems=[[p.benchmark, p.nprocs, p.size, p.status, p.message]
                  for p in record.problems()],
        timed_out=len(record.timed_out), warnings=record.warnings,
        stored_warnings=stored.warnings, stored_problems=[str(p) for p in stored.problems()],
        **armed())

    # The same with strict=True: StrictFailure on every rank, the results at hand
    say("strict", **raised(lambda: beff.run("mpi1", time=1e-6, output=out, force=True,
                                            timeout=600, strict=True, **QUICK)),
        stored=beff.load(out).attrs.get("status"))

    MPI.COMM_WORLD.Barrier()
    say("ok")

    if rank == 0:
        sys.stderr.write("--- progress=True\n")
        sys.stderr.flush()
    MPI.COMM_WORLD.Barrier()
    beff.run("mpi1", time=5.0, output=out, force=True, progress=True, **QUICK)
    MPI.COMM_WORLD.Barrier()
    say("progress done")


def uncaught(directory: str) -> None:
    """A program that does not catch the UsageError of its second run: Python's own end on
    every rank (a traceback, exit code 1), not beff's MPI_Abort."""
    from mpi4py import MPI

    out = str(Path(directory) / "uncaught.h5")
    beff.run("mpi1", time=5.0, output=out, **QUICK)
    MPI.COMM_WORLD.Barrier()
    beff.run("mpi1", time=5.0, output=out, **QUICK)


if __name__ == "__main__":
    if sys.argv[2:] == ["uncaught"]:
        uncaught(sys.argv[1])
    else:
        main(sys.argv[1])
