"""What a rank that only measures imports: every command that starts MPI (``beff imb`` of
all eight suites at 2 and 4 ranks; ``beff info``, ``map``, ``run`` and ``io`` at 2), the modules
of ranks other than 0, read after each run (tests/mpi/runs_script.py writes them: a union of
the job's runs so far, so a module missing there is missing from each run).

Rank 0 alone writes the result file and renders (h5py, rich). Every rank parses its command
line before MPI_Init without typer: ``beff imb`` with IMB's parser, the typer commands (info,
map, run, io) with the launch parser (beff.cli.launch); typer renders their help alone."""

from __future__ import annotations

import pytest

from tests.mpirun import Jobs, Ran, beff_subprocess

pytestmark = pytest.mark.mpi

NEVER = {"h5py", "scipy", "matplotlib", "rich", "typer", "click"}  # on no rank but 0
# The most modules a measuring rank may hold, the standard library's included: measured
# 372-406 for the eight IMB suites run one after the other in one process (rank 1 of one
# `beff imb mpi1` held 466 before rank 0's writing and rendering moved out of its way), and
# 331-400 for the four typer commands (489-530 while they parsed with typer on every rank);
# a budget about 10 % above, so that a heavy import shows.
BUDGET = 450
QUICK = ["-msglog", "0:1", "-iter_policy", "off", "-iter", "5"]
IMB = {  # the MT run first: the job's MPI starts at its thread level (multiple)
    "mt": ["imb", "mt", "PingPongMT", "-count", "1", "-repeat", "10", "-warmup", "1"],
    "mpi1": ["imb", "mpi1", "PingPong", *QUICK],
    "nbc": ["imb", "nbc", "Ibcast", *QUICK],
    "mpi4": ["imb", "mpi4", "Bcast_persist", *QUICK],
    "ext": ["imb", "ext", "Window", *QUICK],
    "rma": ["imb", "rma", "Unidir_put", *QUICK],
    "p2p": ["imb", "p2p", "PingPong", "-msglog", "0:1", "-iter", "10", "-pause", "0"],
    "imb io": ["imb", "io", "S_Write_Indv", *QUICK, "--io-dir", "."],  # I/O: last
}
TYPER = {
    "info": ["info"],
    "map": ["map", "--all-ranks", "--size", "16KiB", "--window", "2", "--rounds", "3",
            "--repetitions", "3", "--time", "5"],
    # one method: b_eff's three share the modules that measure (1.4 s at 4 ranks, not 2.7)
    "run": ["run", "--quick", "--memory-per-proc", "1MiB", "--time-per-loop", "0.01",
            "--methods", "sendrecv"],
    "io": ["io", "--quick", "-T", "1", "--dir", "."],  # I/O: last
}


RANKS = {"imb": (2, 4), "typer": (2, 4)}


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    """The jobs, once every loop they time is in the loop cache (``beff prepare``, which
    finds them kept unless this test runs first): a rank that compiles a loop imports numba,
    and numba scipy, and the test is about the ranks of a prepared installation (with a cold
    cache, rank 1 of the MT run held scipy)."""
    ready = beff_subprocess("prepare", "mt", "mpi1", "nbc", "mpi4", "ext", "rma", "p2p", "io",
                            "beffio", "beff", "map", timeout=600)
    assert ready.returncode == 0, ready.stderr
    return Jobs(tmp_path_factory.mktemp, "imports",
                [(n, {f"{name} np{n}": args for name, args in commands.items()}, None)
                 for kind, commands in (("imb", IMB), ("typer", TYPER))
                 for n in RANKS[kind]])


def modules(r: Ran, name: str, rank: int) -> set[str]:
    path = r.out.parent / "logs" / f"{name}.{rank}.modules"
    return set(path.read_text().split())


def top(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


@pytest.mark.parametrize("kind,nprocs", [(k, n) for k in RANKS for n in RANKS[k]])
def test_a_measuring_rank_loads_no_writer_and_no_renderer(jobs: Jobs, kind: str,
                                                          nprocs: int) -> None:
    commands = IMB if kind == "imb" else TYPER
    for name in commands:
        r = jobs.ok(f"{name} np{nprocs}")
        for rank in range(1, nprocs):
            mods = modules(r, f"{name} np{nprocs}", rank)
            heavy = top(mods) & NEVER
            assert not heavy, (name, rank, sorted(heavy))
            assert len(mods) <= BUDGET, (name, rank, len(mods))
    # the positive control: rank 0 wrote the file with h5py and printed with rich
    last = next(reversed(commands))
    zero = top(modules(jobs.ok(f"{last} np{nprocs}"), f"{last} np{nprocs}", 0))
    assert {"h5py", "rich"} <= zero, sorted(zero)


def test_the_logs_hold_every_run(jobs: Jobs) -> None:
    """Each run of the jobs wrote its module list on every rank (the test above read them)."""
    for kind, commands in (("imb", IMB), ("typer", TYPER)):
        for n in RANKS[kind]:
            for name in commands:
                r = jobs.ok(f"{name} np{n}")
                for rank in range(n):
                    assert (r.out.parent / "logs" / f"{name} np{n}.{rank}.modules").exists()
