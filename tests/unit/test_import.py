"""``beff import``: the original programs' outputs as beff result files (no MPI).

Every IMB 2021.11 sample is imported, stored, read back and printed again by ``beff show
--format imb``: each table row must come back character for character. b_eff 3.6's and
b_eff_io 2.1's reference runs must give the figures their .sum printed.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from beff.bench import importer as imb_importer
from beff.effbw import importer as beff_importer
from beff.io import importer as beffio_importer
from beff.render import compare, view
from beff.results import imported
from beff.results.archive import load
from beff.results.model import Measurement, RunRecord
from tests.mpirun import beff, beff_in_process

DATA = Path(__file__).resolve().parents[1] / "data"
IMB = sorted((DATA / "imb-samples").glob("*.txt")) + sorted((DATA / "imported").glob("*.txt"))
BEFF_RUNS = ["np2-run1", "np2-run2", "np4", "np2-short"]  # np2-short: b_effSHORT (6 random rings)
BEFFIO_RUNS = ["np2", "np3", "np4"]


def imported_file(src: Path, tmp_path: Path) -> tuple[Path, RunRecord]:
    """``src`` imported into a result file, and that file read back."""
    out = tmp_path / (src.name + ".h5")
    imported.write(imported.read(src), out)
    return out, load(out)


def table_rows(text: str) -> list[str]:
    """IMB's table rows: the lines that are neither comments nor blank, up to the end of
    the run (a sample may have a shell's lines after it)."""
    text = text.split("# All processes entering MPI_Finalize")[0]
    return [line.rstrip() for line in text.splitlines() if line.strip()
            and not line.startswith("#")]


def test_the_samples_are_the_shared_reference_files() -> None:
    shared = Path("/work/shared/data/imb-2021.11-samples")
    if not shared.is_dir():
        pytest.skip("the shared reference data is not on this machine")
    assert sorted(p.name for p in IMB) == sorted(p.name for p in shared.glob("*.txt"))
    for p in IMB:
        assert p.read_bytes() == (shared / p.name).read_bytes()


@pytest.mark.parametrize("src", IMB, ids=[p.stem for p in IMB])
def test_every_imb_sample_prints_its_rows_again(src: Path, tmp_path: Path) -> None:
    _, record = imported_file(src, tmp_path)
    part = src.name.split("-")[0] if not src.name.startswith("format-sample") else \
        src.name.split("-")[2]
    assert record.suite == {"imb": "io"}.get(part, part)
    original = table_rows(src.read_text())
    assert len(original) > 3
    assert table_rows(view.render(record, "imb") or "") == original
    for m in record.measurements:
        assert m.samples.shape[-1] == 0 and m.batch_iters.shape[-1] == 0
        assert np.isnan(m.times).all() and m.printed


def test_the_json_and_csv_carry_the_printed_figures(tmp_path: Path) -> None:
    _, record = imported_file(DATA / "imb-samples" / "mpi1-np2-pt2pt-time1-quiet.txt",
                              tmp_path)
    doc = json.loads(view.render(record, "json") or "")
    origin = doc["run"]["imported"]
    assert origin["raw_samples"] is False
    assert origin["format"] == "IMB 2021.11 text (MPI-1 part)"
    assert origin["from"].endswith("mpi1-np2-pt2pt-time1-quiet.txt")
    assert len(origin["sha256"]) == 64
    sendrecv = next(r for r in doc["results"] if r["benchmark"] == "Sendrecv")
    row = next(r for r in sendrecv["rows"] if r["bytes"] == 4194304)
    # "      4194304           10       683.33       683.55       683.44     12272.21"
    assert (row["repetitions"], row["t_min_us"], row["t_max_us"], row["t_avg_us"],
            row["mbytes_per_sec"]) == (10, 683.33, 683.55, 683.44, 12272.21)
    pingpong = next(r for r in doc["results"] if r["benchmark"] == "PingPong")
    first = pingpong["rows"][0]  # IMB printed t (the t_max) only: no t_min, no t_avg
    assert (first["t_max_us"], first["t_min_us"], first["t_avg_us"]) == (1.52, None, None)
    csv = view.render(record, "csv") or ""
    assert "mpi1,Sendrecv,2,1,all,4194304,10,683.33,683.55,683.44,12272.21,,ok" in csv


def test_the_table_says_it_was_imported_and_has_no_samples(tmp_path: Path) -> None:
    _, record = imported_file(DATA / "imb-samples" / "format-sample-mt-np2.txt", tmp_path)
    console = Console(record=True, width=200)
    view.table(record, console)
    text = console.export_text()
    assert "imported from" in text and "format-sample-mt-np2.txt" in text
    assert "no raw samples" in text and "cv = spread" not in text
    assert "PingPongMT" in text and "12.94" in text
    m = record.measurements[0]
    assert (m.suite, m.kind, m.attrs["threads"]) == ("mt", "parallel_transfer", 1)
    assert "# #processes = 2 (threads: 1)" in (view.render(record, "imb") or "")


def test_multi_groups_and_time_outs_come_back(tmp_path: Path) -> None:
    _, record = imported_file(DATA / "imb-samples" / "format-sample-mpi1-np4-multi1.txt",
                              tmp_path)
    by_key = {m.key: m for m in record.measurements}
    biband = by_key["mpi1/Biband/np2-multi1"]
    assert biband.ngroups == 2 and biband.status == ["ok", "ok", "time-out"]
    assert biband.printed["msg_per_sec"][:2].tolist() == [[135844, 141877], [150848, 101694]]
    assert biband.world_ranks.tolist() == [0, 1, 2, 3]
    assert biband.group.tolist() == [0, 0, 1, 1]
    assert by_key["mpi1/Uniband/np4-multi1"].status[-1] == "time-out"


def test_an_imported_text_compares_with_itself(tmp_path: Path) -> None:
    _, a = imported_file(DATA / "imb-samples" / "mpi1-np2-pt2pt-time1-quiet.txt", tmp_path)
    rows = compare.compare_records(a, a)
    assert len(rows) == 4 * 24  # PingPong, PingPing (t), Sendrecv, Exchange (t_avg)
    assert all(r.ratio == 1.0 and not r.samples and not r.significant for r in rows)
    pingpong = next(r for r in rows if r.benchmark == "PingPong" and r.nbytes == 4194304)
    assert pingpong.a_us == 991.55  # its t, the t_max
    assert not compare.mismatches(a.attrs, a.attrs)


def test_the_format_is_told_by_content_not_by_name(tmp_path: Path) -> None:
    texts = {
        "imb": (DATA / "imb-samples" / "format-sample-p2p-np2.txt").read_text(),
        "sum": (DATA / "beff-3.6-reference" / "np2-run1" / "b_eff.sum").read_text(),
        "prot": (DATA / "beff-3.6-reference" / "np2-run1" / "b_eff.prot").read_text(),
        "io": (DATA / "beffio-2.1-reference" / "np2" / "b_eff_io.sum").read_text(),
    }
    sniffers = {"imb": imb_importer.sniff, "sum": beff_importer.sniff,
                "prot": beff_importer.sniff, "io": beffio_importer.sniff}
    for name, text in texts.items():
        found = {k for k, sniff in sniffers.items() if sniff(text)}
        assert found == ({"sum", "prot"} if name in ("sum", "prot") else {name}), name
    assert beff_importer.sniff(texts["sum"]) == "b_eff 3.6.0.1 .sum"
    assert beff_importer.sniff(texts["prot"]) == "b_eff 3.6.0.1 .prot"
    assert beffio_importer.sniff(texts["io"]) == "b_eff_io 2.1 .sum"
    disguised = tmp_path / "b_eff.sum"  # IMB's text under b_eff's name
    disguised.write_text(texts["imb"])
    assert imported.read(disguised).suite == "p2p"


def _printed_sum(text: str) -> tuple[list[str], list[str], str]:
    acc = re.search(r"^accumulated \|(.*)$", text, re.M)
    per = re.search(r"^per process \|(.*)$", text, re.M)
    assert acc and per
    return acc.group(1).split(), per.group(1).split(), text.rstrip().splitlines()[-1]


@pytest.mark.parametrize("run", BEFF_RUNS)
def test_b_eff_figures_are_those_of_the_sum(run: str, tmp_path: Path) -> None:
    folder = tmp_path / run
    shutil.copytree(DATA / "beff-3.6-reference" / run, folder)
    _, record = imported_file(folder / "b_eff.sum", tmp_path)
    acc, per, final = _printed_sum((folder / "b_eff.sum").read_text())
    s = json.loads(view.render(record, "json") or "")["results"][0]
    figures = [s["nprocs"], s["b_eff_MBps"], s["b_eff_lmax_MBps"], s["ring_lmax_MBps"],
               s["latency_us"], s["latency_ring_us"], s["pingpong_latency_us"],
               s["pingpong_bandwidth_MBps"]]
    printed = [acc[0], acc[1], acc[4], acc[5], acc[6], acc[7], acc[8], acc[9]]
    formats = ["{:d}", "{:.0f}", "{:.0f}", "{:.0f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.0f}"]
    assert [f.format(x) for f, x in zip(formats, figures, strict=True)] == printed
    line = re.search(r"= +([\d.]+) MB/s = +([\d.]+) \*", final)
    assert line and (s["b_eff_MBps"], s["b_eff_per_process_MBps"]) == (
        float(line.group(1)), float(line.group(2)))
    assert s["final_line"] == final
    assert [f"{x:.0f}" for x in (s["b_eff_lmax_per_process_MBps"],
                                 s["ring_lmax_per_process_MBps"])] == per[1:]
    # The .prot beside it gives what the .sum does not print: per length and per pattern.
    labels = re.findall(r"\b\d+=\S", (folder / "b_eff.sum").read_text()
                        .split("Used patterns:")[1].split("\n\n")[0])
    assert len(s["per_length"]) == 21 and len(s["patterns"]) == len(labels) >= 22
    assert record.attrs["imported"]["files"] == [str((folder / "b_eff.sum").resolve()),
                                                 str((folder / "b_eff.prot").resolve())]
    text = view.render(record, "sum") or ""
    assert _printed_sum(text)[0] == acc and text.rstrip().splitlines()[-1] == final


def test_a_prot_alone_gives_b_eff_from_its_final_line(tmp_path: Path) -> None:
    src = tmp_path / "b_eff.prot"
    shutil.copy(DATA / "beff-3.6-reference" / "np2-run1" / "b_eff.prot", src)
    _, record = imported_file(src, tmp_path)
    s = json.loads(view.render(record, "json") or "")["results"][0]
    acc, _, final = _printed_sum((DATA / "beff-3.6-reference" / "np2-run1" / "b_eff.sum")
                                 .read_text())
    assert s["final_line"] == final and s["b_eff_MBps"] == 1716.621
    # The rest is beff's reduction of the .prot's values (see test_beff_reference).
    assert f"{s['b_eff_lmax_MBps']:.0f}" == acc[4] and s["repetitions"] == 3
    assert "no .prot" not in json.dumps(record.attrs["imported"])
    assert record.attrs["imported"]["sources"]["headline"].startswith("b_eff as printed")


def test_a_sum_alone_has_no_per_length_figures(tmp_path: Path) -> None:
    src = tmp_path / "old.sum"
    shutil.copy(DATA / "beff-3.6-reference" / "np4" / "b_eff.sum", src)
    out, record = imported_file(src, tmp_path)
    s = json.loads(view.render(record, "json") or "")["results"][0]
    assert s["per_length"] == [] and s["b_ring_MBps"] is None and s["seed"] is None
    assert s["b_eff_MBps"] == 65.992 and s["latency_us"] == 468.910
    console = Console(record=True, width=160)
    view.table(record, console)
    text = console.export_text()
    assert "seed" not in text and "b_eff =     65.992" in text
    assert "per message length" not in text and "log-avg of ring patterns   " in text
    assert compare.compare_figures(record, record)[0] == ("b_eff_MBps", 65.992, 65.992, True)
    assert out.exists()


@pytest.mark.parametrize("run", BEFFIO_RUNS)
def test_b_eff_io_sum_comes_back(run: str, tmp_path: Path) -> None:
    src = DATA / "beffio-2.1-reference" / run / "b_eff_io.sum"
    _, record = imported_file(src, tmp_path)
    text = view.render(record, "sum") or ""

    def lines(t: str) -> list[str]:
        body = t[t.index("Summary of file I/O"):]
        return [x.rstrip() for x in body.splitlines() if x.strip()
                and not x.startswith(("(For gnuplot:)", "  set "))]

    assert lines(text) == lines(src.read_text())
    s = json.loads(view.render(record, "json") or "")["results"][0]
    stdout = (DATA / "beffio-2.1-reference" / run / "stdout.txt")
    final = src.read_text().rstrip().splitlines()[-1]
    assert s["final_line"] == final
    if stdout.exists():
        assert final.strip() in stdout.read_text()
    assert s["b_eff_io_MBps"] == float(final.split()[2])
    assert s["per_partition"][0]["write_rewrite_MBps"] is None  # not printed
    assert s["partitions"] == [p["nprocs"] for p in s["per_partition"]]


def _main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """beff's main in this process; starting MPI would fail the test (import needs none)."""
    r = beff_in_process(*args)
    capsys.readouterr()
    return r.returncode, r.stdout, r.stderr


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    not_imb = tmp_path / "notes.txt"
    not_imb.write_text("hello\n")
    title_only = tmp_path / "title.txt"
    title_only.write_text("#    Intel(R) MPI Benchmarks 2021.11, MPI-1 part\n"
                          "# Benchmarking PingPong\n")
    unknown_part = tmp_path / "part.txt"
    unknown_part.write_text((DATA / "imb-samples" / "format-sample-p2p-np2.txt").read_text()
                            .replace("IMB-P2P part", "IMB-XYZ part"))
    no_table = tmp_path / "b_eff.sum"
    no_table.write_text("\n".join(line for line in (DATA / "beff-3.6-reference" / "np2-run1"
                                                     / "b_eff.sum").read_text().splitlines()
                                  if not line.startswith("accumulated")))
    src = DATA / "imb-samples" / "format-sample-p2p-np2.txt"
    exists = tmp_path / "exists.h5"
    exists.write_bytes(b"x")
    cases = [
        ([str(not_imb)], "not an output beff imports"),
        ([str(tmp_path / "missing.txt")], "No such file"),
        ([str(tmp_path)], "is a directory"),
        ([str(title_only)], "without a benchmark table"),
        ([str(unknown_part)], "IMB-XYZ part is not a component"),
        ([str(no_table)], "summary table"),
        ([str(src), "-o", str(tmp_path / "no" / "dir.h5")], "output directory does not exist"),
        ([str(src), "-o", str(exists)], "use --force"),
        ([str(src), "-o", str(tmp_path)], "is a directory"),
        ([str(src), "--bogus"], "No such option"),
    ]
    for args, needle in cases:
        code, out, err = _main(["import", *args], capsys)
        assert code == 2, (args, err)
        assert err.count("\n") == 1 and err.startswith("beff: error: ") and needle in err, \
            (args, err)
        assert out == ""
    assert exists.read_bytes() == b"x"
    assert not list(tmp_path.glob("*.h5.*")) and not list(tmp_path.glob(".*parts"))


def test_import_then_show_and_compare_from_the_command_line(tmp_path: Path) -> None:
    src = tmp_path / "pt2pt.txt"
    shutil.copy(DATA / "imb-samples" / "mpi1-np2-pt2pt-time1-quiet.txt", src)
    r = beff("import", str(src))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    out = tmp_path / "pt2pt.h5"
    assert out.exists() and "4 results written to" in r.stderr
    r = beff("show", str(out), "--format", "imb")
    assert r.returncode == 0 and table_rows(r.stdout) == table_rows(src.read_text())
    r = beff("compare", str(out), str(out), env={"COLUMNS": "200"})
    assert r.returncode == 0 and "geometric mean of B/A over 96 sizes: 1.000" in r.stdout
    assert "no samples" in r.stdout
    r = beff("import", str(src))  # the result file exists now
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--force" in r.stderr
    assert beff("import", str(src), "--force").returncode == 0


def test_imported_and_measured_measurements_meet_in_compare(tmp_path: Path) -> None:
    """A run of beff and an imported text compare size by size (t_max where IMB printed t)."""
    _, old = imported_file(DATA / "imb-samples" / "mpi1-np2-pt2pt-time1-quiet.txt", tmp_path)
    m = old.measurements[0]
    S = len(m.sizes)
    times = np.repeat((np.asarray(m.printed["t"][:, 0]) * 2e-6)[:, None], 2, axis=1)
    new = Measurement(
        suite="mpi1", benchmark="PingPong", kind="single_transfer", nprocs=2, ngroups=1,
        multi=None, idle=0, sizes=m.sizes, repetitions=m.repetitions, status=m.status,
        times=times, group=np.zeros(2, dtype=np.int64), world_ranks=np.arange(2),
        samples=times[..., None] * m.repetitions[:, None, None], batch_iters=np.repeat(
            m.repetitions[:, None, None], 2, axis=1), time_scale=0.5)
    rows = compare.compare_records(old, RunRecord(attrs={"suite": "mpi1"}, results=[new]))
    assert len(rows) == S and all(r.ratio == pytest.approx(2.0) for r in rows)
    assert not any(r.samples for r in rows)
