"""Shared by the benchmark scripts: find the MPI tools of the running environment."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def find_tool(name: str, prog: str) -> str:
    """``name`` next to the running Python (a venv's MPI wheel), else the first on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        sys.exit(f"{prog}: {name} not found next to {sys.executable} nor on PATH")
    return found
