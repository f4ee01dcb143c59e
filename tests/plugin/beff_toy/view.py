"""The toy suite's view: its own text header ("## toy"), a table, CSV per sample, JSON."""

from __future__ import annotations

from typing import Any

import numpy as np
from beff_toy.record import ToyRecord
from rich.console import Console
from rich.table import Table

from beff.render.charts import Chart, Series
from beff.results.model import RunRecord


class ToyView:
    csv_fields = ("sample", "t_slowest_us")
    footer_first = False

    def text_header(self, record: RunRecord) -> str:
        options = record.attrs.get("config", {}).get("options", {})
        return f"## toy: {options.get('iter')} barriers per sample\n"

    def text(self, result: ToyRecord, record: RunRecord) -> str:
        s = result.summary()
        return (f"## toy on {s['nprocs']} ranks: min {s['t_min_us']:.3f} us, median "
                f"{s['t_median_us']:.3f} us, max {s['t_max_us']:.3f} us\n")

    def text_footer(self, record: RunRecord) -> str:
        return "## toy end\n"

    def table(self, result: ToyRecord, record: RunRecord, console: Console) -> None:
        t = Table(title="toy: MPI_Barrier [µs]")
        for col in ("samples", "min", "median", "max"):
            t.add_column(col, justify="right")
        s = result.summary()
        t.add_row(str(s["samples"]), f"{s['t_min_us']:.3f}", f"{s['t_median_us']:.3f}",
                  f"{s['t_max_us']:.3f}")
        console.print(t)

    def csv_rows(self, result: ToyRecord) -> list[dict[str, Any]]:
        slowest = result.seconds.max(axis=1) * 1e6
        return [{"sample": i, "t_slowest_us": float(v)} for i, v in enumerate(slowest)]

    def summary(self, result: ToyRecord, record: RunRecord) -> dict[str, Any]:
        return result.summary()

    def result_warnings(self, result: ToyRecord, record: RunRecord) -> list[str]:
        return []

    def figures(self, result: ToyRecord) -> list[tuple[str, float, bool]]:
        return [("t_median_us", result.summary()["t_median_us"], False)]

    def settings(self, result: ToyRecord) -> list[tuple[str, Any]]:
        return [("iter", result.iters)]

    def charts(self, result: ToyRecord, record: RunRecord) -> list[Chart]:
        slowest = result.seconds.max(axis=1) * 1e6
        return [Chart(id="toy/samples", title=f"MPI_Barrier on {result.nprocs} ranks",
                      xlabel="sample", ylabel="slowest rank [µs]",
                      series=(Series("toy", np.arange(len(slowest)), slowest),),
                      subject="toy", section="toy", xlog=False, ylog=False)]


VIEW = ToyView()
