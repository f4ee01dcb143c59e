"""``beff import`` of b_eff 3.6's output: its ``.sum`` and ``.prot`` files.

The result is b_eff's summary (:class:`~beff.effbw.record.BeffSummary`, stored as the figures
it holds, :class:`~beff.results.model.StoredSummary`), not a :class:`BeffRecord`: the original
keeps no per-rank loop times, so there is nothing to derive from again. The figures come

* from the ``.sum`` (or the ``.prot``'s last line) as printed: b_eff and its per-process
  share (the final line's three decimals), b_eff at Lmax (rings and random, and rings only),
  the latencies and the ping-pong figures (the summary table);
* from the ``.prot``'s SECTION-VALUES (the minimum over processes of every repetition, length,
  method and pattern, in MB/s with three decimals), through beff's reduction: b_eff per length,
  the ring and random averages, every pattern's bandwidth; and, without a ``.sum``, the
  table's figures too (the latencies then rest on 1-byte bandwidths printed with three
  decimals: only roughly).

Given one of the two files, the other is read when it lies beside it (same name, the other
suffix). The parsers (:func:`parse_sum`, :func:`parse_prot`) and :func:`summary` are pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from beff.effbw.measure import METHOD_LABELS, METHODS
from beff.effbw.record import MB
from beff.patterns import build_patterns, pattern_bandwidth, reduce_beff
from beff.patterns.lengths import MIB
from beff.results.imported import ImportFailure, utc_time
from beff.results.model import RunRecord, StoredSummary

REVISION = re.compile(r"b_eff\.c, Revision (\S+)")
MEMORY = re.compile(r"MEMORY_PER_PROCESSOR = (\d+) MBytes")
FINAL = re.compile(r"^b_eff(\S*) =\s*([\d.]+) MB/s =\s*([\d.]+) \*\s*(\d+) PEs with\s*(\d+) "
                   r"MB/PE on (.*)$", re.M)
ROW = re.compile(r"^\s*(?:(\d+)\s+)?(?:mthd(\d)\s+)?p(\d\d) (min|avg|max)=(.*?)(?:->|$)")
UNAME = ("system name", "hostname", "OS release", "OS version", "machine")


@dataclass
class Head:
    """SECTION-HEAD, as both files print it, and the final line."""

    revision: str = ""
    memory_mib: int = 0
    lengths: list[int] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)  # beff's names
    labels: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    tag: str = ""  # "SHORT" for b_effSHORT
    b_eff: float = float("nan")  # MB/s, accumulated
    b_eff_per_process: float = float("nan")
    nprocs: int = 0
    final_line: str = ""


def sniff(text: str) -> str | None:
    """The format's name when ``text`` is b_eff 3.6's .sum or .prot, else None."""
    head = REVISION.search(text[:2048])
    if head is None or "SECTION-HEAD-BEGIN" not in text:
        return None
    if "SECTION-VALUES-BEGIN" in text:
        return f"b_eff {head.group(1)} .prot"
    if "SECTION-BEFF-END" in text or re.search(r"^accumulated \|", text, re.M):
        return f"b_eff {head.group(1)} .sum"
    return None


def _ranges(text: str) -> dict[str, tuple[int, int]]:
    """``0-5 used for ring pattern average``: the patterns of each kind."""
    out = {}
    for lo, hi, what in re.findall(r"^\s+(\d+)-(\d+)\s+(used for ring|used for random|only "
                                   r"reported)", text, re.M):
        out[{"used for ring": "ring", "used for random": "random"}.get(what, "info")] = \
            (int(lo), int(hi))
    return out


def parse_head(text: str) -> Head:
    """The revision, memory, lengths, methods and patterns of SECTION-HEAD, and the final
    line (b_eff with three decimals)."""
    h = Head()
    if (m := REVISION.search(text)) is not None:
        h.revision = m.group(1)
    if (m := MEMORY.search(text)) is None:
        raise ImportFailure("no MEMORY_PER_PROCESSOR line")
    h.memory_mib = int(m.group(1))
    lengths = re.search(r"^msglng=((?:\s+\d+)+)\s*$", text, re.M)
    if lengths is None:
        raise ImportFailure("no msglng= line (the message lengths)")
    h.lengths = [int(x) for x in lengths.group(1).split()]
    used = re.search(r"Used methods:(.*)$", text, re.M)
    for label in re.findall(r"\d+=(\S+)", used.group(1) if used else ""):
        h.methods.append(METHODS[METHOD_LABELS.index(label)] if label in METHOD_LABELS
                         else label)
    block = text.split("Used patterns:", 1)[1].split("\n\n", 1)[0] if "Used patterns:" in text \
        else ""
    h.labels = [label.rstrip() for _, label in re.findall(r"(\d+)=(\S.{0,16})", block)]
    ranges = _ranges(text)
    for p in range(len(h.labels)):
        h.kinds.append(next((k for k, (lo, hi) in ranges.items() if lo <= p <= hi), "info"))
    finals = FINAL.findall(text)
    if finals:
        tag, beff, per, nprocs, _, _ = finals[-1]
        h.tag, h.b_eff, h.b_eff_per_process, h.nprocs = tag, float(beff), float(per), int(nprocs)
        h.final_line = text.rstrip().splitlines()[-1] if text.rstrip().splitlines()[-1] \
            .startswith("b_eff") else next(m.group(0) for m in FINAL.finditer(text))
    return h


def parse_sum(text: str) -> tuple[Head, dict[str, Any]]:
    """A .sum: its head, and its figures under BeffSummary's keys (with the system, the date
    and the run time)."""
    h = parse_head(text)
    acc = re.search(r"^accumulated \|(.*)$", text, re.M)
    per = re.search(r"^per process \|(.*)$", text, re.M)
    if acc is None:
        raise ImportFailure("no 'accumulated |' row (the summary table)")
    cells = acc.group(1).split()  # P, b_eff, Lmax, "MB", at Lmax, rings, 3 latencies, pp bw
    if len(cells) != 10:
        raise ImportFailure(f"the summary table's row has {len(cells)} fields, not 10")
    nprocs = int(cells[0])
    figures: dict[str, Any] = {
        "nprocs": nprocs,
        "b_eff_lmax_MBps": float(cells[4]), "ring_lmax_MBps": float(cells[5]),
        "latency_us": float(cells[6]), "latency_ring_us": float(cells[7]),
        "pingpong_latency_us": float(cells[8]), "pingpong_bandwidth_MBps": float(cells[9]),
    }
    if per is not None and len(per.group(1).split()) == 3:
        values = [float(x) for x in per.group(1).split()]
        figures.update(b_eff_lmax_per_process_MBps=values[1],
                       ring_lmax_per_process_MBps=values[2])
        if not h.final_line:
            figures["b_eff_per_process_MBps"] = values[0]
    if not h.final_line:
        figures["b_eff_MBps"] = float(cells[1])
    system = dict(re.findall(r"^\s+(system name|hostname|OS release|OS version|machine)"
                             r"\s+: (.*)$", text, re.M))
    figures["uname"] = [system.get(k, "") for k in UNAME]
    run = re.search(r"Total execution wall clock time =\s*([\d.]+) seconds", text)
    if run:
        figures["runtime_s"] = float(run.group(1))
    date = re.search(r"^Date of measurement: (.*)$", text, re.M)
    if date:
        figures["date"] = date.group(1).strip()
    h.nprocs = h.nprocs or nprocs
    return h, figures


def parse_prot(text: str) -> tuple[Head, np.ndarray, int]:
    """A .prot: its head, minbw[rep, length, pattern, method] in bytes/s from SECTION-VALUES
    (NaN where not measured: the ping-pong pair's other methods), and the process count."""
    h = parse_head(text)
    if "SECTION-VALUES-BEGIN" not in text or "SECTION-VALUES-END" not in text:
        raise ImportFailure("no SECTION-VALUES (the per-pattern bandwidths)")
    block = text[text.index("SECTION-VALUES-BEGIN"):text.index("SECTION-VALUES-END")]
    lengths: list[int] = []
    rows: dict[tuple[int, int, int], list[float]] = {}
    method = -1
    for line in block.splitlines():
        m = ROW.match(line)
        if m is None or m.group(4) != "min":
            continue
        if m.group(1):
            lengths.append(int(m.group(1)))
        if m.group(2) is not None:
            method = int(m.group(2))
        rows[(len(lengths) - 1, int(m.group(3)), method)] = [
            np.nan if "---" in tok else float(tok) * MB for tok in m.group(5).split()]
    if not rows or lengths != h.lengths:
        raise ImportFailure("SECTION-VALUES does not list the lengths of SECTION-HEAD")
    npat = 1 + max(k[1] for k in rows)
    nmeth = 1 + max(k[2] for k in rows)
    nrep = max(len(v) for v in rows.values())
    minbw = np.full((nrep, len(lengths), npat, nmeth), np.nan)
    for (li, p, m_), values in rows.items():
        minbw[:len(values), li, p, m_] = values
    sizes = re.search(r"1-dim-paterns: size = (\d+)", text)
    nprocs = int(sizes.group(1)) if sizes else h.nprocs
    if nprocs <= 0:
        raise ImportFailure("the process count is not in the file")
    return h, minbw, nprocs


def derived(h: Head, minbw: np.ndarray, nprocs: int) -> dict[str, Any]:
    """beff's reduction of the .prot's values: BeffSummary's keys (empty when the patterns
    are not b_eff 3.6's at this process count)."""
    # random rings' scales do not depend on the seed; SHORT mode has 6 of them, not 30
    patterns = build_patterns(nprocs, max(1, h.labels.count("random-cyc-1dim")), seed=0)
    if list(patterns.labels) != h.labels or minbw.shape[2] != len(patterns):
        return {}
    b = pattern_bandwidth(np.where(np.isfinite(minbw), minbw, 0.0), patterns.scales())
    res = reduce_beff(b, nprocs=nprocs, kinds=list(patterns.kinds), lengths=h.lengths,
                      pingpong_index=patterns.pingpong_index)
    return {
        "b_eff_MBps": res.b_eff / MB, "b_eff_per_process_MBps": res.b_eff_per_process / MB,
        "b_eff_lmax_MBps": res.b_eff_lmax / MB,
        "b_eff_lmax_per_process_MBps": res.b_eff_lmax / MB / nprocs,
        "ring_lmax_MBps": res.ring_lmax / MB, "ring_lmax_per_process_MBps":
            res.ring_lmax / MB / nprocs,
        "b_ring_MBps": res.b_ring / MB, "b_random_MBps": res.b_random / MB,
        "latency_us": res.latency_us, "latency_ring_us": res.latency_ring_us,
        "latency_ring_text_us": res.latency_ring_text_us,
        "pingpong_latency_us": res.pingpong_latency_us,
        "pingpong_bandwidth_MBps": res.pingpong_bandwidth / MB,
        "per_length": [{"bytes": int(L), "b_eff_MBps": float(res.b_eff_length[i]) / MB,
                        "ring_MBps": float(res.ring_length[i]) / MB,
                        "random_MBps": float(res.random_length[i]) / MB}
                       for i, L in enumerate(h.lengths)],
        "patterns": [{"index": i, "label": h.labels[i], "kind": h.kinds[i],
                      "b_MBps": float(res.b_pattern[i]) / MB, "cross_node_share": None}
                     for i in range(len(h.labels))],
        "repetitions": int(minbw.shape[0]), "warnings": list(res.warnings),
    }


def summary(h: Head, printed: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """BeffSummary's keys: the figures printed, else those of the .prot's values."""
    nprocs = int(printed.get("nprocs") or h.nprocs)
    out: dict[str, Any] = {
        "mode": f"b_eff{h.tag}", "nprocs": nprocs,
        "memory_per_proc_bytes": h.memory_mib * MIB,
        "memory_per_proc_source": f"MEMORY_PER_PROCESSOR of the b_eff {h.revision} build",
        "lmax_bytes": h.lengths[-1] if h.lengths else 0, "lengths": h.lengths,
        "seed": None, "time_per_loop_s": None, "buffers": "",
        "methods": h.methods, "methods_in_b_eff": h.methods,
        "shortened_repetitions": [], "warnings": [],
    }
    out.update(values)
    out.update({k: v for k, v in printed.items() if k not in ("uname", "date")})
    if "latency_ring_us" in printed:  # b_eff prints the ring latency per process too
        out["latency_ring_text_us"] = printed["latency_ring_us"] / nprocs
    if h.final_line:
        out.update(b_eff_MBps=h.b_eff, b_eff_per_process_MBps=h.b_eff_per_process,
                   final_line=h.final_line)
    return out


def _sibling(path: Path, suffix: str) -> Path | None:
    other = path.with_suffix(suffix)
    return other if other != path and other.is_file() else None



def parse(text: str, path: Path) -> RunRecord:
    """A b_eff 3.6 run from its .sum or .prot (``text``, read from ``path``), with the other
    file when it lies beside it."""
    is_prot = "SECTION-VALUES-BEGIN" in text
    other = _sibling(path, ".sum" if is_prot else ".prot")
    sum_text = prot_text = None
    if is_prot:
        prot_text = text
        sum_text = other.read_text(errors="replace") if other else None
    else:
        sum_text = text
        prot_text = other.read_text(errors="replace") if other else None
    printed: dict[str, Any] = {}
    values: dict[str, Any] = {}
    head: Head | None = None
    used = [str(path.resolve())]
    if sum_text is not None and sniff(sum_text):
        head, printed = parse_sum(sum_text)
    if prot_text is not None and sniff(prot_text):
        prot_head, minbw, nprocs = parse_prot(prot_text)
        head = head or prot_head
        values = derived(prot_head, minbw, nprocs)
        printed.setdefault("nprocs", nprocs)
    if other is not None:
        used.append(str(other.resolve()))
    if head is None:
        raise ImportFailure("neither a .sum nor a .prot of b_eff 3.6")
    figures = summary(head, printed, values)
    uname = printed.get("uname") or ["", "", "", "", ""]
    reduced = ("beff's reduction of the .prot's values (the minimum over processes, in MB/s "
               "with three decimals)")
    sources = {
        "headline": "as printed: the .sum's summary table and final line" if "latency_us"
        in printed else f"b_eff as printed in the final line; the rest by {reduced}",
        "per_length_and_patterns": reduced if values else "not imported (no .prot)",
    }
    attrs: dict[str, Any] = {
        "suite": "beff", "nprocs": figures["nprocs"], "status": "complete",
        "created": utc_time(str(printed.get("date", ""))),
        "command_line": ["b_eff"], "placement": {}, "warnings": [],
        "versions": {"b_eff": head.revision},
        "host": {"system": uname[0], "machine": uname[4]},
        "imported": {"files": used, "sources": sources},
    }
    return RunRecord(attrs=attrs, results=[StoredSummary("beff", "beff", figures)])


@dataclass(frozen=True)
class BeffImporter:
    """The importer of b_eff 3.6's .sum and .prot (:class:`beff.results.imported.Importer`)."""

    def sniff(self, text: str) -> str | None:
        return sniff(text)

    def parse(self, text: str, path: Path) -> RunRecord:
        return parse(text, path)


IMPORTER = BeffImporter()
