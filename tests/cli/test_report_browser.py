"""The report in a real browser: headless Chromium (Debian's ``chromium``; ``.ci/run`` installs
it) renders the page of the three golden files. From a screenshot: the page is not blank
and the figures' lines are drawn; from the laid-out DOM: every figure is there, with an SVG
of real size and drawn content.

In CI (``CI`` set, as every CI service and ``.ci/run`` set it) this test fails, it does not
skip, when Chromium is missing: the report's promise is that it opens in a browser, and only
a browser can check that. On a machine with only Python and pip it skips, saying why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from beff.api import load
from beff.render import report

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = [DATA / f"golden-schema-v3-{k}.h5" for k in ("imb", "beff", "beffio")]
# Reads every figure's laid-out size and what its SVG drew, into an attribute of <body>
# that --dump-dom prints (the page itself has no script: a copy gets this one).
PROBE = """<script>
const out = [...document.querySelectorAll("figure.chart")].map(f => {
  const svg = f.querySelector("svg"); const box = svg ? svg.getBoundingClientRect() : null;
  return {id: f.dataset.chart, w: box ? box.width : 0, h: box ? box.height : 0,
          drawn: svg ? svg.querySelectorAll("path, use, text").length : 0};
});
document.body.setAttribute("data-probe", JSON.stringify(out));
</script>"""
WIDTH, HEIGHT = 1280, 4000


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    message = "Chromium is missing: apt-get install -y chromium (.ci/run does)"
    if not os.environ.get("CI"):
        pytest.skip(message)
    raise AssertionError(message)


def headless(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
           f"--window-size={WIDTH},{HEIGHT}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_the_report_renders_in_chromium_with_every_figure(tmp_path: Path) -> None:
    records = [load(p) for p in GOLDEN]
    page = report.write(records, GOLDEN, tmp_path / "report.html")
    expected = [c.id for r in records for c in report.charts_of(r)]

    shot = tmp_path / "report.png"
    laid_out = figures_laid_out(tmp_path, page, shot)
    from matplotlib.image import imread

    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    inked = (pixels < 0.85).any(axis=2)
    assert inked.any(axis=1).mean() > 0.3  # text, tables and figures down the page
    c0 = np.array([0x1F, 0x77, 0xB4]) / 255  # matplotlib's first line colour
    assert (np.abs(pixels - c0).max(axis=2) < 0.06).sum() > 500  # lines were drawn
    assert [f["id"] for f in laid_out] == expected and len(expected) == 15
    for f in laid_out:
        assert f["w"] > 400 and f["h"] > 250 and f["drawn"] > 20, f


def figures_laid_out(tmp_path: Path, page: Path, shot: Path | None = None
                     ) -> list[dict[str, Any]]:
    """The page's figures as Chromium lays them out (id, size, drawn marks), read by PROBE;
    with ``shot``, the page's screenshot too, from the same start of Chromium (the probe's
    copy of the page draws what the page draws)."""
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                     encoding="utf-8")
    screenshot = [f"--screenshot={shot}"] if shot is not None else []
    r = headless(tmp_path, *screenshot, "--dump-dom", probe.as_uri())
    assert shot is None or shot.is_file(), r.stderr[-2000:]
    found = re.search(r'data-probe="([^"]*)"', r.stdout)
    assert found, r.stderr[-2000:]
    laid_out: list[dict[str, Any]] = json.loads(
        found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    return laid_out


def test_a_map_page_draws_its_heatmaps_in_chromium(tmp_path: Path) -> None:
    from beff.netmap.record import derive
    from beff.results.model import RunRecord
    from tests.unit.test_map_record import synthetic

    rec = synthetic()  # hostC's sends at 50 MB/s, every other pair at 1 GB/s
    derive(rec)
    record = RunRecord(attrs={"suite": "map"}, results=[rec])
    page = report.write([record], [tmp_path / "map.h5"], tmp_path / "map.html")
    shot = tmp_path / "map.png"
    laid_out = figures_laid_out(tmp_path, page, shot)
    from matplotlib.image import imread

    pixels = imread(shot)[..., :3]
    dark = np.array([0x44, 0x01, 0x54]) / 255  # viridis' low end: hostC's row
    assert (np.abs(pixels - dark).max(axis=2) < 0.06).sum() > 2000
    red = np.array([0xD6, 0x27, 0x28]) / 255  # its outline
    assert (np.abs(pixels - red).max(axis=2) < 0.1).sum() > 200
    assert [f["id"] for f in laid_out] == ["map/recv_bw", "map/send_bw", "map/latency",
                                           "map/nodes"]
    for f in laid_out:
        assert f["w"] > 400 and f["h"] > 300 and f["drawn"] > 20, f


def test_an_imported_imb_log_draws_pingpong_in_chromium(tmp_path: Path) -> None:
    """A real IMB-MPI1 log (IMB 4.1, Open MPI 1.6, 2 ranks: tests/data/real-logs) imported
    and reported: its PingPong figures, from a table that prints only t[usec] and
    Mbytes/sec, are laid out and drawn, as is every other table's."""
    from beff.results import imported

    src = DATA / "real-logs" / "imb-4.1-mpi1-all-openmpi1.6-np2-aarch64-juno.txt"
    out = tmp_path / "juno.h5"
    imported.write(imported.read(src), out)
    record = load(out)
    page = report.write([record], [out], tmp_path / "imported.html")
    laid_out = figures_laid_out(tmp_path, page)
    ids = [f["id"] for f in laid_out]
    assert ids == [c.id for c in report.charts_of(record)]
    assert "mpi1/PingPong/time" in ids and "mpi1/PingPong/bandwidth" in ids, ids
    assert {i.split("/")[1] for i in ids} >= {m.benchmark for m in record.measurements}
    for f in laid_out:
        assert f["w"] > 400 and f["h"] > 250 and f["drawn"] > 20, f
