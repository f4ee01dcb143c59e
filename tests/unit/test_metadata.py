"""Installed versions, as the result file records them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("dist", ["numpy", "h5py", "mpi4py", "rich", "typing-extensions",
                                  "Typing_Extensions", "beff", "no-such-dist-here"])
def test_dist_version_reads_what_importlib_metadata_reads(dist: str) -> None:
    from importlib import metadata as im

    from beff.core.versions import dist_version

    try:
        expected: str | None = im.version(dist)
    except im.PackageNotFoundError:
        expected = None
    assert dist_version(dist) == expected


def test_dist_version_takes_the_first_dist_info_on_the_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from beff.core.versions import dist_version

    for where, version in (("a", "1.2.3"), ("b", "9.9")):
        info = tmp_path / where / f"my_pkg-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: my-pkg\nVersion: {version}\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path / "a"),
                                      str(tmp_path / "b")])
    assert dist_version("My.Pkg") == "1.2.3"
