"""ReFrame checks of beff: b_eff, IMB-MPI1 PingPong and Allreduce, b_eff_io and the network map.

Each check runs one beff job under the partition's launcher (``mpiexec -n 2 beff ... -o
result.h5``), then ``beff show result.h5 -f json > result.json`` beside it, and takes its
sanity and its performance variables from that JSON: the figures ReFrame logs are the ones
``beff show`` prints for the file. ReFrame keeps result.h5 and result.json in the check's
output directory, the run's archive.

The options default to a smoke test that takes seconds on 2 ranks; a site sets its own with
``-S``, e.g. ``-S BeffEffectiveBandwidth.beff_opts='--memory-per-proc 4GiB'`` (README.md).
"""

from __future__ import annotations

import json
import math
import os
import shlex
from typing import Any

import reframe as rfm
from reframe.core.builtins import performance_function, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

RESULT = "result.h5"
JSON = "result.json"


def load_json(path: str) -> dict[str, Any]:
    """beff's JSON document of a run (``beff show FILE -f json``), or a SanityError naming
    what is wrong with the file."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise SanityError(f"{path} is missing: the job script did not get to beff show") from None
    if not text.strip():
        raise SanityError(f"{path} is empty: the run or beff show failed (rfm_job.err says why)")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SanityError(f"{path} is not beff's JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise SanityError(f"{path} has no results list")
    return doc


def only_result(doc: dict[str, Any], suite: str) -> dict[str, Any]:
    """The one result of a b_eff, b_eff_io or map run."""
    results = [r for r in doc["results"] if r.get("suite") == suite]
    if len(results) != 1:
        raise SanityError(f"expected one {suite} result, found {len(results)}")
    return results[0]


def imb_row(doc: dict[str, Any], benchmark: str, nbytes: int) -> dict[str, Any]:
    """The row of an IMB benchmark at a message size (all ranks' figures, IMB's own
    columns: ``t_max_us`` is PingPong's ``t[usec]``, ``t_avg_us`` a collective's
    ``t_avg[usec]``)."""
    for result in doc["results"]:
        if result.get("benchmark") != benchmark:
            continue
        for row in result.get("rows", []):
            if row["bytes"] == nbytes and row["group"] == "all":
                if row["status"] != "ok":
                    raise SanityError(f"{benchmark} at {nbytes} B: status {row['status']}")
                return row
        sizes = [row["bytes"] for row in result.get("rows", [])]
        raise SanityError(f"{benchmark} has no row at {nbytes} B (sizes measured: {sizes})")
    raise SanityError(f"{benchmark} was not measured")


def map_figures(doc: dict[str, Any]) -> dict[str, Any]:
    """The map's headline figures: of the pairs across nodes when the job spans nodes, else
    of the pairs within nodes (one node)."""
    figures = only_result(doc, "map").get("figures") or {}
    for group in ("across nodes", "within nodes"):
        if group in figures:
            return figures[group]
    raise SanityError("the map measured no pair")


class BeffCheck(rfm.RunOnlyRegressionTest):
    """One beff run and its JSON: the pieces every check shares (not a test itself)."""

    #: How the job script calls beff: a name on PATH, a path, or e.g. ``python -m beff``.
    beff_cmd = variable(str, value="beff")
    #: beff's options for this check (split as a shell would); the checks below set theirs.
    beff_opts = variable(str, value="")

    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    num_tasks = 2
    time_limit = "10m"
    keep_files = [RESULT, JSON]
    tags = {"beff"}

    def beff_args(self) -> list[str]:
        """The beff command and its options, before ``-o``."""
        raise NotImplementedError

    @run_before("run")
    def set_command(self) -> None:
        self.executable = self.beff_cmd
        args = [*self.beff_args(), *shlex.split(self.beff_opts), "-o", RESULT, "--force"]
        self.executable_opts = [shlex.quote(a) for a in args]  # the job script is a shell's
        self.postrun_cmds = [f"{self.beff_cmd} show {RESULT} -f json > {JSON}"]

    def doc(self) -> dict[str, Any]:
        """The run's JSON document (read each time: a retried check has a new one)."""
        return load_json(os.path.join(self.stagedir, JSON))

    def expected(self, doc: dict[str, Any]) -> None:
        """Raise SanityError when the document lacks what this check reports."""
        raise NotImplementedError

    @sanity_function
    def validate(self) -> bool:
        doc = self.doc()
        status = doc.get("run", {}).get("status")
        if status != "complete":
            raise SanityError(f"the run's status is {status!r}, not 'complete'")
        self.expected(doc)
        return True


