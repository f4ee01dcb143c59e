"""IMB-style command-line parsing (no MPI)."""

from typing import Any

import pytest

from beff.cli.options import parse_imb
from beff.core import suite as suites
from beff.core.config import build_config
from beff.core.errors import UsageError


def parse(argv: list[str], suite: str = "mpi1") -> dict[str, Any]:
    return parse_imb(suites.get(suite), argv)


def test_an_imb_job_line_ports_unchanged() -> None:
    out = parse("-msglog 3:7 -npmin 2 PingPong".split())
    assert out == {"msglog_min": 3, "msglog_max": 7, "npmin": 2, "benchmarks": ["PingPong"]}


def test_flags_and_names_mix_in_any_order() -> None:
    out = parse("PingPong -time 0.5 Sendrecv,Exchange -iter 20,8 -multi 0 -map 2x2".split())
    assert out["benchmarks"] == ["PingPong", "Sendrecv", "Exchange"]
    assert out["time"] == 0.5
    assert (out["msgspersample"], out["overall_vol_mib"]) == (20, 8)
    assert out["multi"] == 0 and out["map"] == (2, 2)


def test_include_takes_several_names() -> None:
    out = parse("-include Uniband Biband -exclude Sendrecv".split())
    assert out["include"] == ["Uniband", "Biband"] and out["exclude"] == ["Sendrecv"]


def test_off_cache_variants() -> None:
    assert parse(["-off_cache", "-1"])["off_cache"] == (8.0, 64)
    assert parse(["-off_cache", "16,128"])["off_cache"] == (16.0, 128)
    assert parse(["-off_cache", "2.5"])["off_cache"] == (2.5, 64)
    assert parse(["-off_cache", "0"])["off_cache"] is None


def test_beff_options() -> None:
    out = parse("-o r.h5 --format imb --check --no-progress".split())
    assert out == {"output": "r.h5", "format": "imb", "check": True, "progress": False}


@pytest.mark.parametrize("argv", [
    ["-msglog", "9:3"], ["-npmin", "0"], ["-iter", "abc"], ["-off_cache", "x"],
    ["-time", "-1"], ["-time", "nan"], ["-multi", "2"], ["-map", "2by2"], ["-mem", "0"],
    ["-sync", "maybe"], ["--format", "xml"], ["-bogus"], ["-time"],
    ["-msgsize", "1,-4"], ["-msglen", "f", "-msgsize", "4"], ["-thread_level", "max"],
    ["-msg", "3"],  # no abbreviations (argparse's allow_abbrev=False)
])
def test_bad_input_is_a_usage_error(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        parse(argv)


def test_config_layers_and_sources(tmp_path) -> None:  # type: ignore[no-untyped-def]
    toml = tmp_path / "beff.toml"
    toml.write_text("time = 2.5\nnpmin = 4\n")
    cfg = build_config({"npmin": 2}, str(toml), suites.get("mpi1"))
    o = cfg.options
    assert o.time == 2.5 and o.npmin == 2 and o.msglog_max == 22
    assert cfg.sources["time"].startswith("config:")
    assert cfg.sources["npmin"] == "cli"
    assert cfg.sources["msglog_max"] == "default"


def test_config_rejects_unknown_keys(tmp_path) -> None:  # type: ignore[no-untyped-def]
    toml = tmp_path / "beff.toml"
    toml.write_text("tyme = 2.5\n")
    with pytest.raises(UsageError, match="tyme"):
        build_config({}, str(toml), suites.get("mpi1"))


def test_config_json_round_trip() -> None:
    from beff.core.config import RunConfig

    cfg = build_config({"map": (2, 2), "off_cache": (8.0, 64), "msglen": [1, 2]},
                       suite=suites.get("mpi1"))
    back = RunConfig.from_json(cfg.to_json(), suites.get("mpi1"))
    assert back == cfg
    assert back.options.map == (2, 2) and back.options.off_cache == (8.0, 64)


def test_a_config_stored_by_an_earlier_beff_reads_back() -> None:
    """Schema-3 files keep every option at the top level of the stored config."""
    from beff.core.config import RunConfig

    old = '{"suite": "mpi1", "time": 2.0, "map": [2, 2], "format": "imb", "options": {}}'
    cfg = RunConfig.from_json(old, suites.get("mpi1"))
    assert cfg.format == "imb" and cfg.options.time == 2.0 and cfg.options.map == (2, 2)


def test_benchmarks_run_in_imbs_order() -> None:
    """IMB 2021.11 runs -include first, then the names as given (not the suite's order)."""
    from beff.bench.registry import resolve

    def names(*args: list[str]) -> list[str]:
        return [spec.name for spec in resolve("mpi1", *args)]

    assert names(["allreduce", "PingPong", "Allreduce"], ["Barrier", "Bcast"], []) == \
        ["Barrier", "Bcast", "Allreduce", "PingPong"]  # a repeated name runs once
    default = names([], [], [])
    assert default[:2] == ["PingPong", "PingPing"]
    assert names([], ["Uniband"], ["PingPing"]) == \
        ["Uniband"] + [n for n in default if n != "PingPing"]


@pytest.mark.parametrize(("argv", "message"), [
    (["-time", "1e308"], "-time must be between 0.000001 and 86400, got 1e+308"),
    (["-iter", "5,99999999999"], "-iter overall_vol must be between 1 and 1048576, "
                                 "got 99999999999"),
    (["-mem", "1e9"], "-mem must be between 0.000001 and 1000000, got 1000000000"),
    (["-window_size", "99999999999"], "-window_size must be between 1 and 1048576"),
])
def test_flag_errors_name_the_flag_as_typed(argv: list[str], message: str) -> None:
    """The rule of the config key behind a flag checks it at once, and its error names the
    flag the user typed (with the part of a flag that sets several keys), with limits and
    values as people write them."""
    with pytest.raises(UsageError) as err:
        parse(argv)
    assert str(err.value).startswith(message), err.value


@pytest.mark.parametrize(("suite", "argv", "message"), [
    ("mpi1", ["-aggregate_mode", "multi"], "-aggregate_mode is not an option of IMB-MPI1"),
    ("ext", ["-sync", "on"], "-sync is not an option of IMB-EXT"),
    ("p2p", ["-time", "1"], "-time is not an option of IMB-P2P"),
    ("mt", ["-npmin", "2"], "-npmin is not an option of IMB-MT"),
    ("mpi1", ["--io-dir", "/tmp"], "--io-dir is not an option of IMB-MPI1 (it is one of beff "
                                   "imb io"),
])
def test_a_flag_the_component_lacks_is_refused_while_parsing(suite: str, argv: list[str],
                                                             message: str) -> None:
    """Each suite's parser has exactly its component's flags: another component's flag is
    refused before MPI_Init, naming who has it."""
    with pytest.raises(UsageError) as err:
        parse(argv, suite)
    assert str(err.value).startswith(message), err.value


def test_a_suites_own_flag_means_what_it_says() -> None:
    """IMB-P2P's -iter is max,numerator, IMB-MT's -check is on|off: their own options."""
    assert parse(["-iter", "100,2", "PingPong"], "p2p") == {"iter": "100,2",
                                                            "benchmarks": ["PingPong"]}
    assert parse(["-check", "on"], "mt") == {"check": True}
    assert parse(["-MSGLOG", "4"]) == {"msglog_min": 0, "msglog_max": 4}  # IMB's case
