"""The result file under stress: full disks, kills, readers during writes, two runs, bad -o."""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from beff.core.config import check_output_path, default_output
from beff.core.errors import BeffError, UsageError
from beff.results import archive, atomic, parts, watch
from beff.results.archive import ResultFile, load
from tests.data.current_writer import ATTRS, RANKS, beff_record, measurements


def _started(path: Path) -> ResultFile:
    out = ResultFile(path)
    out.create(ATTRS, RANKS, exclusive=True)
    return out


def test_a_full_disk_stops_before_writing_and_keeps_earlier_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _started(tmp_path / "r.h5")
    first, second, _ = measurements()
    out.add(first)
    real = shutil.disk_usage

    def nearly_full(where: Any) -> Any:
        u = real(where)
        return type(u)(u.total, u.total - 1000, 1000)

    monkeypatch.setattr(archive.shutil, "disk_usage", nearly_full)
    with pytest.raises(BeffError, match=r"disk full: 1,000 bytes free in .*stay readable"):
        out.add(second)
    monkeypatch.undo()
    assert [m.benchmark for m in load(out.path).measurements] == ["PingPong"]


def test_two_runs_never_mix_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "same.h5"
    first = _started(path)
    first.add(measurements()[0])
    with pytest.raises(BeffError, match=f"cannot create result file {path}: another run is "
                       f"writing {path}$"):
        _started(path)  # a second run with the same name: exclusive creation refuses
    assert [m.benchmark for m in load(path).measurements] == ["PingPong"]  # untouched
    second = ResultFile(path)
    second.create(ATTRS, RANKS)  # --force: replaces it, and the first run's parts go
    assert not parts.directory(path, first.run_id).exists()
    with pytest.raises(BeffError, match="belongs to another run"):
        first.add(measurements()[0])
    second.add(measurements()[1])
    assert [m.benchmark for m in load(path).measurements] == ["Sendrecv"]
    second.finish("complete")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.h5"]  # no temporary file left


def test_a_reader_polling_during_writes_does_not_disturb_the_writer(tmp_path: Path) -> None:
    """Another process reads the file in a loop (as `beff show` every 0.1 s would)."""
    out = _started(tmp_path / "polled.h5")
    reader = subprocess.Popen([sys.executable, "-c", POLL, str(out.path)],
                              stdout=subprocess.PIPE, text=True)
    reads: list[int] = []
    collector = threading.Thread(target=lambda: reads.extend(
        int(line) for line in reader.stdout or []), daemon=True)
    collector.start()
    try:
        time.sleep(0.5)
        for _ in range(30):
            for m in measurements():
                out.add(m)
            time.sleep(0.01)
        # The run is still open: the reader must see its results (a loaded machine may start
        # the reader late, so give it up to 20 s) before the writer finishes.
        deadline = time.monotonic() + 20
        while 3 not in reads and time.monotonic() < deadline:
            time.sleep(0.05)
        seen_while_running = 3 in reads
        out.finish("complete")
    finally:
        reader.terminate()
        reader.wait(timeout=30)
        collector.join(timeout=30)
    assert seen_while_running  # the reader saw the results while the file was being written
    assert -1 not in reads  # and never a half-written file
    assert len(load(out.path).measurements) == 3


POLL = """
import sys, time
from beff.results.archive import load
while True:
    try:
        print(len(load(sys.argv[1]).measurements), flush=True)
    except Exception:
        print(-1, flush=True)  # the file could not be read
    time.sleep(0.02)
"""


@pytest.mark.parametrize("where", ["in a part", "in the merge", "after the merge"])
def test_a_writer_killed_in_an_update_loses_no_finished_result(tmp_path: Path,
                                                                where: str) -> None:
    """SIGKILL in the middle of writing a result (after HDF5 has written part of it to disk),
    in the middle of merging the results into the file at the end (the merged copy written,
    not yet renamed), or between that rename and the removal of the parts: the file is byte
    for byte what it was before (or the merged file), every finished result loads, and the
    watcher's clean-up leaves one file with all of them."""
    out = _started(tmp_path / "k.h5")
    out.add(measurements()[0])
    out.count = 1
    before = out.path.read_bytes()
    child = subprocess.run([sys.executable, "-c", KILLED_IN_AN_UPDATE, str(out.path),
                            out.run_id, where], capture_output=True, text=True, timeout=120)
    assert child.returncode == -9, child.stderr
    done = ["PingPong"] if where == "in a part" else ["PingPong", "Sendrecv"]
    if where == "after the merge":
        with h5py.File(out.path, "r") as f:  # the merged file, complete on its own
            assert f.attrs["status"] == "complete" and "results/mpi1/Sendrecv/np3" in f
    else:
        assert out.path.read_bytes() == before
    assert [m.benchmark for m in load(out.path).measurements] == done
    assert parts.listing(parts.directory(out.path, out.run_id))  # the unmerged parts
    pid = int(child.stdout)
    assert atomic.remove_copies(out.path, pid) == (where == "in the merge")
    # What the watcher of the killed writer does:
    assert watch.mark_if_running(out.path, out.run_id) == (where != "after the merge")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.h5"]
    record = load(out.path)
    assert [m.benchmark for m in record.measurements] == done
    assert record.attrs["status"] == ("complete" if where == "after the merge" else "aborted")


