"""``beff import`` of real outputs from public repositories (tests/data/real-logs, their
sources in its README): every log imports, and its numbers come back row for row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from beff.render import view
from beff.results import imported
from beff.results.model import RunRecord

LOGS = Path(__file__).resolve().parents[1] / "data" / "real-logs"
IMB = sorted(LOGS.glob("*.txt"))
SUMS = sorted(LOGS.glob("*.sum"))
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$")
TITLE = re.compile(r"(?:Intel ?\(R\) MPI Benchmarks|PALLAS MPI Benchmark)")


def numeric_blocks(text: str) -> list[tuple[str, list[list[float | str]]]]:
    """Each ``# Benchmarking`` block's name and rows: the lines of numbers, as numbers, and
    the time-out and out-of-mem rows as (size, status). Written apart from beff's parser."""
    blocks: list[tuple[str, list[list[float | str]]]] = []
    for line in text.splitlines():
        if line.startswith("# Benchmarking "):
            blocks.append((line.split()[2].removeprefix("Multi-"), []))
            continue
        if not blocks or line.startswith("#") or TITLE.search(line):
            continue
        tokens = line.split()
        if tokens and all(NUMBER.match(t) for t in tokens):
            blocks[-1][1].append([float(t) for t in tokens])
        elif tokens and NUMBER.match(tokens[0]) and ("time-out" in line or
                                                     "out-of-mem" in line):
            blocks[-1][1].append([float(tokens[0]),
                                  "time-out" if "time-out" in line else "out-of-mem"])
    return [b for b in blocks if b[1]]


def runs_in(text: str) -> int:
    return max(1, len([line for line in text.splitlines() if TITLE.search(line)]))


@pytest.fixture(scope="module")
def records() -> dict[str, list[RunRecord]]:
    return {p.name: imported.read_all(p) for p in [*IMB, *SUMS]}


def test_the_corpus_is_there_with_its_sources() -> None:
    readme = (LOGS / "README.md").read_text()
    assert len(IMB) >= 20
    for p in [*IMB, *SUMS]:
        assert f"`{p.name}`" in readme, p.name  # each file's source is named


@pytest.mark.parametrize("src", IMB, ids=[p.stem for p in IMB])
def test_every_real_imb_log_imports_with_every_row(src: Path,
                                                   records: dict[str, list[RunRecord]]) -> None:
    text = src.read_text(errors="replace")
    runs = records[src.name]
    assert len(runs) == runs_in(text)
    logged = numeric_blocks(text)
    again = [b for r in runs for b in numeric_blocks(view.render(r, "imb") or "")]
    assert [name for name, _ in again] == [name for name, _ in logged]
    for (name, rows), (_, printed) in zip(logged, again, strict=True):
        assert len(printed) == len(rows), name
        assert printed == rows, name


@pytest.mark.parametrize("src", IMB, ids=[p.stem for p in IMB])
def test_status_and_version_as_the_log_says(src: Path,
                                            records: dict[str, list[RunRecord]]) -> None:
    text = src.read_text(errors="replace")
    titles = [m.group(0) for line in text.splitlines()
              if (m := re.search(r"(?:Benchmarks|Benchmark Suite) V?(\d[\w.]*(?: [Uu]pdate "
                                 r"\d+)?)", line))]
    for k, record in enumerate(records[src.name]):
        versions = record.attrs["versions"]
        printed = versions.get("imb", versions.get("pmb"))
        if titles:
            assert titles[k].endswith(printed), (titles[k], printed)
        else:
            assert printed == ""
    last = records[src.name][-1]
    ends = text.rstrip().splitlines()[-40:]
    if not any(line.startswith("# All processes entering MPI_Finalize") for line in ends):
        assert last.attrs["status"] == "incomplete"
        assert "the log ends without IMB's closing line" in " ".join(last.attrs["warnings"])
    else:
        assert last.attrs["status"] == "complete"


def test_an_update_title_keeps_its_version(records: dict[str, list[RunRecord]]) -> None:
    [r] = records["imb-2019u5-mpi1-openmpi4-np2-stackhpc.txt"]
    assert r.attrs["versions"]["imb"] == "2019 Update 5"
    assert [m.benchmark for m in r.measurements] == ["PingPong"]


def test_appended_runs_of_two_suites_go_each_to_its_suite(
        records: dict[str, list[RunRecord]]) -> None:
    first, second = records["imb-2018-mpi1+ext-multi0-impi2018-np8-appended-akrr.txt"]
    assert (first.suite, second.suite) == ("mpi1", "ext")
    assert "Window" in [m.benchmark for m in second.measurements]
    assert "Window" not in [m.benchmark for m in first.measurements]
    assert (first.attrs["imported"]["run"], second.attrs["imported"]["run"]) == (1, 2)


def test_repeated_sizes_are_kept(tmp_path: Path) -> None:
    """With -msglen, IMB's reductions print each length rounded down to whole elements, so
    a size repeats (no log of the corpus has it: this one is a real sample's table with two
    rows repeated, as IMB prints them for -msglen lengths 5 and 6 of MPI_FLOAT)."""
    sample = LOGS.parent / "imb-samples" / "mpi1-np2-coll-msglog0-16-time0.5-quiet.txt"
    lines = sample.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("            4    "))
    log = tmp_path / "msglen.txt"
    log.write_text("".join([*lines[:at + 1], lines[at], *lines[at + 1:]]))
    [record] = imported.read_all(log)
    allreduce = next(m for m in record.measurements if m.benchmark == "Allreduce")
    assert list(allreduce.sizes[:4]) == [0, 4, 4, 8]
    assert len(numeric_blocks(view.render(record, "imb") or "")[0][1]) == \
        len(numeric_blocks(log.read_text())[0][1])


