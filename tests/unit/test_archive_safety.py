"""The result file under stress: full disks, readers during writes, two runs, bad -o."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import h5py
import pytest

from beff.core.config import check_output_path, default_output
from beff.core.errors import BeffError, UsageError
from beff.results import archive, atomic, watch
from beff.results.archive import ResultFile, load
from tests.data.current_writer import ATTRS, RANKS, measurements


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
    with pytest.raises(BeffError, match=f"cannot create result file {path}: another run is "
                       f"writing {path}$"):
        _started(path)  # a second run with the same name: exclusive creation refuses
    second = ResultFile(path)
    second.create(ATTRS, RANKS)  # --force: replaces it
    with pytest.raises(BeffError, match="belongs to another run"):
        first.add(measurements()[0])
    second.add(measurements()[1])
    assert [m.benchmark for m in load(path).measurements] == ["Sendrecv"]
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


def test_an_update_killed_midway_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """SIGKILL in the middle of writing a result (after HDF5 has written part of it to disk):
    the file is byte for byte what it was before, and the killed writer's working copy is
    what its watcher removes."""
    out = _started(tmp_path / "k.h5")
    out.add(measurements()[0])
    before = out.path.read_bytes()
    child = subprocess.run([sys.executable, "-c", KILLED_IN_AN_UPDATE, str(out.path),
                            out.run_id], capture_output=True, text=True, timeout=120)
    assert child.returncode == -9, child.stderr
    assert out.path.read_bytes() == before
    assert [m.benchmark for m in load(out.path).measurements] == ["PingPong"]
    pid = int(child.stdout)
    assert atomic.remove_copies(out.path, pid) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.h5"]


KILLED_IN_AN_UPDATE = """
import os, signal, sys
from beff.results import archive
from tests.data.current_writer import measurements
out = archive.ResultFile(sys.argv[1])
out.run_id = sys.argv[2]
write = archive.write_measurement
def write_and_die(results, m, order):
    write(results, m, order)
    results.file.flush()  # part of the update is on disk
    print(os.getpid(), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
archive.write_measurement = write_and_die
out.add(measurements()[1])
"""


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
    out = ResultFile(tmp_path / "w.h5")
    out.create({"command_line": ["beff"]}, [])
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
    assert load(out.path).attrs["status"] == "aborted"
    assert not left.exists() and other.exists()  # its writer's copy only


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