KILLED_IN_AN_UPDATE = """
import os, signal, sys
from beff.results import archive, parts
from tests.data.current_writer import measurements
out = archive.ResultFile(sys.argv[1])
out.run_id, where = sys.argv[2], sys.argv[3]
out.count = 1
def die():
    print(os.getpid(), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
write, merge, remove = archive.write_measurement, parts.merge_into, parts.remove
def write_and_die(results, m, order):
    write(results, m, order)
    results.file.flush()  # part of the update is on disk
    die()
def merge_and_die(f, where):
    merge(f, where)
    f.flush()
    die()
if where == "in a part":
    archive.write_measurement = write_and_die
    out.add(measurements()[1])
else:
    out.add(measurements()[1])
    if where == "in the merge":
        parts.merge_into = merge_and_die
    else:
        parts.remove = lambda where: die()
    out.finish("complete")
"""


def test_sigkill_at_random_moments_keeps_every_finished_result(tmp_path: Path) -> None:
    """A writer adds results, rewrites /beff, sets attributes and finishes, and is killed
    at a random moment; everything it had finished loads, and after its watcher's clean-up
    the run is one file holding exactly that."""
    rng = random.Random(os.getpid())
    span = 0.0
    for trial in range(8):
        path = tmp_path / f"r{trial}.h5"
        writer = subprocess.Popen([sys.executable, "-c", RANDOM_WRITER, str(path)],
                                  stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None
        run_id = writer.stdout.readline().split()[1]  # the file exists, and the loop begins
        lines: list[str] = []
        reader = threading.Thread(target=lines.extend, args=(writer.stdout,), daemon=True)
        reader.start()
        if trial == 0:  # not killed: how long the whole loop takes on this machine
            begun = time.monotonic()
            writer.wait(timeout=300)
            span = time.monotonic() - begun
        else:
            time.sleep(rng.uniform(0.0, 1.1 * span))
            writer.kill()
            writer.wait(timeout=30)
        reader.join(timeout=30)
        lines = [line for line in lines if line.endswith("\n")]  # not one cut by the kill
        done = [int(line.split()[1]) for line in lines if line.startswith("added")]
        record = load(path)
        loaded = [m.nprocs for m in record.measurements]
        assert loaded[:len(done)] == done, (trial, lines)  # in order, none lost
        assert len(loaded) <= len(done) + 1  # at most the one being written when killed
        if any(line.startswith("beff") for line in lines):
            assert record.result("beff") is not None
        assert all(m.times.shape[0] == len(m.sizes) for m in record.measurements)
        atomic.remove_copies(path, writer.pid)
        watch.mark_if_running(path, run_id)
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(
            (f"r{trial}.", f".r{trial}."))) == [path.name]  # one file, nothing beside it
        again = load(path)
        assert [m.nprocs for m in again.measurements] == loaded
        # complete once finish renamed the merged file over it (perhaps just before the kill)
        status = again.attrs["status"]
        assert status in ("complete", "aborted")
        assert status == "complete" or "finished\n" not in lines
        assert status == "aborted" or len(loaded) == 40
    assert span > 0


RANDOM_WRITER = """
import dataclasses, sys
from beff.results.archive import ResultFile
from tests.data.current_writer import ATTRS, RANKS, beff_record, measurements
out = ResultFile(sys.argv[1])
out.create(ATTRS, RANKS, exclusive=True)
print("run", out.run_id, flush=True)
first = measurements()[0]
rec = beff_record()
for n in range(2, 42):
    out.add(dataclasses.replace(first, nprocs=n))
    print("added", n, flush=True)
    if n % 10 == 0:
        out.add(rec)
        print("beff", n, flush=True)
        out.set_attrs(warnings=[f"after {n}"])
out.finish("complete")
print("finished", flush=True)
"""


