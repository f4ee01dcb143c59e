"""Run b_eff's driver on real MPI ranks with a fake loop timer (``mpiexec -n 2 python -m
tests.mpi.beff_fake_timer OUT.json``), for the 60-second rule's test.

Every iteration "takes" 1 us below Lmax / 4 and 2 s from there on, so the third-largest
length predicts far more than 60 s for the last two and the rule fires; no message moves.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from beff.core import mpi as _mpi
from beff.core.config import build_config
from beff.effbw import measure as effbw


def main(out: str) -> None:
    MPI = _mpi.init()
    cfg = build_config({"memory_per_proc": 64 << 20, "seed": 5, "suite": "beff"})
    ranks = MPI.COMM_WORLD.allgather({"memory_bytes": 0, "local_size": 1})
    plan = effbw.make_plan(cfg, ranks)
    plan.repetitions = 3

    calls = [0]

    def fake_run(self: effbw.Loops, method: int, b: effbw.Bound, length: int, lindex: int,
                 iterations: int, pre: int, where: str) -> float:
        calls[0] += 1  # a little slower every call: no two repetitions measure alike
        return iterations * (2.0 if length >= plan.lmax // 4 else 1e-6) * (1 + 1e-6 * calls[0])

    effbw.Loops.run = fake_run  # type: ignore[method-assign]
    bench = effbw.Beff(MPI, plan, lambda _: None, lambda r, st: None, stall=600.0)
    bench.run()
    st = bench.state
    last = len(plan.lengths) - 1
    if MPI.COMM_WORLD.Get_rank() == 0:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({
                "shortened": st.shortened.tolist(),
                "looplng_last_two": st.looplng[:, last - 1:, :].tolist(),
                "rep2_equals_rep0_at_lmax": bool(np.array_equal(st.bw_local[2, last],
                                                                st.bw_local[0, last])),
                "rep1_equals_rep0_at_lmax": bool(np.array_equal(st.bw_local[1, last],
                                                                st.bw_local[0, last])),
                "best": st.best.tolist(),
            }, fh)


if __name__ == "__main__":
    main(sys.argv[1])
