"""``beff report``'s page, built from the golden files without a browser: self-contained,
a header per run, a figure per declared chart, overlays with significance marks, and the
status of a run that did not complete."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from beff.api import load
from beff.render import report
from beff.render.plot import SIGNIFICANT
from beff.results.model import Measurement, RunRecord

DATA = Path(__file__).resolve().parents[1] / "data"
IMB, BEFF, BEFFIO = (DATA / f"golden-schema-v3-{k}.h5" for k in ("imb", "beff", "beffio"))


def figures_in(page: str) -> list[str]:
    """The chart ids of the page's figures, each checked to hold one inline SVG."""
    blocks = re.findall(r'<figure class="chart" id="figure-\d+" data-chart="([^"]+)">\s*'
                        r"(<svg.*?</svg>)", page, flags=re.S)
    return [cid for cid, svg in blocks if "<path" in svg]


def test_a_page_of_three_files_is_self_contained_with_every_figure(tmp_path: Path) -> None:
    paths = [IMB, BEFF, BEFFIO]
    records = [load(p) for p in paths]
    out = report.write(records, paths, tmp_path / "r.html")
    page = out.read_text(encoding="utf-8")
    expected = [c.id for r in records for c in report.charts_of(r)]
    assert len(expected) == 15
    assert figures_in(page) == expected
    assert page.count("<svg") == len(expected)
    for forbidden in ("<script", "<link", "<img", "<iframe", " src=", "@import", "url(http"):
        assert forbidden not in page, forbidden
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # every figure's ids are its own
    for text in ("beff imb mpi1 PingPong Sendrecv", "2 nodes, 1 to 2 ranks per node",
                 "hostA: ranks 0-1; hostB: ranks 2", "Golden MPI 1.0 (MPI 4.1",
                 "jit backend", "Wtime 30 ns", "2026-11-22 00:00:00 UTC",
                 "<th>oversubscribed</th><td>no</td>", "Headline figures: b_eff",
                 "<td>b_eff [MB/s]</td><td>99.071</td>", "Headline figures: b_eff_io",
                 "<h2>IMB-MPI1</h2>", "<h2>b_eff</h2>", "<h2>b_eff_io</h2>"):
        assert text in page, text
    assert "status incomplete" not in page


def _batches(record: RunRecord, factor: float, seed: int) -> RunRecord:
    """The IMB golden run with 10 batches per size (the golden file has 2; a test needs 3),
    1 % noise, and PingPong's size 4 ``factor`` times longer."""
    rng = np.random.default_rng(seed)
    out = []
    for m in record.results:
        if not isinstance(m, Measurement):
            out.append(m)
            continue
        iters = np.repeat(m.batch_iters[:, :, :1], 10, axis=2)
        noise = rng.normal(1.0, 0.01, iters.shape)

        def spread(samples: np.ndarray, iters: np.ndarray = iters,
                   m: Measurement = m, noise: np.ndarray = noise) -> np.ndarray:
            per_iter = np.nanmean(samples / m.batch_iters, axis=2, keepdims=True)
            return per_iter * iters * noise

        samples = spread(m.samples)
        if m.benchmark == "PingPong":
            samples[3] *= factor
        more = {name: spread(value) for name, value in m.more_samples.items()}
        out.append(dataclasses.replace(m, samples=samples, batch_iters=iters,
                                       more_samples=more))
    return dataclasses.replace(record, results=out)


def test_two_runs_overlay_with_a_ratio_panel_marking_what_differs(tmp_path: Path) -> None:
    base = _batches(load(IMB), 1.0, 1)
    slower = tmp_path / "slower.h5"
    shutil.copy(IMB, slower)
    page = report.build([base, _batches(load(IMB), 1.5, 2)], [IMB, slower])
    assert figures_in(page) == ["mpi1/PingPong/time", "mpi1/PingPong/bandwidth",
                                "mpi1/Sendrecv/time", "mpi1/Sendrecv/bandwidth",
                                "golden/Overlap/time"]
    pingpong = page[page.index('data-chart="mpi1/PingPong/time"'):
                    page.index('data-chart="mpi1/PingPong/bandwidth"')]
    assert "golden-schema-v3-imb: np=2" in pingpong and "slower: np=2" in pingpong
    assert SIGNIFICANT in pingpong and "each run / golden-schema-v3-imb" in pingpong
    sendrecv = page[page.index('data-chart="mpi1/Sendrecv/time"'):]
    assert SIGNIFICANT not in sendrecv  # equal there
    same = report.build([base, base], [IMB, IMB])
    assert SIGNIFICANT not in same and "1:golden-schema-v3-imb: np=2" in same


@pytest.mark.parametrize("status, needle", [
    ("failed", "this run ended early with an error: the page shows the 3 results"),
    ("running", "the page shows the 3 results"),
])
def test_a_run_that_did_not_complete_says_so(tmp_path: Path, status: str,
                                             needle: str) -> None:
    path = tmp_path / f"{status}.h5"
    shutil.copy(IMB, path)
    with h5py.File(path, "a") as f:
        f.attrs["status"] = status
    page = report.build([load(path)], [path])
    assert 'class="status incomplete"' in page and needle in page
    assert len(figures_in(page)) == 5


def test_a_file_without_results_gives_a_page_that_says_so(tmp_path: Path) -> None:
    record = load(IMB)
    record.results = []
    page = report.build([record], [IMB])
    assert "No figures" in page and figures_in(page) == []


def test_size_and_number_labels() -> None:
    from beff.render.plot import number_label, size_label

    assert [size_label(v) for v in (0, 1, 16, 1024, 65536, 1 << 20, 3 << 30)] == \
        ["0", "1", "16", "1K", "64K", "1M", "3G"]
    assert [number_label(v) for v in (0.5, 2, 300, 2500, 1e4, 1e6, 0.001)] == \
        ["0.5", "2", "300", "2500", "$10^{4}$", "$10^{6}$", "$10^{-3}$"]
    assert number_label(float(np.nan)) == ""