@rfm.simple_test
class BeffEffectiveBandwidth(BeffCheck):
    """b_eff (``beff run``): the effective bandwidth of the whole job, in MB/s."""

    descr = "beff run: b_eff, the effective bandwidth"
    beff_opts = "--quick --memory-per-proc 8MiB --time-per-loop 0.01"
    tags = {"beff", "b_eff", "network"}
    reference = {
        "*": {
            "b_eff": (0, None, None, "MB/s"),
            "b_eff_per_process": (0, None, None, "MB/s"),
            "latency": (0, None, None, "us"),
        }
    }

    def beff_args(self) -> list[str]:
        return ["run"]

    def expected(self, doc: dict[str, Any]) -> None:
        result = only_result(doc, "beff")
        for key in ("b_eff_MBps", "b_eff_per_process_MBps", "latency_us"):
            if not isinstance(result.get(key), (int, float)):
                raise SanityError(f"the b_eff result has no {key}")

    @performance_function("MB/s")
    def b_eff(self) -> float:
        return float(only_result(self.doc(), "beff")["b_eff_MBps"])

    @performance_function("MB/s")
    def b_eff_per_process(self) -> float:
        return float(only_result(self.doc(), "beff")["b_eff_per_process_MBps"])

    @performance_function("us")
    def latency(self) -> float:
        return float(only_result(self.doc(), "beff")["latency_us"])


@rfm.simple_test
class BeffImbMpi1(BeffCheck):
    """IMB-MPI1 (``beff imb mpi1 PingPong Allreduce``): PingPong's latency at a small size and
    bandwidth at a large one (IMB's t[usec] and Mbytes/sec), Allreduce's t_avg at a size."""

    descr = "beff imb mpi1: PingPong latency and bandwidth, Allreduce time"
    #: Message sizes whose figures are reported, in bytes; -msglog must measure them.
    latency_bytes = variable(int, value=0)
    bandwidth_bytes = variable(int, value=65536)
    allreduce_bytes = variable(int, value=1024)
    beff_opts = "-msglog 0:16 -iter 50 -iter_policy off"
    tags = {"beff", "imb", "network"}
    reference = {
        "*": {
            "pingpong_latency": (0, None, None, "us"),
            "pingpong_bandwidth": (0, None, None, "MB/s"),
            "allreduce_t_avg": (0, None, None, "us"),
        }
    }

    def beff_args(self) -> list[str]:
        return ["imb", "mpi1", "PingPong", "Allreduce"]

    def expected(self, doc: dict[str, Any]) -> None:
        imb_row(doc, "PingPong", self.latency_bytes)
        imb_row(doc, "PingPong", self.bandwidth_bytes)
        imb_row(doc, "Allreduce", self.allreduce_bytes)

    @performance_function("us")
    def pingpong_latency(self) -> float:
        return float(imb_row(self.doc(), "PingPong", self.latency_bytes)["t_max_us"])

    @performance_function("MB/s")
    def pingpong_bandwidth(self) -> float:
        return float(imb_row(self.doc(), "PingPong", self.bandwidth_bytes)["mbytes_per_sec"])

    @performance_function("us")
    def allreduce_t_avg(self) -> float:
        return float(imb_row(self.doc(), "Allreduce", self.allreduce_bytes)["t_avg_us"])


@rfm.simple_test
class BeffEffectiveIO(BeffCheck):
    """b_eff_io (``beff io``): the effective I/O bandwidth, in MB/s, of the file system that
    holds ``io_dir``."""

    descr = "beff io: b_eff_io, the effective I/O bandwidth"
    #: Directory of the scratch files: the file system under test (default: the stage
    #: directory).
    io_dir = variable(str, value="")
    beff_opts = "--quick -T 1 --memory-per-proc 2MiB"
    tags = {"beff", "b_eff_io", "io"}
    reference = {
        "*": {
            "b_eff_io": (0, None, None, "MB/s"),
        }
    }

    def beff_args(self) -> list[str]:
        return ["io", *(["--dir", self.io_dir] if self.io_dir else [])]

    def expected(self, doc: dict[str, Any]) -> None:
        result = only_result(doc, "beffio")
        parts = result.get("per_partition") or []
        if not parts or not all(p.get("complete") for p in parts):
            raise SanityError("b_eff_io did not complete every partition")
        if not isinstance(result.get("b_eff_io_MBps"), (int, float)):
            raise SanityError("the b_eff_io result has no b_eff_io_MBps")

    @performance_function("MB/s")
    def b_eff_io(self) -> float:
        return float(only_result(self.doc(), "beffio")["b_eff_io_MBps"])


@rfm.simple_test
class BeffNetworkMap(BeffCheck):
    """The network map (``beff map``): the median bandwidth and latency of the pairs across
    nodes (within the node on one node)."""

    descr = "beff map: bandwidth and latency between the job's nodes"
    beff_opts = "--all-ranks --size 64KiB --time 1 --repetitions 3"
    tags = {"beff", "map", "network"}
    reference = {
        "*": {
            "map_bandwidth": (0, None, None, "MB/s"),
            "map_latency": (0, None, None, "us"),
        }
    }

    def beff_args(self) -> list[str]:
        return ["map"]

    def expected(self, doc: dict[str, Any]) -> None:
        figures = map_figures(doc)
        for key in ("recv_MBps", "latency_us"):
            value = (figures.get(key) or {}).get("median")
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise SanityError(f"the map has no median {key}")

    @performance_function("MB/s")
    def map_bandwidth(self) -> float:
        return float(map_figures(self.doc())["recv_MBps"]["median"])

    @performance_function("us")
    def map_latency(self) -> float:
        return float(map_figures(self.doc())["latency_us"]["median"])