def test_updates_write_in_proportion_to_the_results(tmp_path: Path) -> None:
    """Each result is written once while the run measures and once more when it is merged:
    the bytes written are a small multiple of the final file, however many results (a copy
    of the whole file per update wrote about N/2 times the file for N results)."""
    out = ResultFile(tmp_path / "big.h5")
    first = measurements()[0]
    shape = (24, 64, 10)  # 24 sizes, 64 ranks, 10 batches: 120 KiB of samples per result
    before = _written()
    out.create(ATTRS, RANKS, exclusive=True)
    header = out.path.stat().st_size
    for n in range(40):
        out.add(dataclasses.replace(
            first, nprocs=n + 2, sizes=np.arange(24), repetitions=np.full(24, 10),
            status=["ok"] * 24, times=np.full(shape[:2], 1e-6), group=np.zeros(64, int),
            world_ranks=np.arange(64), samples=np.full(shape, 1e-5),
            batch_iters=np.full(shape, 10), needed_gb=np.zeros(24)))
        assert out.path.stat().st_size == header  # the file holds no copy of any result
    out.set_attrs(warnings=[])
    out.finish("complete")
    written = _written() - before
    final = out.path.stat().st_size
    assert final > 40 * 2 * 8 * np.prod(shape)  # every result is in the file
    assert written < 3 * final, (written, final)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.h5"]
    assert len(load(out.path).measurements) == 40


def _written() -> int:
    """Bytes this process passed to write() and its kin so far (wchar of /proc/self/io)."""
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("wchar:"))


def test_a_file_being_created_is_absent_or_complete(tmp_path: Path) -> None:
    """A reader polling a name that a writer creates (and replaces, and removes) over and
    over finds either no file or a complete one, never a file being built."""
    path = tmp_path / "new.h5"
    writer = subprocess.Popen([sys.executable, "-c", CREATOR, str(path)])
    outcomes: dict[str, int] = {"absent": 0, "read": 0}
    failures: list[str] = []
    try:
        while writer.poll() is None:
            try:
                record = load(path)
            except FileNotFoundError:
                outcomes["absent"] += 1
            except Exception as exc:  # noqa: BLE001 - any other failure is the bug
                if not path.exists():  # the writer unlinked it while HDF5 opened it
                    outcomes["absent"] += 1
                    continue
                failures.append(f"{type(exc).__name__}: {exc}")
            else:
                assert record.attrs["status"] == "running" and len(record.ranks) == 3
                outcomes["read"] += 1
    finally:
        writer.kill()
        writer.wait(timeout=30)
    assert failures == [], (failures[:3], outcomes)
    assert outcomes["read"] > 0 and outcomes["absent"] > 0, outcomes


CREATOR = """
import os, sys
from beff.results.archive import ResultFile
from tests.data.current_writer import ATTRS, RANKS
for i in range(150):
    ResultFile(sys.argv[1]).create(ATTRS, RANKS, exclusive=True)
    ResultFile(sys.argv[1]).create(ATTRS, RANKS)  # --force: replaces it
    os.unlink(sys.argv[1])
"""


def test_default_names_are_unique_within_a_second() -> None:
    names = {default_output() for _ in range(200)}
    assert len(names) == 200 and all(n.startswith("beff-") and n.endswith(".h5") for n in names)


@pytest.mark.parametrize("case, message", [
    ("empty", "empty"),
    ("dir", "is a directory"),
    ("text", "not a beff result"),
    ("result", "an HDF5 file"),
    ("config", "that is the --config file"),
])
def test_output_paths_that_are_refused(tmp_path: Path, case: str, message: str) -> None:
    config = tmp_path / "c.toml"
    config.write_text("time = 1.0\n")
    text = tmp_path / "notes.txt"
    text.write_text("keep me\n")
    result = tmp_path / "old.h5"
    _started(result)
    path = {"empty": "", "dir": str(tmp_path), "text": str(text), "result": str(result),
            "config": str(config)}[case]
    with pytest.raises(UsageError, match=message):
        check_output_path(path, force=False, config_file=str(config))
    if case in ("text", "result"):
        check_output_path(path, force=True)  # asked for: allowed
    assert text.read_text() == "keep me\n"


def test_the_watcher_marks_only_a_running_file_of_its_own_run(tmp_path: Path) -> None:
    out = ResultFile(tmp_path / "w.h5")
    out.create({"command_line": ["beff"]}, [])
    assert not watch.mark_if_running(out.path, "another-run")
    assert h5py.File(out.path, "r").attrs["status"] == "running"
    assert watch.mark_if_running(out.path, out.run_id)
    with h5py.File(out.path, "r") as f:
        assert (f.attrs["status"], f.attrs["status_note"]) == ("aborted", watch.NOTE)
    done = ResultFile(tmp_path / "done.h5")
    done.create({"command_line": ["beff"]}, [])
    done.finish("complete")
    assert not watch.mark_if_running(done.path, done.run_id)
    assert not watch.mark_if_running(tmp_path / "missing.h5", "x")


