"""The I/O benchmarks' file-system layer: mounts, --io-dir checks, run file names, space,
page cache, hints and the MPI-IO implementation name. No MPI involved."""

from __future__ import annotations

import json
import os
import subprocess
import types
from pathlib import Path

import pytest

from beff.core.errors import UsageError
from beff.io.fs import (
    FILE_PREFIX,
    FsInfo,
    RunFiles,
    check_io_dir,
    drop_cache,
    fits,
    free_bytes,
    fs_info,
    human_bytes,
    merge_hints,
    mpiio_implementation,
    parse_hint,
    parse_name,
    read_hints_file,
    remove_stale,
    stale_files,
)

MiB = 1 << 20


def _escape(path: Path) -> str:
    """A path as the kernel writes it in mountinfo."""
    return str(path).replace("\\", "\\134").replace(" ", "\\040")


def _mountinfo(tmp_path: Path, lines: list[str]) -> Path:
    fake = tmp_path / "mountinfo"
    fake.write_text("".join(line + "\n" for line in lines))
    return fake


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()  # reaped: the pid no longer names a process
    return proc.pid


# --------------------------------------------------------------------------- fs_info


def test_fs_info_picks_the_longest_mount_prefix(tmp_path: Path) -> None:
    base = tmp_path.resolve()
    (base / "data" / "run").mkdir(parents=True)
    (base / "database").mkdir()
    fake = _mountinfo(tmp_path, [
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw",
        f"40 27 0:50 / {_escape(base / 'data')} rw,relatime shared:7 master:2 - lustre "
        "10.0.0.1@tcp:/fs rw,flock",
        "22 27 0:21 / /proc rw,relatime - proc proc rw",
    ])
    info = fs_info(base / "data" / "run", mountinfo=fake)
    assert info.mount_point == base / "data"
    assert (info.fstype, info.source, info.parallel) == ("lustre", "10.0.0.1@tcp:/fs", True)
    assert info.path == base / "data" / "run"

    # A string prefix is not a path prefix: /…/database is not under /…/data.
    other = fs_info(base / "database", mountinfo=fake)
    assert other.mount_point == Path("/")
    assert (other.fstype, other.source, other.parallel) == ("ext4", "/dev/vda", False)


def test_fs_info_decodes_escaped_spaces(tmp_path: Path) -> None:
    base = tmp_path.resolve()
    spaced = base / "my data"
    spaced.mkdir()
    fake = _mountinfo(tmp_path, [
        "27 1 254:0 / / rw - ext4 /dev/vda rw",
        f"41 27 0:51 / {_escape(spaced)} rw - fuse.sshfs user@host:/my\\040share rw",
    ])
    info = fs_info(spaced, mountinfo=fake)
    assert info.mount_point == spaced
    assert info.source == "user@host:/my share"
    assert info.fstype == "fuse.sshfs" and info.parallel is False


def test_fs_info_last_mount_on_the_same_point_wins(tmp_path: Path) -> None:
    base = tmp_path.resolve()
    fake = _mountinfo(tmp_path, [
        "27 1 254:0 / / rw - ext4 /dev/vda rw",
        f"50 27 0:60 / {_escape(base)} rw - tmpfs tmpfs rw",
        f"51 50 0:61 / {_escape(base)} rw - nfs4 server:/export rw",
    ])
    info = fs_info(base, mountinfo=fake)
    assert (info.fstype, info.parallel) == ("nfs4", True)


def test_fs_info_without_mountinfo_walks_up(tmp_path: Path) -> None:
    info = fs_info(tmp_path, mountinfo=tmp_path / "no-such-mountinfo")
    assert info.fstype == "unknown" and info.source == "unknown" and not info.parallel
    assert os.path.ismount(info.mount_point)
    assert info.path.is_relative_to(info.mount_point)


def test_fs_info_on_a_real_directory(tmp_path: Path) -> None:
    info = fs_info(tmp_path)
    assert info.path == tmp_path.resolve() and info.path.is_absolute()
    assert info.capacity_bytes >= info.free_bytes >= 0
    assert info.path.is_relative_to(info.mount_point)
    assert info.fstype != ""
    data = info.as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["path"] == str(info.path) and data["parallel"] is info.parallel
    assert set(data) == set(FsInfo.__dataclass_fields__)


def test_fs_info_on_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="missing"):
        fs_info(tmp_path / "missing")


# --------------------------------------------------------------------------- check_io_dir


