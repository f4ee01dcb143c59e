"""Fixtures of the MPI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scratch import emptied, scratch_dir


@pytest.fixture(params=["disk", "tmpfs"])
def io_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """An empty I/O directory on the disk or on /dev/shm; it must be empty after the test."""
    with emptied(scratch_dir(request.param, tmp_path)) as path:
        yield path
