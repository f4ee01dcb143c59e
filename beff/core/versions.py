"""Installed distributions' versions, through :mod:`importlib.metadata`, imported when first
asked (not by ``beff --help``), and without numpy."""

from __future__ import annotations


def dist_version(dist: str) -> str | None:
    """The installed version of distribution ``dist`` (any spelling of its name, as
    importlib.metadata normalizes it: the first on sys.path); None when it is not
    installed."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