def test_check_io_dir_accepts_a_writable_directory_and_leaves_nothing(tmp_path: Path) -> None:
    assert check_io_dir(tmp_path) == tmp_path.resolve()
    assert list(tmp_path.iterdir()) == []


def test_check_io_dir_rejects_a_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(UsageError, match=r"^--io-dir .*nope: does not exist$"):
        check_io_dir(missing)


def test_check_io_dir_rejects_a_file(tmp_path: Path) -> None:
    file = tmp_path / "f"
    file.write_text("x")
    with pytest.raises(UsageError, match=r"^--io-dir .*f: is not a directory$"):
        check_io_dir(file)


def test_check_io_dir_rejects_a_read_only_directory(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write into read-only directories")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(UsageError, match=r"^--io-dir .*ro: is not writable \(.+\)$"):
            check_io_dir(ro)
    finally:
        ro.chmod(0o755)


def test_check_io_dir_reports_a_failed_probe(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Works under root too: the write failure is simulated.
    def refuse(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(UsageError, match=r"is not writable \(Permission denied\)"):
        check_io_dir(tmp_path)


# --------------------------------------------------------------------------- run files


def test_run_files_names_and_remove_all(tmp_path: Path) -> None:
    run = RunFiles(tmp_path, "r42", host="node1.example.org", pid=1234)
    path = run.path("data_0")
    assert path == tmp_path / "beff-io.node1-example-org.1234.r42.data_0"
    assert path.name.startswith(FILE_PREFIX + ".")
    for name in ("data_0", "data-1", "meta"):
        run.path(name).write_bytes(b"x")
    other_run = RunFiles(tmp_path, "r43", host="node1.example.org", pid=1234).path("data_0")
    other_pid = RunFiles(tmp_path, "r42", host="node1.example.org", pid=12345).path("data_0")
    unrelated = tmp_path / "results.h5"
    for p in (other_run, other_pid, unrelated):
        p.write_bytes(b"y")

    removed = run.remove_all()
    assert sorted(p.name for p in removed) == sorted(
        run.path(n).name for n in ("data_0", "data-1", "meta"))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (other_run, other_pid, unrelated))
    assert run.remove_all() == []  # nothing left, and no error


def test_run_files_remove_all_tolerates_a_missing_directory(tmp_path: Path) -> None:
    assert RunFiles(tmp_path / "gone", "r1").remove_all() == []


def test_run_files_defaults_to_this_host_and_process(tmp_path: Path) -> None:
    parsed = parse_name(RunFiles(tmp_path, "r1").path("x"))
    assert parsed is not None
    host, pid, run_id, name = parsed
    assert pid == os.getpid() and (run_id, name) == ("r1", "x")
    assert "." not in host and host


@pytest.mark.parametrize("name", ["", "a.b", "a/b", "a b", "ü"])
def test_run_files_reject_bad_names(tmp_path: Path, name: str) -> None:
    run = RunFiles(tmp_path, "r1")
    with pytest.raises(ValueError):
        run.path(name)
    with pytest.raises(ValueError):
        RunFiles(tmp_path, name or ".")


def test_parse_name_round_trip(tmp_path: Path) -> None:
    path = RunFiles(tmp_path, "2024-05-01_run", host="cn17", pid=98765).path("stripe_3")
    assert parse_name(path) == ("cn17", 98765, "2024-05-01_run", "stripe_3")
    assert parse_name(path.name) == ("cn17", 98765, "2024-05-01_run", "stripe_3")


@pytest.mark.parametrize("name", [
    "results.h5", "beff-io.cn17.12.r1", "beff-io.cn17.0.r1.x", "beff-io.cn17.x.r1.data",
    "beff-io.cn17.12.r1.data.bak", "xbeff-io.cn17.12.r1.data",
])
def test_parse_name_rejects_other_files(name: str) -> None:
    assert parse_name(name) is None


def test_stale_files_sorts_dead_live_and_foreign(tmp_path: Path) -> None:
    dead = _dead_pid()
    dead_file = RunFiles(tmp_path, "r1", host="nodeA", pid=dead).path("data")
    live_file = RunFiles(tmp_path, "r1", host="nodeA", pid=os.getpid()).path("data")
    foreign_file = RunFiles(tmp_path, "r1", host="nodeB", pid=dead).path("data")
    for p in (dead_file, live_file, foreign_file):
        p.write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("not ours")

    removable, foreign = stale_files(tmp_path, host="nodeA")
    assert removable == [dead_file]
    assert foreign == [foreign_file]

    # From nodeB's point of view the roles swap, and nodeA's live file becomes foreign.
    removable_b, foreign_b = stale_files(tmp_path, host="nodeB")
    assert removable_b == [foreign_file]
    assert sorted(foreign_b) == sorted([dead_file, live_file])


def test_stale_files_treats_processes_of_other_users_as_alive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = RunFiles(tmp_path, "r1", host="nodeA", pid=4242).path("data")
    path.write_bytes(b"x")

    def not_permitted(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", not_permitted)
    assert stale_files(tmp_path, host="nodeA") == ([], [])

    def no_such_process(pid: int, sig: int) -> None:
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(os, "kill", no_such_process)
    assert stale_files(tmp_path, host="nodeA") == ([path], [])


def test_remove_stale_removes_only_dead_local_runs(tmp_path: Path) -> None:
    dead = _dead_pid()
    dead_file = RunFiles(tmp_path, "r1", pid=dead).path("data")
    live_file = RunFiles(tmp_path, "r1").path("data")
    foreign_file = RunFiles(tmp_path, "r1", host="elsewhere-node", pid=dead).path("data")
    for p in (dead_file, live_file, foreign_file):
        p.write_bytes(b"x")

    removed, foreign = remove_stale(tmp_path)
    assert removed == [dead_file] and not dead_file.exists()
    assert foreign == [foreign_file]
    assert live_file.exists() and foreign_file.exists()


# --------------------------------------------------------------------------- space


def _fake_statvfs(monkeypatch: pytest.MonkeyPatch, *, capacity: int, free: int) -> None:
    frsize = 4096

    def statvfs(path: object) -> types.SimpleNamespace:
        return types.SimpleNamespace(f_frsize=frsize, f_bsize=frsize,
                                     f_blocks=capacity // frsize, f_bavail=free // frsize,
                                     f_bfree=free // frsize)

    monkeypatch.setattr(os, "statvfs", statvfs)


def test_fits_keeps_at_least_64_mib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 1 GiB capacity: 2 % is ~20 MiB, so the 64 MiB floor applies.
    _fake_statvfs(monkeypatch, capacity=1024 * MiB, free=500 * MiB)
    assert free_bytes(tmp_path) == 500 * MiB
    assert fits(436 * MiB, tmp_path) == (True, 500 * MiB)
    assert fits(436 * MiB + 1, tmp_path) == (False, 500 * MiB)


def test_fits_keeps_a_fraction_of_large_file_systems(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # 100 GiB capacity: 2 % = 2048 MiB reserve.
    _fake_statvfs(monkeypatch, capacity=100 * 1024 * MiB, free=10 * 1024 * MiB)
    assert fits(8 * 1024 * MiB, tmp_path) == (True, 10 * 1024 * MiB)
    assert fits(8 * 1024 * MiB + 1, tmp_path)[0] is False
    # A larger fraction (10 % = 10 GiB) takes all the free space.
    assert fits(0, tmp_path, reserve_fraction=0.1)[0] is True
    assert fits(1, tmp_path, reserve_fraction=0.1)[0] is False


def test_free_bytes_of_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="gone"):
        free_bytes(tmp_path / "gone")


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (512, "512 B"), (1023, "1023 B"), (1024, "1 KiB"), (1536, "1.5 KiB"),
    (64 * MiB, "64 MiB"), (3 * 512 * MiB, "1.5 GiB"), (MiB - 1, "1 MiB"), (-2048, "-2 KiB"),
    (1 << 60, "1 EiB"),
])
def test_human_bytes(n: int, text: str) -> None:
    assert human_bytes(n) == text


# --------------------------------------------------------------------------- page cache


def test_drop_cache_on_a_real_file(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_bytes(os.urandom(1 << 16))
    assert drop_cache([path, str(path)]) == []
    assert path.read_bytes() and path.stat().st_size == 1 << 16  # the data is untouched


def test_drop_cache_skips_missing_files_and_reports_failures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data"
    path.write_bytes(b"x" * 4096)
    assert drop_cache([tmp_path / "missing"]) == []

    def fail(fd: int, offset: int, length: int, advice: int) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "posix_fadvise", fail)
    failures = drop_cache([tmp_path / "missing", path])
    assert failures == [f"{path}: [Errno 22] Invalid argument"]


# --------------------------------------------------------------------------- hints


@pytest.mark.parametrize("text, expected", [
    ("striping_factor=4", ("striping_factor", "4")),
    (" cb_nodes = 2 ", ("cb_nodes", "2")),
    ("romio_cb_write=enable", ("romio_cb_write", "enable")),
    ("a=b=c", ("a", "b=c")),
])
def test_parse_hint(text: str, expected: tuple[str, str]) -> None:
    assert parse_hint(text) == expected


@pytest.mark.parametrize("text", ["striping_factor", "=4", "key=", "key =  ", "two words=1", ""])
def test_parse_hint_rejects(text: str) -> None:
    with pytest.raises(UsageError, match=r"^--hint .*: expected key=value$"):
        parse_hint(text)


def test_read_hints_file(tmp_path: Path) -> None:
    path = tmp_path / "hints"
    path.write_text(
        "# ROMIO hints\n"
        "\n"
        "striping_factor 8\n"
        "cb_buffer_size=16777216\n"
        "  romio_ds_write   disable  \n"
        "cb_config_list = *:1\n"
        "striping_factor 16\n"
    )
    assert read_hints_file(path) == {
        "striping_factor": "16",
        "cb_buffer_size": "16777216",
        "romio_ds_write": "disable",
        "cb_config_list": "*:1",
    }


@pytest.mark.parametrize("bad", ["lonely_key", "key=", "= value"])
def test_read_hints_file_names_the_bad_line(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "hints"
    path.write_text(f"# comment\ncb_nodes 2\n{bad}\n")
    with pytest.raises(UsageError, match=r"hints file .*hints, line 3: "):
        read_hints_file(path)


def test_read_hints_file_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"hints file .*absent: cannot be read \(.+\)"):
        read_hints_file(tmp_path / "absent")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe key value\n")
    with pytest.raises(UsageError, match="binary: cannot be read"):
        read_hints_file(binary)


def test_merge_hints_command_line_wins() -> None:
    file_hints = {"a": "1", "b": "2"}
    assert merge_hints(file_hints, {"b": "3", "c": "4"}) == {"a": "1", "b": "3", "c": "4"}
    assert file_hints == {"a": "1", "b": "2"}  # inputs untouched


# --------------------------------------------------------------------------- MPI-IO


MPICH = "MPICH Version: 4.2.0\nMPICH Release date: Fri Feb  9 2024\nMPICH ABI: 16:0:4"
OPENMPI = "Open MPI v5.0.11, package: Open MPI conda@builder Distribution, ident: 5.0.11"


@pytest.mark.parametrize("version, env, expected", [
    (MPICH, {}, "ROMIO"),
    ("Intel(R) MPI Library 2021.10 for Linux* OS", {}, "ROMIO"),
    ("MVAPICH2 Version      :\t2.3.7", {}, "ROMIO"),
    ("MPI VERSION    : CRAY MPICH version 8.1.25.17 (ANL base 3.4a2)", {}, "ROMIO"),
    (OPENMPI, {}, "OMPIO"),
    (OPENMPI, {"OMPI_MCA_io": "romio341"}, "ROMIO"),
    (OPENMPI, {"OMPI_MCA_io": "^romio341"}, "OMPIO"),
    (OPENMPI, {"OMPI_MCA_io": "^romio"}, "OMPIO"),
    (OPENMPI, {"OMPI_MCA_io": "ompio"}, "OMPIO"),
    (OPENMPI, {"OMPI_MCA_io": "^ompio"}, "ROMIO"),
    (OPENMPI, {"OMPI_MCA_io": "ompio,romio341"}, "OMPIO"),
    ("Some Other MPI 1.0", {"OMPI_MCA_io": "romio341"}, "unknown"),
])
def test_mpiio_implementation(version: str, env: dict[str, str], expected: str) -> None:
    assert mpiio_implementation(version, env) == expected


def test_mpiio_implementation_reads_the_process_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMPI_MCA_io", "romio341")
    assert mpiio_implementation(OPENMPI) == "ROMIO"
    monkeypatch.delenv("OMPI_MCA_io")
    assert mpiio_implementation(OPENMPI) == "OMPIO"


def test_an_mpi_error_stack_is_one_short_line() -> None:
    """MPICH's error stacks (class, then each layer's text over several lines) are cut to
    the class and the last cause, for a one-line message."""
    from beff.io.run import short_error

    stack = ("Other I/O error , error stack:\nADIOI_GEN_WRITECONTIG(83): Other I/O error "
             "No space left on device")
    assert short_error(stack) == "Other I/O error: No space left on device"
    assert short_error("Invalid argument, error stack:\nMPI_File_open(99): bad: amode") \
        == "Invalid argument: amode"
    assert short_error("File does not exist") == "File does not exist"
