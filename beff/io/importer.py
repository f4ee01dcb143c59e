"""``beff import`` of b_eff_io 2.1's ``.sum``: every figure it prints, as b_eff_io's summary.

The ``.sum`` holds, per partition size, the bandwidth of every pattern (per access method,
pattern type and chunk size), the per-type totals, the weighted averages, b_eff_io and the
validity criteria, then the maximum and the final line. They are stored as printed
(:class:`~beff.results.model.StoredSummary` in :class:`~beff.io.record.BeffIOSummary`'s keys):
the original keeps no per-rank times to derive them from again. Figures the ``.sum`` does not
print (the write side of b_eff_io, the run time) are absent (null). :func:`parse_sum` is pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beff.io import plan
from beff.io.reduce import ACCESSES, T_CRIT_S, TYPES
from beff.results.imported import ImportFailure, utc_time
from beff.results.model import RunRecord, StoredSummary

MIB = 1 << 20
REVISION = re.compile(r"b_eff_io\.c, Revision (\S+)")
PARTITION = re.compile(r"^Summary of file I/O bandwidth accumulated on\s+(\d+) processes", re.M)
ROW = re.compile(r"^\s*(\d+) PEs (\d)\s+(\d+) (write|rewrite|read)\s+(.*)$")
TOTAL = re.compile(r"^\s*(\d+) PEs\s+total-(write|rewrite|read)\s+(.*)$")
PAT2 = re.compile(r"bw_pat2=\s*(\S+) MB/s write,\s*(\S+) MB/s rewrite,\s*(\S+) MB/s read")
AVERAGE = re.compile(r"^weighted average bandwidth for (write|rewrite|read)\s*:\s*([\d.]+) MB/s",
                     re.M)
TOTAL_DATA = re.compile(r"with each access method:\s*([\d.]+) MBytes")
PERCENT = re.compile(r"=\s*([\d.]+) percent of the total memory")
B_EFF_IO = re.compile(r"^b_eff_io of these measurements =\s*([\d.]+) MB/s", re.M)
CRITERION = re.compile(r"criterion (\d): .* -- (reached|NOT reached)")
ERRORS = re.compile(r"error count \((\d+)\)")
FINAL = re.compile(r"^ ?b_eff_io =\s*([\d.]+) MB/s on (\d+) processes.*$", re.M)
UNAME = ("system name", "hostname", "OS release", "OS version", "machine")


def sniff(text: str) -> str | None:
    """The format's name when ``text`` is b_eff_io's .sum, else None."""
    head = REVISION.search(text[:2048])
    if head is None or PARTITION.search(text) is None:
        return None
    return f"b_eff_io {head.group(1)} .sum"


def _value(token: str) -> float | None:
    return None if token == "-" else float(token)


def _by_type(tokens: list[str]) -> dict[str, float | None]:
    return {t: _value(v) for t, v in zip(TYPES, tokens, strict=False)}


def parse_partition(text: str, nprocs: int) -> dict[str, Any]:
    """One partition's section: PartitionFigures' keys."""
    patterns: dict[str, dict[str, dict[str, float | None]]] = {a: {} for a in ACCESSES}
    totals: dict[str, dict[str, float | None]] = {a: {} for a in ACCESSES}
    rows = [(m.group(4), int(m.group(3)), m.group(5)) for line in text.splitlines()
            if (m := ROW.match(line)) is not None]
    largest = max((chunk for _, chunk, _ in rows), default=0)
    for access, chunk, cells in rows:
        # By the chunk printed, not the row's position: an earlier 2.1 (of 2001) prints an
        # eighth row, 32 bytes, first. The largest chunk is Lmax.
        key = "Lmax" if chunk == largest and chunk > plan.MIB + 8 else str(chunk)
        for tname, value in _by_type(cells.split()).items():
            if value is not None:
                patterns[access].setdefault(tname, {})[key] = value
    for line in text.splitlines():
        if (t := TOTAL.match(line)) is not None:
            totals[t.group(2)] = {k: v for k, v in _by_type(t.group(3).split()).items()
                                  if v is not None}
    if (p := PAT2.search(text)) is not None:
        for access, token in zip(ACCESSES, p.groups(), strict=True):
            value = _value(token)
            if value is not None:
                patterns[access].setdefault("scatter", {})["2MiB_per_call"] = value
    averages = {a: float(v) for a, v in AVERAGE.findall(text)}
    b_eff_io = B_EFF_IO.search(text)
    data = TOTAL_DATA.search(text)
    percent = PERCENT.search(text)
    criteria = {int(k): v == "reached" for k, v in CRITERION.findall(text)}
    errors = ERRORS.search(text)
    valid = "NOT VALID" not in text
    return {
        "nprocs": nprocs, "complete": b_eff_io is not None,
        "measured": any(patterns[a] for a in ACCESSES),
        "write_MBps": averages.get("write"), "rewrite_MBps": averages.get("rewrite"),
        "read_MBps": averages.get("read"), "write_rewrite_MBps": None,
        "b_eff_io_MBps": float(b_eff_io.group(1)) if b_eff_io else None,
        "type_MBps": totals, "patterns_MBps": patterns,
        "bytes_per_access": round(float(data.group(1)) * MIB) if data else 0,
        "percent_of_total_memory": float(percent.group(1)) if percent else None,
        "errors": int(errors.group(1)) if errors else 0, "defects": None, "valid": valid,
        "criteria": {"scheduled_time": criteria.get(1, valid),
                     "shared_file_pointer": criteria.get(2, valid),
                     "no_errors": criteria.get(3, valid)},
    }


def parse_sum(text: str) -> dict[str, Any]:
    """A .sum: BeffIOSummary's keys, with the system and the date."""
    memory = re.search(r"MEMORY_PER_PROCESSOR =\s*(\d+) MBytes", text)
    chunk = re.search(r"Maximum chunk size\s*=\s*([\d.]+) MBytes", text)
    options = re.search(r"^-N\s+(\S+) T=(\d+), MT=(\d+) MBytes(.*)$", text, re.M)
    if memory is None or options is None:
        raise ImportFailure("no MEMORY_PER_PROCESSOR or -N ... T=..., MT=... line")
    flags = options.group(4)
    starts = [m.start() for m in PARTITION.finditer(text)]
    end = text.find("Maximum over all number of PEs")
    sections = [text[a:b] for a, b in zip(starts, [*starts[1:], end if end > 0 else len(text)],
                                           strict=True)]
    partitions = [int(m.group(1)) for m in PARTITION.finditer(text)]
    per_partition = [parse_partition(s, n) for s, n in zip(sections, partitions, strict=True)]
    finals = list(FINAL.finditer(text))
    final = finals[-1] if finals else None
    scheduled = float(options.group(2))
    system = dict(re.findall(r"^\s+(system name|hostname|OS release|OS version|machine)"
                             r"\s+: (.*)$", text, re.M))
    date = re.search(r"^Date of measurement: (.*)$", text, re.M)
    return {
        "mode": "b_eff_io", "nprocs": max(partitions, default=0),
        "partitions": partitions,
        "memory_per_proc_bytes": int(memory.group(1)) * MIB,
        "memory_per_proc_source": "MEMORY_PER_PROCESSOR (b_eff_io -MB)",
        "total_memory_bytes": int(options.group(3)) * MIB,
        "total_memory_source": "b_eff_io -MT",
        "lmax_bytes": round(float(chunk.group(1)) * MIB) if chunk else 0,
        "scheduled_time_s": scheduled,
        "scheduled_time_per_partition_s": scheduled / max(1, len(partitions)),
        "validity_time_s": T_CRIT_S, "rewrite_all": "-rewrite" in flags,
        "shared_file_pointer": "-noshared" not in flags, "unique_open": "-nounique" not in flags,
        "checked": False,
        "b_eff_io_MBps": float(final.group(1)) if final else None,
        "nprocs_at_max": int(final.group(2)) if final else None,
        "valid": final is not None and "NOT VALID" not in final.group(0),
        "per_partition": per_partition, "runtime_s": None, "failure": None,
        "final_line": final.group(0) if final else "b_eff_io = (no complete partition)",
        "uname": [system.get(k, "") for k in UNAME],
        "date": date.group(1).strip() if date else "",
    }



def parse(text: str) -> RunRecord:
    """A b_eff_io run from its .sum."""
    head = REVISION.search(text)
    figures = parse_sum(text)
    uname, date = figures.pop("uname"), figures.pop("date")
    attrs: dict[str, Any] = {
        "suite": "beffio", "nprocs": figures["nprocs"], "status": "complete",
        "created": utc_time(date), "command_line": ["b_eff_io"], "placement": {},
        "warnings": [], "versions": {"b_eff_io": head.group(1) if head else ""},
        "host": {"system": uname[0], "machine": uname[4]},
    }
    return RunRecord(attrs=attrs, results=[StoredSummary("beffio", "beffio", figures)])


@dataclass(frozen=True)
class BeffIOImporter:
    """The importer of b_eff_io's .sum (:class:`beff.results.imported.Importer`)."""

    def sniff(self, text: str) -> str | None:
        return sniff(text)

    def parse(self, text: str, path: Path) -> RunRecord:
        return parse(text)


IMPORTER = BeffIOImporter()
