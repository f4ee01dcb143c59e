"""Test helper: a suite's text header, rendered through the suite's declared view."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from beff.core import suite as suites
from beff.results.model import RunRecord


def imb_header(attrs: dict[str, Any], names: Iterable[str]) -> str:
    """IMB's global header of the suite named in ``attrs["config"]``, listing ``names``."""
    view = suites.get(attrs["config"]["suite"]).load("view")
    text: str = view.text_header(RunRecord(attrs={**attrs, "benchmarks": list(names)}))
    return text