def test_the_watcher_acts_when_its_writer_dies(tmp_path: Path) -> None:
    """It marks the file aborted, removes its writer's working copy, and merges the results
    still in parts into the file: the killed run too ends as one file."""
    out = ResultFile(tmp_path / "w.h5")
    out.create({"command_line": ["beff"]}, [])
    for m in measurements():
        out.add(m)
    out.add(beff_record())
    proc = watch.start(out.path, out.run_id)
    assert proc is not None and proc.stdin is not None
    left = tmp_path / f"{atomic.copy_prefix(out.path, os.getpid())}7.tmp"
    left.write_bytes(b"a working copy left by a writer killed in an update")
    other = tmp_path / f"{atomic.copy_prefix(out.path, os.getpid() + 1)}7.tmp"
    other.write_bytes(b"another writer's copy")
    time.sleep(0.2)
    assert h5py.File(out.path, "r", locking=False).attrs["status"] == "running"  # still waiting
    assert left.exists()
    proc.stdin.close()  # what the writer's death does to the pipe
    assert proc.wait(timeout=60) == 0
    record = load(out.path)
    assert record.attrs["status"] == "aborted"
    assert [m.benchmark for m in record.measurements] == ["PingPong", "Sendrecv", "Overlap"]
    assert record.result("beff") is not None
    assert not left.exists() and other.exists()  # its writer's copy only
    assert not parts.directory(out.path, out.run_id).exists()
    with h5py.File(out.path, "r") as f:  # one file, complete on its own
        assert "beff" in f and "results/golden/Overlap/aggregate/np2" in f
        assert f["results/mpi1/Sendrecv/np3"].attrs["order"] == 1


def test_a_watcher_started_ahead_watches_the_file_it_is_given_later(tmp_path: Path) -> None:
    """spawn() starts it before MPI does; start() hands it the file (a name with a space, a
    line break and a non-UTF-8 byte, too); a watcher whose writer ends before any file just
    ends."""
    watch.spawn()
    early = watch._spawned
    out = ResultFile(tmp_path / "a b\nc\udcff.h5")
    out.create({"command_line": ["beff"]}, [])
    proc = watch.start(out.path, out.run_id)
    assert proc is early and proc is not None and proc.stdin is not None
    assert watch._spawned is None
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    assert load(out.path).attrs["status"] == "aborted"
    watch.spawn()
    idle = watch._spawned
    assert idle is not None and idle.stdin is not None
    idle.stdin.close()  # a run that failed its checks: no file, nothing to watch
    assert idle.wait(timeout=60) == 0
    watch._spawned = None
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.path.name]


