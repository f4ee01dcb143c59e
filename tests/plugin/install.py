"""Install the toy plug-in as a user installs a plug-in: a wheel whose metadata declares its
suites in the entry-point group ``beff.suites``, installed by pip (into a directory the tests
put on PYTHONPATH, so the test environment itself stays as it was)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).resolve().parent / "beff_toy"
NAME, VERSION = "beff_toy", "0.1"
ENTRY_POINTS = "[beff.suites]\ntoy = beff_toy.suite:SUITE\ntoyrun = beff_toy.suite:RUN\n"


def _record(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def wheel(directory: Path) -> Path:
    """The plug-in as a wheel (PEP 427) in ``directory``."""
    info = f"{NAME}-{VERSION}.dist-info"
    files = {f"{NAME}/{p.name}": p.read_bytes() for p in sorted(SOURCE.glob("*.py"))}
    files[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
                                 "Requires-Dist: beff\n").encode()
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: beff-tests\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{info}/entry_points.txt"] = ENTRY_POINTS.encode()
    record = [_record(n, d) for n, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = directory / f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def install(target: Path) -> Path:
    """pip-install the plug-in into ``target`` (no dependency resolution, no index)."""
    target.mkdir(parents=True, exist_ok=True)
    built = wheel(target.parent)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-index", "--disable-pip-version-check", "--target", str(target),
                    str(built)], check=True, capture_output=True, timeout=120)
    return target


def env(site: Path) -> dict[str, str | None]:
    """The environment of a command that sees the installed plug-in."""
    return {"PYTHONPATH": str(site)}


def installed(tmp_path_factory: Any) -> Iterator[Path]:
    """A module fixture's body: the plug-in pip-installed, and importable in the tests' own
    process too (its records load through its declarations)."""
    target = install(tmp_path_factory.mktemp("plugin") / "site")
    sys.path.insert(0, str(target))
    import beff_toy.suite  # noqa: F401  (registers the toy suites in this process)

    yield target
    sys.path.remove(str(target))
