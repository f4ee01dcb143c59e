"""No command replaces or damages an input, and a damaged input or a broken matplotlib is one
line (issue: hardening round 3, items 1 and 3). Without MPI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.mpirun import beff, beff_subprocess

DATA = Path(__file__).resolve().parents[1] / "data"
IMB = DATA / "golden-schema-v3-imb.h5"


@pytest.fixture
def result(tmp_path: Path) -> Path:
    path = tmp_path / "R.h5"
    shutil.copyfile(IMB, path)
    return path


def _one_line(r: object, *parts: str) -> str:
    assert r.returncode == 2, r.stderr  # type: ignore[attr-defined]
    lines = r.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("beff: error: "), lines
    for part in parts:
        assert part in lines[0], lines[0]
    return str(lines[0])


@pytest.mark.parametrize("command, extra", [("report", []), ("plot", []),
                                            ("report", ["--force"]), ("plot", ["--force"])])
def test_an_input_is_never_the_output(result: Path, command: str, extra: list[str]) -> None:
    before = result.read_bytes()
    _one_line(beff(command, str(result), "-o", str(result), *extra),
              f"-o {result}: that is an input file")
    # The same file by another name: a hard link and a relative path.
    link = result.with_name("same.png" if command == "plot" else "same.html")
    link.hardlink_to(result)
    _one_line(beff(command, str(IMB), str(result), "-o", str(link), *extra), "input file")
    assert result.read_bytes() == before


@pytest.mark.parametrize("command, name", [("report", "page.html"), ("plot", "fig.svg")])
def test_an_existing_output_needs_force(result: Path, command: str, name: str) -> None:
    out = result.with_name(name)
    out.write_text("mine\n")
    _one_line(beff(command, str(result), "-o", str(out)),
              f"-o {out}: the file exists", "--force")
    assert out.read_text() == "mine\n"
    r = beff(command, str(result), "-o", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert out.read_text() != "mine\n" and "<svg" in out.read_text() or command == "report"
    assert "<html" in out.read_text().lower() or command == "plot"
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(".")]


def test_the_default_page_name_is_not_replaced_silently(result: Path) -> None:
    assert beff_subprocess("report", str(result), cwd=result.parent).returncode == 0
    page = result.with_suffix(".html")
    before = page.read_bytes()
    _one_line(beff_subprocess("report", str(result), cwd=result.parent), "the file exists")
    assert page.read_bytes() == before


@pytest.mark.parametrize("command", ["report", "plot"])
def test_an_empty_output_name_is_refused(result: Path, command: str) -> None:
    _one_line(beff_subprocess(command, str(result), "-o", "", cwd=result.parent),
              "-o: the file name is empty")
    assert sorted(p.name for p in result.parent.iterdir()) == ["R.h5"]


def _damage(path: Path, offset: int, length: int = 512) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(b"\xff" * length)


@pytest.mark.parametrize("offset", [2000, 5000, 10000, 20000, 40000])
@pytest.mark.parametrize("command", [["show"], ["show", "-f", "json"], ["report"], ["plot"],
                                     ["compare", str(IMB)]])
def test_a_damaged_file_is_one_line(result: Path, offset: int, command: list[str]) -> None:
    _damage(result, offset)
    args = [command[0], *command[1:], str(result)]
    if command[0] in ("report", "plot"):
        args += ["-o", str(result.with_name("out.html" if command[0] == "report" else "o.png"))]
    r = beff(*args)
    line = _one_line(r, f"cannot read {result}: it is damaged or truncated")
    assert "Traceback" not in r.stderr and line.count("\n") == 0


def test_a_damaged_file_says_where(result: Path) -> None:
    _damage(result, 20000)
    _one_line(beff("show", str(result)), "(at /results/")


def test_a_truncated_and_a_foreign_file_are_one_line(tmp_path: Path) -> None:
    cut = tmp_path / "cut.h5"
    cut.write_bytes(IMB.read_bytes()[:3000])
    _one_line(beff("show", str(cut)), "it is damaged or truncated", "truncated file")
    text = tmp_path / "text.h5"
    text.write_text("not a result\n")
    _one_line(beff("show", str(text)), "it is not a beff result")


def test_a_broken_matplotlib_is_one_line(result: Path, tmp_path: Path) -> None:
    """A matplotlib that is installed but fails on import (here a package earlier on the
    path that raises, as a half-upgraded install does)."""
    broken = tmp_path / "site" / "matplotlib"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('libfoo.so: cannot open shared "
                                        "object file')\n")
    env = {"PYTHONPATH": str(broken.parent)}
    for command, out in (("report", "r.html"), ("plot", "f.png")):
        r = beff_subprocess(command, str(result), "-o", str(tmp_path / out), env=env)
        _one_line(r, f"beff {command}: matplotlib is installed but cannot be loaded",
                  "libfoo.so")
        assert not (tmp_path / out).exists()
