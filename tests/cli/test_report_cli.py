"""``beff report`` and ``beff plot`` without MPI, ``--report`` of the measuring commands, and
their bad input: one line, exit 2."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.mpirun import beff

DATA = Path(__file__).resolve().parents[1] / "data"
IMB, BEFF, BEFFIO = (DATA / f"golden-schema-v3-{k}.h5" for k in ("imb", "beff", "beffio"))


def test_report_and_plot_of_stored_files(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    r = beff("report", str(IMB), str(BEFF), "-o", str(page))
    assert r.returncode == 0, r.stderr
    assert page.read_text(encoding="utf-8").count('<figure class="chart"') == 9
    r = beff("report", str(BEFFIO), cwd=tmp_path)  # default: the file's name, here
    assert r.returncode == 0 and (tmp_path / "golden-schema-v3-beffio.html").is_file()

    from matplotlib.image import imread

    png = tmp_path / "pp.png"
    r = beff("plot", str(IMB), "--benchmark", "pingpong", "-o", str(png))
    assert r.returncode == 0, r.stderr
    pixels = imread(png)
    assert pixels.shape[1] > pixels.shape[0] > 400  # two panels side by side
    assert (pixels[..., :3] < 0.9).any(axis=2).mean() > 0.01  # lines and text, not blank
    pdf = tmp_path / "beff.pdf"
    r = beff("plot", str(BEFF), "-b", "b_eff/length", "-o", str(pdf))
    assert r.returncode == 0 and pdf.read_bytes().startswith(b"%PDF")
    svg = tmp_path / "io.svg"
    r = beff("plot", str(BEFFIO), "-o", str(svg))
    assert r.returncode == 0 and "b_eff_io write on 1 process" in svg.read_text()
    r = beff("plot", str(IMB), "-o", str(svg), "--force")  # several: the first, and a note
    assert r.returncode == 0 and "drew PingPong; the others: Sendrecv, Overlap" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["report", "README"], "cannot read README: "),
    (["plot", "IMB", "-b", "Alltoall", "-o", "OUT/f.png"],
     "has no benchmark 'Alltoall' (it has: PingPong, Sendrecv, Overlap)"),
    (["plot", "IMB", "-o", "OUT/f.jpg"], "-o OUT/f.jpg: give a file ending in .png, .svg or "
                                         ".pdf"),
    (["report", "IMB", "-o", "OUT/missing/r.html"], "-o OUT/missing/r.html: the directory "),
    (["report", "IMB", "-o", "OUT"], "-o OUT: is a directory; give a file name"),
    (["plot", "IMB", "-o", "/proc/version.png"], "cannot write there"),
    (["run", "--quick", "--report", "OUT/missing/r.html"], "--report OUT/missing/r.html: "
                                                           "the directory "),
    (["io", "--quick", "--report", "OUT"], "--report OUT: is a directory"),
    (["imb", "mpi1", "PingPong", "--report", "OUT/x.html", "-o", "OUT/x.html"],
     "--report OUT/x.html: that is the result file (-o)"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                          message: str) -> None:
    """No launcher: every refusal comes before MPI_Init."""
    readme = Path(__file__).resolve().parents[2] / "README.md"
    subst = {"IMB": str(IMB), "README": str(readme)}
    args = [subst.get(a, a.replace("OUT", str(tmp_path))) for a in args]
    r = beff(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("beff: error: "), r.stderr
    assert message.replace("README", str(readme)).replace("OUT", str(tmp_path)) in lines[0]


def test_without_matplotlib_one_line_names_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from beff.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    for args, who in ((["report", str(IMB), "-o", str(tmp_path / "r.html")], "beff report"),
                      (["plot", str(IMB), "-o", str(tmp_path / "f.png")], "beff plot"),
                      (["run", "--report", str(tmp_path / "r.html")], "--report")):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == 2
        assert capsys.readouterr().err == (f"beff: error: {who} needs matplotlib: "
                                           "pip install matplotlib\n")
    assert not (tmp_path / "r.html").exists()