def test_a_log_cut_mid_table_says_where(records: dict[str, list[RunRecord]]) -> None:
    [r] = records["imb-2019u6-mpi1-alltoall-craympich-np16384-truncated-archer.txt"]
    assert r.attrs["status"] == "incomplete"
    assert "the last table (Alltoall at 16384 processes) stops at" in r.attrs["warnings"][0]


def test_a_log_without_its_title(records: dict[str, list[RunRecord]]) -> None:
    [r] = records["imb-rma-one_put_all-np2-headless-pkb.txt"]
    assert r.suite == "rma" and r.attrs["versions"]["imb"] == ""
    assert "without IMB's title" in r.attrs["warnings"][0]


@pytest.mark.parametrize("src", SUMS, ids=[p.stem for p in SUMS])
def test_every_real_beffio_sum_imports_every_figure(src: Path,
                                                    records: dict[str, list[RunRecord]]) -> None:
    [r] = records[src.name]
    final = re.search(r"b_eff_io =\s*([\d.]+) MB/s", src.read_text())
    assert final is not None
    text = view.render(r, "sum") or ""
    assert f"b_eff_io = {final.group(1)}" in " ".join(text.split()) or \
        final.group(1) in text


@pytest.mark.parametrize("token", ["99999999999999999999999", "1e400", "-5"])
def test_a_huge_number_is_one_line(tmp_path: Path, token: str) -> None:
    from tests.mpirun import beff

    src = LOGS / "imb-2019u5-mpi1-openmpi4-np2-stackhpc.txt"
    log = tmp_path / "huge.txt"
    text = src.read_text()
    assert "      4194304 " in text
    log.write_text(text.replace("      4194304 ", f" {token} "))
    r = beff("import", str(log), "-o", str(tmp_path / "huge.h5"))
    assert r.returncode == 2, r.stderr
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("beff: error: cannot import") and "out of range" in line, line
    assert not (tmp_path / "huge.h5").exists()


def test_the_command_writes_one_file_per_appended_run(tmp_path: Path) -> None:
    from beff.results.archive import load
    from tests.mpirun import beff

    src = LOGS / "imb-2018-mpi1+ext-multi0-impi2018-np8-appended-akrr.txt"
    out = tmp_path / "akrr.h5"
    r = beff("import", str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "run 1: 11 results written to" in r.stderr and "run 2: 7 results" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["akrr-run1.h5", "akrr-run2.h5"]
    assert [load(tmp_path / f"akrr-run{k}.h5").suite for k in (1, 2)] == ["mpi1", "ext"]
    r = beff("import", str(src), "-o", str(out))  # no file is replaced without --force
    assert r.returncode == 2 and "akrr-run1.h5: the file exists" in r.stderr


@pytest.mark.parametrize("src", IMB, ids=[p.stem for p in IMB])
def test_every_real_log_has_a_figure_for_every_table(
        src: Path, records: dict[str, list[RunRecord]]) -> None:
    """The report's figures (beff.render.report.charts_of): every table with a measured
    row draws at least one point of it."""
    import numpy as np

    from beff.bench.charts import measurement_charts
    from beff.render import report
    from beff.results.model import OK

    for record in records[src.name]:
        drawn = {c.id for c in report.charts_of(record)}
        for m in record.measurements:
            if OK not in m.status:
                continue  # every size timed out or ran out of memory: nothing to draw
            mine = [c for c in measurement_charts(m) if c.id in drawn]
            assert mine, m.key
            assert sum(int(np.isfinite(s.y).sum()) for c in mine for s in c.series), m.key


@pytest.mark.parametrize("title, version", [
    ("#    Intel (R) MPI Benchmark Suite V3.2.4, MPI-1 part    ", "3.2.4"),
    ("#    Intel (R) MPI Benchmarks 4.1 Update 1, MPI-1 part    ", "4.1 Update 1"),
    ("#    Intel (R) MPI Benchmarks 2017 update 2, MPI-1 part    ", "2017 update 2"),
    ("#    Intel(R) MPI Benchmarks 2019 Update 5, MPI-1 part    ", "2019 Update 5"),
    ("#    Intel(R) MPI Benchmarks 2021.7, MPI-1 part    ", "2021.7"),
    ("#    PALLAS MPI Benchmark Suite V2.2, MPI-1 part    ", "2.2"),
])
def test_every_title_form_is_read(title: str, version: str) -> None:
    """The title forms of IMB 3.x to 2021.x and of PMB (3.2.4's and 2021.7's as their
    sources print them; the others as in the corpus)."""
    from beff.bench.importer import parse_header, sniff

    sample = (LOGS.parent / "imb-samples" / "mpi1-np2-pt2pt-time1-quiet.txt").read_text()
    lines = sample.splitlines()
    at = next(i for i, line in enumerate(lines) if "MPI Benchmarks" in line)
    text = "\n".join([*lines[:at], title, *lines[at + 1:]])
    assert sniff(text) is not None and f" {version} text (MPI-1 part)" in (sniff(text) or "")
    h = parse_header(text.splitlines())
    assert (h.version, h.part) == (version, "MPI-1")