@pytest.mark.parametrize("variable", [None, "PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"])
def test_a_watcher_looks_at_its_writers_siblings_under_a_launcher_only(
        variable: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's siblings are its job's other ranks under a launcher (whose variables the
    watcher inherits from the writer), whose segments the watcher sweeps; not under a shell
    or a test process, which start other jobs: it waited 30 s for those (a test beside an
    xdist worker that had MPI)."""
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK",
                 "SLURM_PROCID"):
        monkeypatch.delenv(name, raising=False)
    if variable is not None:
        monkeypatch.setenv(variable, "0")
    expected = os.getppid() if variable is not None else None
    assert watch.launcher_of(os.getpid()) == expected


def test_a_watcher_told_the_file_is_finished_leaves_it_alone(tmp_path: Path) -> None:
    """After finish(), the watcher does not read the file when its writer goes (it would
    load h5py right after the job, beside whatever runs next)."""
    out = ResultFile(tmp_path / "w.h5")
    out.create({"command_line": ["beff"]}, [])
    out.guard()
    proc = out._watcher
    assert proc is not None and proc.stdin is not None
    out.finish("complete")
    with h5py.File(out.path, "a") as f:  # as if finished, then changed behind its back
        f.attrs["status"] = "running"
    proc.stdin.close()  # the writer's end
    assert proc.wait(timeout=60) == 0
    assert h5py.File(out.path, "r").attrs["status"] == "running"  # not marked: told done


def test_a_full_disk_at_the_end_keeps_every_result_readable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No room to merge the results into the file: the status is recorded all the same, the
    run stops with one clear line, and the results stay readable beside the file, until a
    later merge (here the watcher's) makes it one file."""
    out = _started(tmp_path / "f.h5")
    for m in measurements():
        out.add(m)
    real = shutil.disk_usage
    room = 2 * out.path.stat().st_size + archive.FILE_OVERHEAD_BYTES // 4 + 10_000

    def room_for_an_attribute_only(where: Any) -> Any:
        u = real(where)
        return type(u)(u.total, u.total - room, room)

    monkeypatch.setattr(archive.shutil, "disk_usage", room_for_an_attribute_only)
    with pytest.raises(BeffError, match=r"^disk full: [\d,]+ bytes free in [^\n]*stay "
                       r"readable in [^\n]*$"):
        out.finish("complete")
    monkeypatch.undo()
    record = load(out.path)
    assert record.attrs["status"] == "complete"
    assert [m.benchmark for m in record.measurements] == ["PingPong", "Sendrecv", "Overlap"]
    assert not watch.mark_if_running(out.path, out.run_id)  # complete: merged, not marked
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.h5"]
    assert [m.benchmark for m in load(out.path).measurements] == [
        "PingPong", "Sendrecv", "Overlap"]


def test_a_reader_on_the_writers_host_tells_a_dead_writer(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    ranks = [{"rank": 0, "host": socket.gethostname(), "pid": int(dead.stdout)}]
    out = ResultFile(tmp_path / "r.h5")
    out.create({"command_line": ["beff"]}, ranks)
    record = load(out.path)  # no watcher ran: the file says running, its writer is gone
    assert record.attrs["status"] == "aborted" and record.attrs["status_note"] == watch.NOTE
    ranks[0]["pid"] = os.getpid()  # a live writer
    alive = ResultFile(tmp_path / "a.h5")
    alive.create({"command_line": ["beff"]}, ranks)
    assert load(alive.path).attrs["status"] == "running"


def test_the_disk_full_line_names_what_the_check_needs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The figure the line prints is the check's own: with that much free, it passes."""
    import re

    out = _started(tmp_path / "r.h5")
    real = shutil.disk_usage
    free = [1000]

    def usage(where: Any) -> Any:
        u = real(where)
        return type(u)(u.total, u.total - free[0], free[0])

    monkeypatch.setattr(archive.shutil, "disk_usage", usage)
    with pytest.raises(BeffError) as exc:
        out._room(50_000)
    need = int(re.search(r"needs ([\d,]+) ", str(exc.value)).group(1).replace(",", ""))
    assert need > 2 * 50_000
    free[0] = need - 1
    with pytest.raises(BeffError):
        out._room(50_000)
    free[0] = need
    out._room(50_000)


@pytest.mark.parametrize("end", ["takeover", "removed"])
def test_a_file_taken_over_or_removed_mid_write_is_one_clear_line(tmp_path: Path,
                                                                  end: str) -> None:
    """Another run's --force takes the file over (and removes this run's parts) while this
    run writes a part; or the user removes the file then. The first run's error says so,
    not the system's ENOENT."""
    path = tmp_path / "r.h5"
    first = _started(path)
    a, b, _ = measurements()
    first.add(a)

    def meanwhile(f: Any) -> None:
        if end == "takeover":
            ResultFile(path).create(ATTRS, RANKS, exclusive=False)
        else:
            path.unlink()
            shutil.rmtree(parts.directory(path, first.run_id))
        f.attrs["x"] = 1

    with pytest.raises(BeffError) as exc:
        first._add_part("results/x", 1000, meanwhile)
    message = str(exc.value)
    assert "No such file" not in message and "Errno" not in message, message
    assert ("now belongs to another run" if end == "takeover" else
            "was removed while this run wrote it") in message, message


def test_an_abort_while_a_result_is_written_waits_for_it_and_keeps_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another rank fails while rank 0 writes its last result: the abort (on rank 0's signal
    thread) finishes the file once that result's part is written, with it merged in. (It
    used to finish the file at once, and the part written after the merge was lost.)"""
    out = _started(tmp_path / "a.h5")
    first, second, _ = measurements()
    out.add(first)
    writing, real = threading.Event(), archive.write_measurement

    def slow(results: Any, m: Any, order: int) -> None:
        writing.set()
        time.sleep(0.5)
        real(results, m, order)

    monkeypatch.setattr(archive, "write_measurement", slow)
    main = threading.Thread(target=out.add, args=(second,))
    main.start()
    assert writing.wait(10)
    out._aborted()  # the clean-up that the signal thread runs (guard registers it)
    main.join(10)
    record = load(out.path)
    assert record.attrs["status"] == "aborted"
    assert [m.benchmark for m in record.measurements] == [first.benchmark, second.benchmark]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.h5"]  # no part left aside
