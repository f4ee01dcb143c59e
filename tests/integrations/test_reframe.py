"""beff's ReFrame checks (share/integrations/reframe) under the real ReFrame: ``reframe -C
settings.py -c beff_checks.py -r`` runs the four checks on 2 ranks with the site
configuration's local partition (local scheduler, mpiexec launcher), every check passes, and
each figure of its performance log is the figure ``beff show result.h5 -f json`` gives for
the result file that ReFrame kept in the check's output directory.

In CI (``CI`` set) this test fails, it does not skip, when ReFrame is missing: the test
extra installs it. Elsewhere it skips, saying how to install it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mpirun import BIN, ROOT, beff, mpi_env

pytestmark = [pytest.mark.mpi, pytest.mark.timeout(360)]

HERE = ROOT / "share" / "integrations" / "reframe"
CHECKS = ["BeffEffectiveBandwidth", "BeffImbMpi1", "BeffEffectiveIO", "BeffNetworkMap"]


def reframe_command() -> list[str]:
    """ReFrame's own command line, of the ReFrame this Python imports."""
    if importlib.util.find_spec("reframe") is None:
        message = "ReFrame is missing: pip install 'reframe-hpc>=4' (the test extra has it)"
        if not os.environ.get("CI"):
            pytest.skip(message)
        raise AssertionError(message)
    script = BIN / "reframe"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from reframe.frontend.cli import main; "
            "sys.exit(main())"]


def perflog(path: Path) -> list[dict[str, str]]:
    """A perflog of settings.py's format: a header line of field names, then one line per
    run of the check, fields separated by '|'."""
    header, *lines = path.read_text(encoding="utf-8").splitlines()
    names = header.split("|")
    rows = []
    for line in lines:
        fields = line.split("|")
        assert len(fields) == len(names), line
        rows.append(dict(zip(names, fields, strict=True)))
    return rows


def expected_figures(check: str, doc: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """What each check should report (value, unit), read from ``beff show``'s JSON here
    without the checks' code."""
    result = doc["results"][0]
    if check == "BeffEffectiveBandwidth":
        return {"b_eff": (result["b_eff_MBps"], "MB/s"),
                "b_eff_per_process": (result["b_eff_per_process_MBps"], "MB/s"),
                "latency": (result["latency_us"], "us")}
    if check == "BeffImbMpi1":
        rows = {(r["benchmark"], row["bytes"]): row
                for r in doc["results"] for row in r["rows"]}
        return {"pingpong_latency": (rows["PingPong", 0]["t_max_us"], "us"),
                "pingpong_bandwidth": (rows["PingPong", 65536]["mbytes_per_sec"], "MB/s"),
                "allreduce_t_avg": (rows["Allreduce", 1024]["t_avg_us"], "us")}
    if check == "BeffEffectiveIO":
        return {"b_eff_io": (result["b_eff_io_MBps"], "MB/s")}
    within = result["figures"]["within nodes"]  # 2 ranks on this one host
    return {"map_bandwidth": (within["recv_MBps"]["median"], "MB/s"),
            "map_latency": (within["latency_us"]["median"], "us")}


def run_checks(work: Path, partition: str,
               env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One ReFrame run of every check on ``partition`` of settings.py, its prefix, report
    and temporary files under ``work``."""
    cmd = reframe_command()
    env = mpi_env({k: None for k in os.environ if k.startswith("RFM_")})
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # mpiexec of the environment
    env["TMPDIR"] = str(work)  # ReFrame's start-up log, written before it reads settings.py
    env.update(env_extra or {})
    beff_cmd = f"{shlex.quote(sys.executable)} -m beff"  # the beff of the environment
    return subprocess.run(
        [*cmd, "-C", str(HERE / "settings.py"), "-c", str(HERE / "beff_checks.py"), "-r",
         "--system", f"beff-local:{partition}",
         "--prefix", str(work / "rfm"), "--report-file", str(work / "report.json"),
         "--nocolor", "-S", f"beff_cmd={beff_cmd}"],
        capture_output=True, text=True, timeout=300, cwd=work, env=env)


def assert_every_check_passed(proc: subprocess.CompletedProcess[str], work: Path) -> None:
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "Ran 4/4 test case(s) from 4 check(s) (0 failure(s)" in proc.stdout, proc.stdout
    report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    cases = [tc for run in report["runs"] for tc in run["testcases"]]
    assert sorted(tc["name"] for tc in cases) == sorted(CHECKS)
    assert {tc["result"] for tc in cases} == {"pass"}


def assert_perflogs_hold_beff_show_figures(proc: subprocess.CompletedProcess[str], work: Path,
                                           partition: str) -> list[dict[str, Any]]:
    """Each check's perflog line against ``beff show`` of the file it kept; returns the
    JSON documents of those files."""
    logs = work / "rfm" / "perflogs" / "beff-local" / partition
    assert sorted(p.stem for p in logs.glob("*.log")) == sorted(CHECKS), proc.stdout[-6000:]
    docs = []
    for check in CHECKS:
        (row,) = perflog(logs / f"{check}.log")
        assert row["display_name"] == check and row["result"] == "pass", row
        assert row["system:partition"] == f"beff-local:{partition}" and row["environ"] == "beff"
        kept = Path(row["outputdir"]) / "result.h5"
        shown = beff("show", str(kept), "-f", "json")
        assert shown.returncode == 0, shown.stderr
        doc = json.loads(shown.stdout)
        assert doc["run"]["status"] == "complete" and doc["run"]["nprocs"] == 2
        figures = expected_figures(check, doc)
        logged = {k[:-len("_var")] for k in row if k.endswith("_var")}
        assert logged == set(figures), row
        for name, (value, unit) in figures.items():
            assert row[f"{name}_var"] == name
            assert float(row[f"{name}_value"]) == value, (check, name, row)
            assert row[f"{name}_unit"] == unit
            # a loose reference: no bounds, so a busy machine never fails it
            assert (row[f"{name}_ref"], row[f"{name}_lower_thres"],
                    row[f"{name}_upper_thres"]) == ("0", "None", "None")
        docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                               Path]:
    """One ReFrame run of every check on the local partition (mpiexec)."""
    work = tmp_path_factory.mktemp("reframe")
    return run_checks(work, "local"), work


def test_every_check_passes(session: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    assert_every_check_passed(*session)


def test_the_perflog_figures_are_beff_show_figures(
        session: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    for doc in assert_perflogs_hold_beff_show_figures(*session, "local"):
        assert doc["run"].get("batch") == {}  # no batch job: mpiexec on this host
