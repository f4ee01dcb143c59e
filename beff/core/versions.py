"""Installed distributions' versions, without importlib.metadata where it can be done
(its import alone costs a run's start 15 ms) and without numpy (``beff --help`` asks)."""

from __future__ import annotations

import functools
import os
import re
import sys


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def dist_version(dist: str) -> str | None:
    """The installed version of distribution ``dist``; None when it is not installed.

    The ``NAME-VERSION.dist-info`` directory that installers write on sys.path answers
    first, found by its name as importlib.metadata finds it; importlib.metadata itself, whose
    import alone costs a run 15 ms, answers where there is none (an egg, say)."""
    found = _dist_infos(tuple(sys.path)).get(_normalized(dist))
    if found is not None:
        return found
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=4)
def _dist_infos(path: tuple[str, ...]) -> dict[str, str]:
    """Normalized name -> version of every ``.dist-info`` directory on ``path``, the first on
    the path winning (the directories are listed once, not once per distribution asked)."""
    versions: dict[str, str] = {}
    for entry in path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip file, or gone
            continue
        for name in names:
            if name.endswith(".dist-info"):
                project, sep, version = name[: -len(".dist-info")].rpartition("-")
                if sep:
                    versions.setdefault(_normalized(project), version)
    return versions
