"""Several ``beff`` runs in one launch, as mpi4py's own tests share one mpiexec:
``mpiexec -n N python -m tests.mpi.runs_script SPEC.json``, for :func:`tests.mpirun.runs`.

SPEC.json holds ``{"out": DIR, "runs": [{"name", "argv", "cwd"}, ...]}``. Each run takes the
command line's own path, ``python -m beff ARGV`` (:func:`beff.cli.main`, with sys.argv as
beff's ``__main__`` has it), up to the end of its job, where a job of its own would end its
process (:func:`beff.core.runtime.end_process`). Here the exit functions beff registered
during the run run instead (``beff imb io``'s removal of its files), every rank meets the
others in a barrier, and the next run starts on the MPI the first one initialized (every
run has the first run's thread level). An I/O run (``beff io``, ``beff imb io``) can only
be a job's last: its files' clean-up holds for the rest of the process. Each rank's stdout
and stderr go to DIR/NAME.RANK.out and .err, at the level of the file descriptors, its exit
code to DIR/NAME.RANK.code, the seconds the run took to .seconds and the modules the
process has imported by then (this run's and the earlier ones') to .modules. A run that fails ends
the program as it would end its job: the runs after it then have no files.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn


class _Ended(BaseException):
    """The job of one run is over (its code)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


_at_end: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []
_register = atexit.register


def _register_beffs(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
    """atexit.register, but what beff registers runs at the end of its run instead (the
    libraries' own, h5py's and mpi4py's, at the end of the process as ever)."""
    if getattr(func, "__module__", "").startswith("beff"):
        _at_end.append((func, args, kwargs))
        return func
    return _register(func, *args, **kwargs)


def _one(argv: list[str]) -> int:
    """``beff ARGV`` to the end of its job; its exit code."""
    import beff
    from beff.cli import main as beff_main

    sys.argv = [str(Path(beff.__file__).with_name("__main__.py")), *argv]
    try:
        beff_main(argv)
    except _Ended as exc:
        return exc.code
    except SystemExit as exc:  # refused on every rank alike: the job goes on to the next
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        while _at_end:  # what the end of its process would have run, last first
            func, args, kwargs = _at_end.pop()
            func(*args, **kwargs)
    return 0


def main(spec_path: str) -> None:
    from beff.core import mpi as _mpi
    from beff.core import runtime

    def ended(code: int) -> NoReturn:
        raise _Ended(code)

    runtime.end_process = ended  # type: ignore[assignment]
    atexit.register = _register_beffs  # type: ignore[assignment]
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    rank = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or "0"
    logs = Path(spec["out"])
    for run in spec["runs"]:
        name = run["name"]
        os.chdir(run["cwd"])
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        with open(logs / f"{name}.{rank}.out", "wb") as o, \
                open(logs / f"{name}.{rank}.err", "wb") as e:
            os.dup2(o.fileno(), 1)
            os.dup2(e.fileno(), 2)
            start = time.monotonic()
            try:
                code = _one(run["argv"])
            finally:
                took = time.monotonic() - start
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.close(saved[0])
                os.close(saved[1])
        (logs / f"{name}.{rank}.seconds").write_text(str(took))
        (logs / f"{name}.{rank}.code").write_text(str(code))
        # what this rank has imported so far: this run's and the earlier runs' (a union)
        (logs / f"{name}.{rank}.modules").write_text("\n".join(sorted(sys.modules)) + "\n")
        if _mpi.initialized():
            _mpi.mpi().COMM_WORLD.Barrier()


if __name__ == "__main__":
    main(sys.argv[1])
