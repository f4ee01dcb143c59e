"""``--resume FILE``: whether a run may continue the result file of an earlier one, and
what that file already holds.

A resumed run measures what the file lacks, one result (a benchmark at one process count,
every size) at a time, and appends it to the same file (:meth:`beff.results.archive.
ResultFile.resume`). That is only sound when both runs measure the same thing in the same
way: the same suite, configuration, rank count and MPI library. Anything else is refused
with one line (exit 2), unless ``--force`` says the user means it (the suite never: one file
holds one suite's results).
"""

from __future__ import annotations

from typing import Any

from beff.core.errors import UsageError
from beff.results.model import RunRecord

# Settings that change how a run is shown, stored or guarded, not what it measures.
VOLATILE = frozenset({"output", "force", "resume", "format", "progress", "report", "strict",
                      "timeout", "stall_timeout", "config_file", "argv", "sources"})


def measured_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The settings of a stored configuration that decide what is measured: everything but
    :data:`VOLATILE`, the suite's own options flattened as ``options.KEY``."""
    out = {k: v for k, v in config.items() if k not in VOLATILE and k != "options"}
    out.update({f"options.{k}": v for k, v in (config.get("options") or {}).items()
                if k not in VOLATILE})
    return out


def differences(stored: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """The measured settings in which two configurations differ, as ``key: was -> now``."""
    a, b = measured_settings(stored), measured_settings(wanted)
    return [f"{key.removeprefix('options.')}: {a.get(key)!r} -> {b.get(key)!r}"
            for key in sorted(a.keys() | b.keys()) if a.get(key) != b.get(key)]


def check(record: RunRecord, path: str, suite: str, config: dict[str, Any], nprocs: int,
          mpi_library: str, force: bool) -> None:
    """Refuse (UsageError, one line) a resume of ``record`` (read from ``path``) by a run of
    ``suite`` with ``config`` (as it would be stored) at ``nprocs`` ranks on ``mpi_library``."""
    a = record.attrs
    if a.get("imported"):
        raise UsageError(f"--resume {path}: it was imported from another program's output; "
                         "only beff's own runs can be resumed")
    if a.get("suite") != suite:
        raise UsageError(f"--resume {path}: it holds {a.get('suite')!r} results, this run is "
                         f"{suite!r}")
    if a.get("status") == "running":
        raise UsageError(f"--resume {path}: a run is still writing it (status running); "
                         "resume it once that run has ended")
    why = []
    if int(a.get("nprocs") or 0) != nprocs:
        why.append(f"it was measured at {a.get('nprocs')} ranks, this run has {nprocs}")
    was = str((a.get("mpi") or {}).get("library_version", "")).splitlines()[:1]
    now = mpi_library.replace("\x00", "").strip().splitlines()[:1]
    if was != now:
        why.append(f"its MPI was {was[0] if was else '?'!r}, this run's is "
                   f"{now[0] if now else '?'!r}")
    changed = differences(a.get("config") or {}, config)
    if changed:
        more = f" (and {len(changed) - 3} more)" if len(changed) > 3 else ""
        why.append("its configuration differs: " + "; ".join(changed[:3]) + more)
    if why and not force:
        raise UsageError(f"--resume {path}: " + "; ".join(why) + " (add --force to resume "
                         "it anyway)")
