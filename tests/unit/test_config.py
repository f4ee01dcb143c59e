"""The config layer: TOML values meet the same rules as flags, in family tables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from beff.core import suite as suites
from beff.core.config import RunConfig, build_config, declared, limits_before_init
from beff.core.errors import UsageError
from beff.core.options import SHARED


def _toml(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("suite, text, message", [
    ("mpi1", 'time = "fast"', "time (from "),
    ("mpi1", "output = 5", "output (from "),
    ("beff", 'seed = "x"', "seed (from "),
    ("beff", 'memory_per_proc = "1B"', "memory_per_proc (from "),
    ("beff", "memory_per_proc = 1", "must be between"),
    ("beff", 'time_per_loop = "x"', "time_per_loop (from "),
    ("beff", "time_per_loop = inf", "finite"),
    ("mpi1", "npmin = -5", "must be between"),
    ("mpi1", "msglog_max = 40", "must be between"),
    ("mpi1", "batches = 0", "must be between"),
    ("mpi1", "time = -1.0", "must be between"),
    ("mpi1", 'format = "xml"', "IMB mpi1 results come as table|imb|json|csv|lines, not 'xml'"),
    ("beff", 'format = "imb"', "b_eff results come as table|sum|json|csv|lines, not 'imb'"),
    ("mpi1", 'thread_level = "bogus"', "expects one of"),
    ("mpi1", 'benchmarks = "PingPong"', "expects a list"),
    ("mpi1", "msgspersample = 99999999999999999999", "must be between"),
    ("beff", 'methods = ["sendrecv", "bogus"]', "unknown 'bogus'"),
    ("beff", "quick = 1", "expects true or false"),
    ("mpi1", "map = [2]", "expects two numbers"),
    ("mpi1", "[imb]\nquick = true", "unknown key 'quick' in table [imb]"),
    ("beff", "[b_eff]\nmsglog_max = 3", "unknown key 'msglog_max' in table [b_eff]"),
    ("mpi1", "frobnicate = 1", "unknown key"),
    ("mpi1", "[frob]\ntime = 1", "unknown table [frob]"),
    ("mpi1", 'suite = "nbc"', "key 'suite' in "),  # accepted and then ignored, before
    ("mpi1", 'config_file = "other.toml"', "key 'config_file' in "),
    # a file may serve several commands: another suite's table is checked by its own rules
    ("mpi1", "[b_eff]\nquick = 1", "expects true or false"),
    ("beff", "[p2p]\npause = -1", "must be between"),
])
def test_bad_toml_values_are_usage_errors(tmp_path: Path, suite: str, text: str,
                                          message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        build_config({}, _toml(tmp_path, text), suites.get(suite))


def test_a_file_serves_several_commands(tmp_path: Path) -> None:
    """[imb], [b_eff], [io] and a suite's own table in one file: each command takes its own
    and leaves the others' (checked) values alone."""
    path = _toml(tmp_path, '[imb]\ntime = 2.0\n[b_eff]\nquick = true\n[p2p]\npause = 0\n'
                 '[io]\nscheduled_time = 90\n')
    imb = build_config({}, path, suites.get("mpi1"))
    assert imb.options.time == 2.0 and "quick" not in imb.options
    beff = build_config({}, path, suites.get("beff"))
    assert beff.options.quick is True and "time" not in beff.options
    assert build_config({}, path, suites.get("p2p")).options.pause == 0
    assert build_config({}, path, suites.get("beffio")).options.scheduled_time == 90.0


def test_a_non_utf8_config_is_one_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_bytes(b"time = 1\n# \xff\xfe\n")
    with pytest.raises(UsageError, match="cannot read config file"):
        build_config({}, str(path), suites.get("mpi1"))


def test_family_tables_and_size_strings(tmp_path: Path) -> None:
    path = _toml(tmp_path, (
        'format = "json"\n[imb]\nmsglog_max = 5\nnpmin = 4\n'
        '[b_eff]\nmemory_per_proc = "16MiB"\nquick = true\nbackend = "python"\n'))
    cfg = build_config({"npmin": 2}, path, suites.get("mpi1"))
    assert cfg.options.msglog_max == 5 and cfg.format == "json"
    assert cfg.options.npmin == 2 and cfg.sources["npmin"] == "cli"  # flags win over the file
    beff = build_config({}, path, suites.get("beff"))
    assert beff.options.memory_per_proc == 16 << 20 and beff.options.quick is True
    assert beff.sources["quick"].startswith("config:") and beff.backend == "python"


def test_cross_field_rule() -> None:
    with pytest.raises(UsageError, match="msglog_min"):
        build_config({"msglog_min": 6, "msglog_max": 3}, suite=suites.get("mpi1"))


@pytest.mark.parametrize("suite", [s.name for s in suites.suites()])
def test_every_option_has_a_rule_and_its_default_passes(suite: str) -> None:
    chosen = suites.get(suite)
    cfg = build_config({}, suite=chosen)
    for key, option in declared(chosen).items():
        value = getattr(cfg, key) if key in cfg.__dataclass_fields__ else cfg.options[key]
        assert option.check(value, key) == value
    assert {"argv", "sources", "options"}.isdisjoint(declared(chosen))


def test_the_config_holds_exactly_the_shared_options() -> None:
    """core's RunConfig has a field per shared option and names no suite's."""
    fields = set(RunConfig.__dataclass_fields__) - {"suite", "options", "argv", "sources"}
    assert fields == {o.key for o in SHARED}


def test_flag_names_in_messages() -> None:
    with pytest.raises(UsageError, match="^--time-per-loop must be between"):
        build_config({"time_per_loop": 1e9}, suite=suites.get("beff"))


def test_beff_io_keys_stand_in_the_io_table(tmp_path: Path) -> None:
    """`beff io` reads its own keys and b_eff's memory and quick keys from [io]."""
    path = tmp_path / "io.toml"
    path.write_text('[io]\nquick = true\nmemory_per_proc = "64MiB"\ntotal_memory = "1GiB"\n'
                    'scheduled_time = 90\npartitions = [1, 2]\nrewrite = true\n')
    o = build_config({}, str(path), suites.get("beffio")).options
    assert (o.quick, o.memory_per_proc, o.total_memory) == (True, 64 << 20, 1 << 30)
    assert (o.scheduled_time, o.partitions, o.rewrite) == (90.0, [1, 2], True)
    path.write_text("[imb]\nscheduled_time = 90\n")
    with pytest.raises(UsageError, match="unknown key 'scheduled_time' in table"):
        build_config({}, str(path), suites.get("beffio"))


def test_the_watchdog_limits_are_known_before_mpi_init(tmp_path: Path) -> None:
    """Every rank reads --timeout and --stall-timeout from its flags, else the TOML file,
    before MPI_Init; a value rank 0 will refuse (or an unreadable file) counts as unset."""
    config = tmp_path / "c.toml"
    config.write_text("timeout = 300\n[imb]\nstall_timeout = 30\n")
    assert limits_before_init({}) == (None, None)
    assert limits_before_init({"timeout": 20.0, "stall_timeout": 5}) == (20.0, 5.0)
    assert limits_before_init({"config_file": str(config)}) == (300.0, 30.0)
    assert limits_before_init({"config_file": str(config), "stall_timeout": 7.0}) == (300.0, 7.0)
    assert limits_before_init({"timeout": 0.5, "stall_timeout": float("nan")}) == (None, None)
    assert limits_before_init({"config_file": str(tmp_path / "missing.toml")}) == (None, None)
