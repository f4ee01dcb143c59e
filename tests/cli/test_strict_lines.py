"""``beff show --format lines`` and ``beff show --strict`` without MPI, and ``--strict`` as one
shared option: the flag of every measuring command, of ``beff imb``, a TOML key and a stored
config value, all from its one declaration (live runs: tests/mpi/test_strict.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beff.cli.options import parse_imb
from beff.core import suite as suites
from beff.core.config import build_config
from beff.core.errors import STRICT
from beff.core.options import SHARED_BY_KEY
from tests.mpirun import beff

DATA = Path(__file__).resolve().parents[1] / "data"
IMB, BEFF, BEFFIO = (DATA / f"golden-schema-v3-{k}.h5" for k in ("imb", "beff", "beffio"))
TIMED_OUT_LOG = DATA / "real-logs" / "imb-2019u1-mpi1-alltoallv-mvapich2-np512-timeout-archer.txt"
IMB_IO_LOG = DATA / "imported" / "imb-io-np2-blocking-msglog0-20.txt"


def strict_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("beff: strict:")]


@pytest.mark.parametrize("path", [IMB, BEFF, BEFFIO])
def test_show_lines_ends_with_the_runs_status(path: Path) -> None:
    r = beff("show", str(path), "-f", "lines")
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("run.status complete -\n") and len(r.stdout.splitlines()) > 5


@pytest.mark.parametrize("path", [BEFF, BEFFIO])
def test_show_strict_of_a_clean_file_exits_0(path: Path) -> None:
    for fmt in ("table", "lines", "json"):
        r = beff("show", str(path), "-f", fmt, "--strict")
        assert r.returncode == 0, r.stderr
        assert strict_lines(r.stderr) == []


def test_show_strict_of_a_time_out_exits_4_with_one_line() -> None:
    plain = beff("show", str(IMB), "-f", "lines")
    assert plain.returncode == 0  # without --strict: as before
    r = beff("show", str(IMB), "-f", "lines", "--strict")
    assert r.returncode == STRICT == 4
    assert r.stdout == plain.stdout  # the output comes first, whole
    assert "mpi1.Sendrecv.np3.2B.status time-out -\n" in r.stdout
    assert r.stderr.splitlines() == [
        "beff: strict: Sendrecv at 3 processes: time-out at 2 bytes"]


def test_imported_logs_show_as_lines_and_strict_judges_them(tmp_path: Path) -> None:
    for log in (TIMED_OUT_LOG, IMB_IO_LOG):
        out = tmp_path / f"{log.stem}.h5"
        assert beff("import", str(log), "-o", str(out)).returncode == 0
        r = beff("show", str(out), "-f", "lines", "--strict")
        assert r.stdout.endswith("run.status complete -\n")
        if log == TIMED_OUT_LOG:
            assert "mpi1.Alltoallv.np512.1048576B.status time-out -\n" in r.stdout
            assert r.returncode == 4
            assert strict_lines(r.stderr) == [
                "beff: strict: Alltoallv at 512 processes: time-out at 1048576 bytes"]
        else:
            assert "io.S_Write_Indv.aggregate.np1.0B.t_max_us 0.05 us\n" in r.stdout
            assert r.returncode == 0, r.stderr


def test_one_declaration_gives_every_spelling(tmp_path: Path) -> None:
    option = SHARED_BY_KEY["strict"]
    assert option.kind is bool and option.default is False
    for suite in suites.suites():  # every measuring command takes it
        assert "strict" not in suite.unused
    assert parse_imb(suites.get("mpi1"), ["PingPong", "--strict"])["strict"] is True
    assert "--strict" in beff("imb", "mpi1", "-help").stdout
    help_words = " ".join(option.help.split()[1:8])  # the first one capitalized
    for command in ("run", "io", "map", "show"):
        r = beff(command, "--help", env={"COLUMNS": "200"})
        assert "--strict" in r.stdout and help_words in " ".join(r.stdout.split()), command
    toml = tmp_path / "c.toml"
    toml.write_text("strict = true\n")
    cfg = build_config({}, str(toml), suites.get("beff"))
    assert cfg.strict is True and cfg.sources["strict"] == f"config:{toml}"
    assert json.loads(cfg.to_json())["strict"] is True  # stored with the run's config
    assert build_config({"strict": True}, None, suites.get("mpi1")).sources["strict"] == "cli"
