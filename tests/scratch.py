"""Scratch directories of the I/O tests: on the disk (the test's tmp_path) or on a tmpfs
(/dev/shm), and empty again when the test ends."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def scratch_dir(kind: str, tmp_path: Path) -> Path:
    """A new empty directory on the disk (``disk``) or on /dev/shm (``tmpfs``)."""
    if kind == "disk":
        path = tmp_path / "io"
    else:
        if not Path("/dev/shm").is_dir():
            pytest.skip("no /dev/shm")
        path = Path(f"/dev/shm/beff-test-{os.getpid()}-{tmp_path.name}")
    path.mkdir()
    return path


@contextmanager
def emptied(path: Path) -> Iterator[Path]:
    """Yield ``path``; then remove it, and fail if the test left files in it."""
    try:
        yield path
    finally:
        left = sorted(p.name for p in path.iterdir())
        for p in path.iterdir():
            p.unlink()
        path.rmdir()
    assert left == []
