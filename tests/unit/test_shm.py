"""Which MPICH segments beff removes (beff.core.shm), with stand-ins: files in /dev/shm named
as MPICH names its segments, mapped by helper processes as ranks map theirs."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from beff.core import shm

pytestmark = pytest.mark.skipif(not shm.SHM_DIR.is_dir() or not Path("/proc/self/maps").exists(),
                                reason="needs /dev/shm and /proc")

MAP = """
import mmap, sys
with open(sys.argv[1], "r+b") as fh:
    m = mmap.mmap(fh.fileno(), 4096)
print("mapped", flush=True)
{then}
"""


def segment(wid: str, node: int = 0, kind: str = "shm") -> Path:
    path = shm.SHM_DIR / f"mpich_{kind}_{wid}_{node}"
    path.write_bytes(b"\0" * 4096)
    return path


DAY = 86400.0


def transient(made: list[Path], age_s: float = DAY) -> Path:
    """A stand-in for MPICH's transient segment (``mpich_shar_tmp`` and a mkstemp suffix),
    last modified ``age_s`` ago: made under another name and renamed, so that it never is a
    new one. A job beside the test (another worker's) ends with its watcher removing the
    unmapped transient segments made since the job started (shm.sweep_transient): a new
    stand-in, unmapped until the test's mapper starts, was once removed so."""
    spare = shm.SHM_DIR / f".beff-test-{secrets.token_hex(4)}"
    spare.write_bytes(b"\0" * 4096)
    os.utime(spare, (time.time() - age_s, time.time() - age_s))
    path = shm.SHM_DIR / f"mpich_shar_tmp{secrets.token_hex(3)}"
    made.append(path)
    spare.rename(path)
    return path


@pytest.fixture
def made() -> Iterator[list[Path]]:
    paths: list[Path] = []
    yield paths
    for p in paths:
        p.unlink(missing_ok=True)


def mapper(path: Path, then: str = "sys.stdin.read()") -> subprocess.Popen[str]:
    """A process that maps ``path``, then runs ``then`` (by default: waits for its stdin)."""
    proc = subprocess.Popen([sys.executable, "-c", MAP.format(then=then), str(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "mapped"
    return proc


def finish(proc: subprocess.Popen[str]) -> str:
    """Close the mapper's stdin; the rest of its output (read through the same buffer as
    the first line: ``communicate`` would lose what that buffer already holds)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 0
    return out


def test_mapped_names_what_a_process_maps(made: list[Path]) -> None:
    path = segment(secrets.token_hex(4))
    made.append(path)
    proc = mapper(path)
    try:
        assert shm.mapped(proc.pid) == [path.name]
        path.unlink()
        assert shm.mapped(proc.pid) == []  # unlinked: "(deleted)" in its maps
        assert shm.mapped(proc.pid, unlinked=True) == [path.name]
        assert shm.world_id(shm.mapped(proc.pid, unlinked=True)) == path.name.split("_")[2]
    finally:
        finish(proc)


@pytest.mark.parametrize("kind", ["shm", "vci", "shar_tmp"])
def test_release_mapped_unlinks_only_what_this_process_maps(made: list[Path], kind: str
                                                            ) -> None:
    if kind == "shar_tmp":  # MPICH's transient segments: mkstemp names
        mine = transient(made)
    else:
        mine = segment(secrets.token_hex(4), kind=kind)
    other = segment(secrets.token_hex(4), kind="vci")
    made += [mine, other]
    then = ("from beff.core import shm\n"
            "print(','.join(shm.release_mapped(startup=True)), flush=True)")
    out = finish(mapper(mine, then))
    assert out.strip() == mine.name
    assert not mine.exists() and other.exists()


def test_the_test_hook_keeps_the_name_at_start_only(made: list[Path]) -> None:
    path = segment(secrets.token_hex(4))
    made.append(path)
    then = ("import os\nfrom beff.core import shm\nos.environ[shm.KEEP_ENV] = '1'\n"
            "print(shm.release_mapped(startup=True), flush=True)\n"
            "print(shm.release_mapped(), flush=True)")
    out = finish(mapper(path, then))
    assert out.split("\n")[:2] == ["[]", f"['{path.name}']"]
    assert not path.exists()


def test_sweep_removes_the_jobs_unmapped_segments_only(made: list[Path]) -> None:
    wid, other = secrets.token_hex(4), secrets.token_hex(4)
    free, held = segment(wid, 0), segment(wid, 1, "vci")
    foreign = segment(other)  # another job's, unmapped: a dead job's leftover
    lookalike = shm.SHM_DIR / f"mpich_shm_{wid}_x"
    lookalike.write_bytes(b"")
    made += [free, held, foreign, lookalike]
    proc = mapper(held)  # a rank of the job that is still alive
    try:
        assert shm.sweep(wid, wait_s=0.5) == [free.name]
        assert held.exists() and foreign.exists() and lookalike.exists()
    finally:
        finish(proc)
    assert shm.sweep(wid, wait_s=10) == [held.name]  # its last rank is gone
    assert foreign.exists() and lookalike.exists()


def test_sweep_after_job_needs_the_world_id(made: list[Path], monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    wid = secrets.token_hex(4)
    path = segment(wid)
    made.append(path)
    monkeypatch.delenv(shm.JOB_ENV, raising=False)
    assert shm.sweep_after_job() == [] and path.exists()
    monkeypatch.setenv(shm.JOB_ENV, "../etc")
    assert shm.sweep_after_job() == [] and path.exists()
    monkeypatch.setenv(shm.JOB_ENV, wid)
    assert shm.sweep_after_job() == [path.name] and not path.exists()


def test_nothing_to_do_without_mpich_segments(made: list[Path]) -> None:
    """Under Open MPI a rank maps segments of other names: nothing is removed."""
    path = shm.SHM_DIR / f"sm_segment.node.0.{secrets.token_hex(4)}.0"  # as Open MPI 5
    path.write_bytes(b"\0" * 4096)
    made.append(path)
    then = "from beff.core import shm\nprint(shm.release_mapped(startup=True), flush=True)"
    out = finish(mapper(path, then))
    assert out.strip() == "[]" and path.exists()


def test_sweep_transient_removes_only_new_unmapped_ones(made: list[Path]) -> None:
    """MPICH's mpich_shar_tmp segments: one that a rank killed inside its making left (new,
    mapped by nobody) goes; one still mapped, and one older than the job, stay. (The job
    "started" two days ago and its segments are a day old: see transient.)"""
    old = transient(made, 3 * DAY)
    since = time.time() - 2 * DAY
    left, held = transient(made), transient(made)
    proc = mapper(held)
    try:
        assert shm.sweep_transient(since) == [left.name]
        assert held.exists() and old.exists() and not left.exists()
    finally:
        finish(proc)
    assert shm.sweep_transient(since) == [held.name]  # its last process is gone
    assert old.exists()


def test_sweep_transient_spares_one_mapped_between_its_two_looks(made: list[Path]) -> None:
    """A live job's transient segment between mkstemp and mmap (MPICH maps it microseconds
    later): unmapped at the first look, mapped at the second, it stays; the one still
    unmapped goes."""
    since = time.time() - 2 * DAY
    making, left = transient(made), transient(made)
    procs: list[subprocess.Popen[str]] = []
    try:
        removed = shm.sweep_transient(since, settle=lambda: procs.append(mapper(making)))
        assert procs and removed == [left.name]
        assert making.exists() and not left.exists()
    finally:
        for proc in procs:
            finish(proc)

