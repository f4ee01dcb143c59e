"""The I/O suites' options, declared once: where the files go and how they are opened
(IMB-IO and b_eff_io alike), and b_eff_io's own. Their TOML table is ``[io]``."""

from __future__ import annotations

from dataclasses import replace

from beff.core.config import parse_int_list, parse_size
from beff.core.options import MAX_TIME_S, Option


def _size(text: str, flag: str) -> int:
    return parse_size(text, flag)


def _ints(text: str, flag: str) -> list[int]:
    return parse_int_list(text, flag)


def files(dir_flags: tuple[str, ...]) -> tuple[Option, ...]:
    """Where the scratch files go and the MPI-IO hints (``dir_flags``: the directory's
    spellings in that command)."""
    return (
        Option("io_dir", str, None, "directory of the scratch files (default: the current "
               "directory); every run uses names of its own and removes them",
               flags=dir_flags, optional=True, table="io", metavar="PATH"),
        Option("keep_files", bool, False, "leave the scratch files (default: deleted before "
               "and after each benchmark)", flags=("--keep-files",), table="io"),
        Option("hints", list, [], "MPI-IO hint key=value for MPI_File_open (repeatable)",
               flags=("--hint",), repeat=True, table="io", metavar="key=value"),
        Option("hints_file", str, None, "file of hints (key=value or 'key value' per line)",
               flags=("--hints",), optional=True, table="io", metavar="FILE"),
    )


DROP_CACHE = Option("drop_cache", bool, False, "posix_fadvise DONTNEED on a read benchmark's "
                    "file after writing it", flags=("--drop-cache",), table="io")
# IMB-IO's own (beside IMB-MPI1's flags that IMB-IO has).
IMBIO = (*files(("--io-dir",)), DROP_CACHE)

# b_eff_io's (beff io).
BEFFIO = (
    Option("memory_per_proc", int, None, "memory per process (e.g. 512MiB, 2G): Lmax = "
           "memory/128, 2 MiB to 1 GiB. Default: the node's physical memory / ranks on it "
           "(--quick: 256MiB)", flags=("--memory-per-proc",), lo=1 << 20, hi=1 << 50,
           optional=True, mib=True, text=_size, table="io", metavar="SIZE"),
    Option("total_memory", int, None, "memory of the whole system, for 'data moved = x % of "
           "total memory' (default: the nodes' physical memory)", flags=("--total-memory",),
           lo=1 << 20, hi=1 << 62, optional=True, mib=True, text=_size, table="io",
           metavar="SIZE"),
    Option("scheduled_time", float, None, "scheduled time in seconds over all partitions "
           "(default 600; --quick: 2 per partition). Comparable results need T / partitions "
           ">= 1800", flags=("-T", "--time"), lo=1.0, hi=MAX_TIME_S, optional=True,
           table="io", metavar="SECS"),
    Option("partitions", list, [], "partition sizes, e.g. 1,2,4 (default as b_eff_io 2.1: "
           "{1}, {1,2}, or three sizes up to the job's processes)", flags=("-N", "--partitions"),
           item=int, lo=1, hi=1 << 31, text=_ints, table="io", metavar="1,2,4"),
    Option("quick", bool, False, "a first look: 2 s per partition and Lmax 2 MiB; labelled "
           "QUICK everywhere", flags=("--quick",), table="io"),
    Option("rewrite", bool, False, "rewrite all five pattern types (default: type 0 only)",
           flags=("--rewrite",), table="io"),
    Option("noshared", bool, False, "type 1 with individual file pointers instead of the "
           "shared one (the result is NOT VALID)", flags=("--noshared",), table="io"),
    Option("nounique", bool, False, "open files without MPI_MODE_UNIQUE_OPEN",
           flags=("--nounique",), table="io"),
    *files(("--dir",)),
    replace(DROP_CACHE, fixed=True),  # b_eff_io reads what it wrote, as the original
)
