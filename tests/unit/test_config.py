"""The config layer: TOML values meet the same rules as flags, in family tables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from beff.core.config import RULES, build_config, check_value, limits_before_init
from beff.core.errors import UsageError


def _toml(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, message", [
    ('time = "fast"', "time (from "),
    ("output = 5", "output (from "),
    ('seed = "x"', "seed (from "),
    ('memory_per_proc = "1B"', "memory_per_proc (from "),
    ("memory_per_proc = 1", "must be between"),
    ('time_per_loop = "x"', "time_per_loop (from "),
    ("time_per_loop = inf", "finite"),
    ("npmin = -5", "must be between"),
    ("msglog_max = 40", "must be between"),
    ("batches = 0", "must be between"),
    ("time = -1.0", "must be between"),
    ('format = "xml"', "expects one of table|imb|sum|json|csv"),
    ('thread_level = "bogus"', "expects one of"),
    ('benchmarks = "PingPong"', "expects a list"),
    ("msgspersample = 99999999999999999999", "must be between"),
    ('methods = ["sendrecv", "bogus"]', "unknown 'bogus'"),
    ("quick = 1", "expects true or false"),
    ("map = [2]", "expects two numbers"),
    ("[imb]\nquick = true", "unknown key 'quick' in table [imb]"),
    ("[b_eff]\nmsglog_max = 3", "unknown key 'msglog_max' in table [b_eff]"),
    ("frobnicate = 1", "unknown key"),
    ('suite = "nbc"', "key 'suite' in "),  # accepted and then ignored, before
    ('config_file = "other.toml"', "key 'config_file' in "),
])
def test_bad_toml_values_are_usage_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        build_config({}, _toml(tmp_path, text))


def test_a_non_utf8_config_is_one_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_bytes(b"time = 1\n# \xff\xfe\n")
    with pytest.raises(UsageError, match="cannot read config file"):
        build_config({}, str(path))


def test_family_tables_and_size_strings(tmp_path: Path) -> None:
    cfg = build_config({"npmin": 2}, _toml(tmp_path, (
        'format = "json"\n[imb]\nmsglog_max = 5\nnpmin = 4\n'
        '[b_eff]\nmemory_per_proc = "16MiB"\nquick = true\nbackend = "python"\n')))
    assert cfg.msglog_max == 5 and cfg.memory_per_proc == 16 << 20 and cfg.quick is True
    assert cfg.npmin == 2 and cfg.sources["npmin"] == "cli"  # flags win over the file
    assert cfg.sources["quick"].startswith("config:") and cfg.backend == "python"


def test_cross_field_rule() -> None:
    with pytest.raises(UsageError, match="msglog_min"):
        build_config({"msglog_min": 6, "msglog_max": 3})


def test_every_option_has_a_rule_and_its_default_passes() -> None:
    cfg = build_config({})
    for key in RULES:
        assert check_value(key, getattr(cfg, key)) == getattr(cfg, key)
    assert {"argv", "sources"}.isdisjoint(RULES)


def test_flag_names_in_messages() -> None:
    with pytest.raises(UsageError, match="^--time-per-loop must be between"):
        check_value("time_per_loop", 1e9, "--time-per-loop")


def test_beff_io_keys_stand_in_the_io_table(tmp_path: Path) -> None:
    """`beff io` reads its own keys and b_eff's memory and quick keys from [io]."""
    path = tmp_path / "io.toml"
    path.write_text('[io]\nquick = true\nmemory_per_proc = "64MiB"\ntotal_memory = "1GiB"\n'
                    'scheduled_time = 90\npartitions = [1, 2]\nrewrite = true\n')
    cfg = build_config({}, str(path))
    assert (cfg.quick, cfg.memory_per_proc, cfg.total_memory) == (True, 64 << 20, 1 << 30)
    assert (cfg.scheduled_time, cfg.partitions, cfg.rewrite) == (90.0, [1, 2], True)
    path.write_text("[imb]\nscheduled_time = 90\n")
    with pytest.raises(UsageError, match="unknown key 'scheduled_time' in table"):
        build_config({}, str(path))


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
