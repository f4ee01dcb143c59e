"""``beff import``: an original program's output (IMB's text, b_eff 3.6's ``.prot``/``.sum``,
b_eff_io 2.1's ``.sum``) as a beff result file, so that ``beff show`` and ``beff compare`` put
old runs of the C programs beside beff's.

Each suite names the reader of its original's output (:attr:`beff.core.suite.Suite.importer`,
an :class:`Importer`); :func:`read` asks each in turn whether the text is its format (by
content, not by the file's name) and lets the first that says yes parse it. An imported run
says so in its ``imported`` attribute: from which file (and its SHA-256), in which format, and
that it has no raw samples: its figures are those the original printed.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path
from typing import Protocol

from beff import __version__
from beff.core import suite as suites
from beff.core.errors import BeffError, UsageError
from beff.results import parts
from beff.results.archive import ResultFile
from beff.results.model import RunRecord

MAX_BYTES = 64 << 20  # larger than any output of these programs
KNOWN = "IMB text, b_eff 3.6 .prot or .sum, b_eff_io .sum"


class ImportFailure(UsageError):
    """A file that is none of the formats beff imports, or that cannot be read: one line,
    exit code 2."""


class Importer(Protocol):
    """The reader of one original program's output."""

    def sniff(self, text: str) -> str | None:
        """The name of the format (e.g. ``IMB 2021.11 text (MPI-1 part)``) when ``text`` is
        one this importer reads, else None."""

    def parse(self, text: str, path: Path) -> RunRecord:
        """The run ``text`` holds, as beff's results and run attributes (``path``: where it
        was read, for files written beside it). Raises ImportFailure."""


def importers() -> list[Importer]:
    """Every suite's importer, once each, in the order of the suites."""
    found: dict[str, Importer] = {}
    for s in suites.suites():
        if s.importer and s.importer not in found:
            found[s.importer] = s.load("importer")
    return list(found.values())


def _text(path: Path) -> tuple[str, str]:
    """The file's text and its SHA-256."""
    try:
        if path.is_dir():
            raise ImportFailure(f"cannot import {path}: it is a directory; give one output "
                                f"file ({KNOWN})")
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ImportFailure(f"cannot import {path}: {size:,} bytes is too large for "
                                f"{KNOWN}")
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFailure(f"cannot import {path}: {exc.strerror or exc}") from None
    return data.decode("utf-8", errors="replace"), hashlib.sha256(data).hexdigest()


def read(path: str | Path) -> RunRecord:
    """The run an original program's output file holds; ImportFailure if it is none of the
    formats beff imports, or holds several runs (:func:`read_all`)."""
    records = read_all(path)
    if len(records) > 1:
        raise ImportFailure(f"cannot import {path}: it holds {len(records)} runs, appended "
                            "one after the other; read_all reads each")
    return records[0]


def read_all(path: str | Path) -> list[RunRecord]:
    """Every run an original program's output file holds, in order (a batch job may append
    several runs to one output); ImportFailure if it is none of the formats beff imports."""
    path = Path(path)
    text, digest = _text(path)
    for importer in importers():
        fmt = importer.sniff(text)
        if fmt is None:
            continue
        try:
            parse_all = getattr(importer, "parse_all", None)
            records = parse_all(text, path) if parse_all is not None else \
                [importer.parse(text, path)]
        except ImportFailure as exc:
            raise ImportFailure(f"cannot import {path} ({fmt}): {exc}") from None
        except (ValueError, IndexError, KeyError, OverflowError) as exc:
            raise ImportFailure(f"cannot import {path}: it looks like {fmt}, but this part "
                                f"does not read: {exc}") from None
        for record in records:
            record.attrs["imported"] = {
                "from": str(path.resolve()), "sha256": digest, "format": fmt,
                "raw_samples": False, "by": f"beff {__version__}",
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **record.attrs.get("imported", {})}
            if len(records) > 1:
                record.attrs["imported"]["runs"] = len(records)
            record.attrs.setdefault("versions", {})["beff"] = __version__
        return records
    raise ImportFailure(f"cannot import {path}: not an output beff imports ({KNOWN})")


def outputs(out: Path, count: int) -> list[Path]:
    """The result files of ``count`` runs imported to ``out``: ``out`` itself for one run,
    else ``NAME-run1.h5``, ``NAME-run2.h5``, ... beside it."""
    if count == 1:
        return [out]
    return [out.with_name(f"{out.stem}-run{k}{out.suffix}") for k in range(1, count + 1)]


def utc_time(date: str) -> str:
    """A date as the C programs print it (``Sun Nov 22 01:50:40 2026``, local time) as
    beff's UTC time stamp; "" when it does not read."""
    try:
        local = time.mktime(time.strptime(date.strip(), "%a %b %d %H:%M:%S %Y"))
    except ValueError:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(local))


def write(record: RunRecord, out: str | Path, force: bool = False) -> None:
    """Store an imported run as a result file (``force``: replace an existing one). Nothing
    is left behind when it fails."""
    result_file = ResultFile(out)
    attrs = {k: v for k, v in record.attrs.items() if k != "status"}
    result_file.create(attrs, record.ranks, exclusive=not force)
    try:
        for result in record.results:
            result_file.add(result)
        result_file.finish(str(record.attrs.get("status", "complete")))
    except BeffError:
        parts.remove(parts.directory(result_file.path, result_file.run_id))
        with contextlib.suppress(OSError):
            result_file.path.unlink()
        raise
