"""``beff report``: one self-contained HTML page of one or more result files.

A header per run (machine, nodes and ranks per node, oversubscription, MPI library, beff
version, timed-loop backend and its cost, date, command line, status and warnings), the
headline figures of each result (``View.figures``), and every figure the suites' views
declare (``View.charts``), drawn as inline SVG by :mod:`beff.render.plot`: charts of the
same id overlaid across the files, with a ratio panel against the first file (heatmaps side
by side instead, one per file). No scripts, no external files, nothing fetched: the page
opens in any browser, also offline.
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from beff import __version__
from beff.core.metadata import format_cpus
from beff.render import common, plot
from beff.render.charts import Chart, Figure, collect
from beff.render.compare import kind_of_run
from beff.render.view import view_of
from beff.results import startup, warnings
from beff.results.model import RunRecord

CSS = """
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 0 auto;
       max-width: 1320px; padding: 12px 20px 40px; color: #1a1a1a; background: #fff; }
h1 { font-size: 1.5em; margin: 0.4em 0 0.1em; }
h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; padding-bottom: 2px; margin-top: 1.6em; }
p.generated { color: #666; font-size: 0.85em; margin-top: 0; }
.runs { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr));
        gap: 12px; }
.run { border: 1px solid #ccc; border-radius: 4px; padding: 6px 10px; }
.run h3 { margin: 4px 0 6px; font-size: 1.05em; }
table { border-collapse: collapse; font-size: 0.85em; }
table.meta th { text-align: left; padding: 1px 10px 1px 0; vertical-align: top;
                color: #444; font-weight: 600; white-space: nowrap; }
table.meta td { padding: 1px 0; word-break: break-word; }
table.figures th, table.figures td { border-bottom: 1px solid #e3e3e3; padding: 2px 10px;
                                     text-align: right; }
table.figures th:first-child, table.figures td:first-child { text-align: left; }
.status { padding: 6px 10px; margin: 6px 0; border-radius: 4px; font-weight: 600; }
.status.incomplete { background: #fff3cd; border: 1px solid #e0b000; }
ul.warnings { margin: 4px 0; padding-left: 18px; color: #7a4b00; font-size: 0.85em; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr));
        gap: 14px; }
figure.chart { margin: 0; border: 1px solid #d0d7de; border-radius: 4px; padding: 4px;
               background: #fff; }
figure.chart svg { display: block; width: 100%; height: auto; }
figcaption { font-size: 0.78em; color: #555; padding: 2px 4px 0; }
"""


def run_labels(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Each run's name in legends: its file name without .h5 (numbered when two match)."""
    stems = [Path(p).name.removesuffix(".h5") for p in paths]
    return [f"{i + 1}:{s}" if stems.count(s) > 1 else s for i, s in enumerate(stems)]


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _date(attrs: dict[str, Any]) -> str:
    created = str(attrs.get("created", "?"))
    return created.replace("T", " ").replace("Z", " UTC")


NOT_RECORDED = "not recorded"  # what an imported text does not say (nodes, MPI library)


def _nodes(record: RunRecord) -> str:
    """Nodes, and the ranks on each (hosts and rank lists)."""
    where = record.attrs.get("placement", {})
    nodes: dict[Any, list[dict[str, Any]]] = {}
    for r in record.ranks:
        nodes.setdefault(r.get("node", r.get("host")), []).append(r)
    if not nodes:  # an imported text: no ranks, and what the file says of its nodes
        known, names = where.get("nodes"), [str(h) for h in where.get("hosts") or []]
        if known is None and not names:
            return NOT_RECORDED
        count = len(names) if known is None else int(known)
        return f"{count} node{'s' if count != 1 else ''}" + (
            f": {', '.join(names)}" if names else "")
    per = [len(m) for m in nodes.values()]
    head = (f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}, "
            + (f"{per[0]} ranks per node" if len(set(per)) == 1
               else f"{min(per)} to {max(per)} ranks per node"))
    parts = []
    for members in nodes.values():
        hosts = "+".join(dict.fromkeys(str(r.get("host", "?")) for r in members))
        parts.append(f"{hosts}: ranks {format_cpus(sorted(int(r['rank']) for r in members))}")
    return head + " (" + "; ".join(parts) + ")"


STATUS_TEXT = {
    "running": "this run was still going when its file was read (or it was killed before "
               "it could close the file): the page shows the {n} results written so far",
    "aborted": "this run was aborted: the page shows the {n} results written before",
    "failed": "this run ended early with an error: the page shows the {n} results "
              "measured before",
}


def status_line(record: RunRecord) -> str:
    """What the page says about a run that did not complete ("" for a complete one)."""
    status = str(record.attrs.get("status", "complete"))
    if status == "complete":
        return ""
    text = STATUS_TEXT.get(status, "status {status}: the page shows the {n} results written")
    line = text.format(n=len(record.results), status=status)
    note = record.attrs.get("status_note")
    return line + (f" ({note})" if note else "")


def header(record: RunRecord, path: str | os.PathLike[str], label: str) -> str:
    """One run's header: what ran where, with what, when, and how it ended."""
    a = record.attrs
    host = a.get("host", {})
    mpi = a.get("mpi", {})
    lib = str(mpi.get("library_version", "?")).replace("\x00", "").strip().splitlines()
    where = a.get("placement", {})
    over = where.get("oversubscribed", a.get("oversubscribed"))
    rows = [
        ("file", os.fspath(path)),
        ("suite", kind_of_run(record)),
        ("date", _date(a)),
        ("command line", " ".join(a.get("command_line", [])) or "?"),
        ("machine", " ".join(str(host.get(k, "")) for k in ("system", "release", "machine"))
         .strip() or "?"),
        ("nodes", _nodes(record)),
        ("processes", a.get("nprocs", "?")),
        ("oversubscribed", "yes: more ranks than allowed cores on a node" if over
         else "no" if over is not None else NOT_RECORDED),
        ("MPI library", f"{lib[0] if lib and lib[0] else NOT_RECORDED} "
                        f"(MPI {mpi.get('standard_version', '?')}, "
                        f"thread level {mpi.get('thread_level', '?')})"),
        ("beff", a.get("versions", {}).get("beff", "?")),
        # the row names it: the line without its own "timed loops: "
        ("timed loops", common.overhead_line(a).removeprefix("timed loops: ") or NOT_RECORDED),
        ("status", a.get("status", "?")),
    ]
    phases = startup.phases(record.ranks)
    if phases:
        rows.append(("start-up", startup.line(phases).removeprefix(
            "start-up (median, max over ranks): ") + " (median, max over ranks)"))
    if "io" in a:
        fsi = a["io"].get("file_system", {})
        rows.append(("I/O", f"{a['io'].get('directory', '?')}: {fsi.get('fstype', '?')} on "
                            f"{fsi.get('mount_point', '?')}, MPI-IO "
                            f"{a['io'].get('mpiio', '?')}"))
    out = [f'<div class="run"><h3>{_e(label)}</h3>']
    line = status_line(record)
    if line:
        out.append(f'<div class="status incomplete">{_e(line)}</div>')
    out.append('<table class="meta">')
    out += [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows]
    out.append("</table>")
    found = warnings.of_record(record)
    if found:
        out.append('<ul class="warnings">' + "".join(f"<li>warning: {_e(w)}</li>"
                                                      for w in found) + "</ul>")
    out.append("</div>")
    return "\n".join(out)


UNITS = {"MBps": "MB/s", "us": "µs"}
WORDS = {"recv": "receive bandwidth", "send": "send bandwidth", "min": "minimum",
         "max": "maximum"}


def figure_name(view: Any, key: str) -> str:
    """A headline figure's name in words with its unit ("b_eff at Lmax [MB/s]", not
    ``b_eff_lmax_MBps``): the view's own (``figure_label``), or made from the key's parts
    (``recv_MBps_median``: "receive bandwidth median [MB/s]")."""
    label = getattr(view, "figure_label", None)
    if label is not None:
        return str(label(key))
    parts = key.split("_")
    unit = next((UNITS[p] for p in parts if p in UNITS), None)
    text = " ".join(WORDS.get(p, p) for p in parts if p not in UNITS)
    return f"{text} [{unit}]" if unit else text


def headline(records: Sequence[RunRecord], labels: Sequence[str]) -> str:
    """The results' headline figures (``View.figures``): a table per kind of run, a column
    per run of that kind and, with several, the ratio of each to the first ("" when no
    result has any)."""
    kinds: dict[str, list[int]] = {}
    for k, record in enumerate(records):
        kinds.setdefault(kind_of_run(record), []).append(k)
    out = []
    for kind, members in kinds.items():
        values: dict[str, list[float | None]] = {}
        for i, k in enumerate(members):
            view = view_of(records[k])
            for result in records[k].results:
                for name, value, _ in view.figures(result):
                    values.setdefault(figure_name(view, name), [None] * len(members))[i] = \
                        value
        if not values:
            continue
        names = [labels[k] for k in members]
        cols = [_e(n) for n in names] + [f"{_e(n)} / {_e(names[0])}" for n in names[1:]]
        out += [f"<h2>Headline figures: {_e(kind)}</h2>",
                '<table class="figures"><tr><th>figure</th>'
                + "".join(f"<th>{c}</th>" for c in cols) + "</tr>"]
        for name, vs in values.items():
            cells = [f"{v:,.3f}" if v is not None else "-" for v in vs]
            cells += [f"{v / vs[0]:.3f}" if v is not None and vs[0] else "-" for v in vs[1:]]
            out.append(f"<tr><td>{_e(name)}</td>" + "".join(f"<td>{c}</td>" for c in cells)
                       + "</tr>")
        out.append("</table>")
    if out:
        out.append('<p class="generated">MB/s with MB = 10^6 B; µs: microseconds.</p>')
    return "\n".join(out)


def charts_of(record: RunRecord) -> list[Chart]:
    """Every chart the suite's view declares for the run's results (none for a plug-in view
    without ``charts``)."""
    view = view_of(record)
    make = getattr(view, "charts", None)
    if make is None:
        return []
    out: list[Chart] = []
    for result in record.results:
        out += make(result, record)
    return out


def figures_of(records: Sequence[RunRecord], labels: Sequence[str]) -> list[Figure]:
    return collect([charts_of(r) for r in records], labels)


def caption(figure: Figure, kinds: Sequence[str], sig: plot.Significance) -> str:
    """The chart's note; with several runs, those of its kind that lack it, and what the
    ratio panel shows (its significance marks where it has any)."""
    chart = figure.chart
    parts = [chart.note] if chart.note else []
    if figure.run is not None:  # a heatmap: one run's, not overlaid (charts.collect)
        return "; ".join(parts)
    present = [k for k, r in enumerate(figure.runs) if r is not None]
    missing = [figure.labels[k] for k, r in enumerate(figure.runs)
               if r is None and kinds[k] in {kinds[i] for i in present}]
    if missing:
        parts.append("not in " + ", ".join(missing))
    if len(present) > 1:
        # marks need batches on both sides (an imported text has none, and its series no
        # compare key), and a difference beff compare finds significant
        marks = plot.significant_points(figure, sig)
        parts.append(f"lower panel: each run over {figure.labels[present[0]]}, on a log "
                     "scale" + ("; black stars: significant differences (beff compare's "
                                "check)" if marks else ""))
    return "; ".join(parts)


def build(records: Sequence[RunRecord], paths: Sequence[str | os.PathLike[str]]) -> str:
    """The page of ``records`` (read from ``paths``), as HTML text."""
    labels = run_labels(paths)
    kinds = [kind_of_run(r) for r in records]
    figures = figures_of(records, labels)
    sig = plot.significance(records) if len(records) > 1 else {}
    title = "beff report: " + ", ".join(labels)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>",
           f'<p class="generated">made by beff {_e(__version__)} on '
           f"{_e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}; times in µs, "
           "bandwidths in MB/s with MB = 10^6 B</p>",
           "<h2>Runs</h2>", '<div class="runs">']
    out += [header(r, p, lb) for r, p, lb in zip(records, paths, labels, strict=True)]
    out.append("</div>")
    out.append(headline(records, labels))
    sections: dict[str, list[Figure]] = {}
    for f in figures:
        sections.setdefault(f.chart.section or "Figures", []).append(f)
    n = 0
    for name, members in sections.items():
        out.append(f"<h2>{_e(name)}</h2>")
        out.append('<div class="grid">')
        for f in members:
            n += 1
            out.append(f'<figure class="chart" id="figure-{n}" data-chart="{_e(f.chart.id)}">')
            out.append(plot.svg(f, sig, f"f{n}"))
            text = caption(f, kinds, sig)
            if text:
                out.append(f"<figcaption>{_e(text)}</figcaption>")
            out.append("</figure>")
        out.append("</div>")
    if not figures:
        out.append("<h2>Figures</h2><p>No figures: the files hold no measured result.</p>")
    out.append("</body></html>\n")
    return "\n".join(out)


def write(records: Sequence[RunRecord], paths: Sequence[str | os.PathLike[str]],
          out: str | os.PathLike[str]) -> Path:
    """Render the page and write it to ``out`` (replaced in one rename)."""
    target = Path(out)
    text = build(records, paths)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
