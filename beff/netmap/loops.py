"""``beff map``'s timed loops (compiled by numba, see :mod:`beff.core.capi`): one shift's
bandwidth samples and latency samples on one rank. No Python runs between the MPI calls.

Requests and statuses live in caller-owned scratch (``requests``: addresses of handles,
``hsize`` bytes each; ``statuses``: room for ``window`` statuses); ``flag`` (one int32)
receives MPI_Test's and MPI_Testall's flag. Tags: 0 bandwidth, 1 ping, 2 pong.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from beff.core.capi import F64Array, I32Array, loop

C: Any = None  # the C bindings, substituted by the backend


@loop
def bandwidth_loop(reps: int, window: int, sbuf: int, rbuf: int, nbytes: int, dtype: int,
                   dest: int, src: int, comm: int, requests: int, statuses: int, hsize: int,
                   flag: I32Array, out: F64Array) -> int:
    """``reps`` bandwidth samples, as mpiGraph times them: after a barrier, ``window``
    MPI_Irecv from ``src`` then ``window`` MPI_Isend to ``dest``, polled with MPI_Testall
    until both sides are done; ``out[2i]`` is the seconds until the sends completed,
    ``out[2i+1]`` until the receives did (both from the barrier's end on this rank).
    Returns the OR of the MPI error codes."""
    err = 0
    fa = flag.ctypes.data
    sends = requests + window * hsize
    for i in range(reps):
        err |= C.Barrier(comm)
        t0 = C.Wtime()
        for w in range(window):
            err |= C.Irecv(rbuf + w * nbytes, nbytes, dtype, src, 0, comm,
                           requests + w * hsize)
        for w in range(window):
            err |= C.Isend(sbuf + w * nbytes, nbytes, dtype, dest, 0, comm, sends + w * hsize)
        sent = 0
        got = 0
        t_sent = t0
        t_got = t0
        while sent == 0 or got == 0:
            if sent == 0:
                err |= C.Testall(window, sends, fa, statuses)
                if flag[0] != 0:
                    t_sent = C.Wtime()
                    sent = 1
            if got == 0:
                err |= C.Testall(window, requests, fa, statuses)
                if flag[0] != 0:
                    t_got = C.Wtime()
                    got = 1
        out[2 * i] = t_sent - t0
        out[2 * i + 1] = t_got - t0
    return err


@loop
def latency_loop(reps: int, rounds: int, sbuf: int, rbuf: int, nbytes: int, dtype: int,
                 dest: int, src: int, comm: int, requests: int, statuses: int, hsize: int,
                 flag: I32Array, trips: F64Array, out: F64Array) -> int:
    """``reps`` latency samples: after a barrier, this rank makes ``rounds`` round trips
    with ``dest`` (a ping of ``nbytes`` there, its pong back) while answering every ping
    from ``src`` at once; both roles are polled with MPI_Test, so neither waits for the
    other. Each round trip is timed (``trips``, room for ``rounds``); ``out[i]`` is the
    median of sample i's round trips, in seconds (a few preempted ones do not move it).
    Buffers: ``sbuf`` and ``rbuf`` hold two messages each (ping, pong). Returns the OR of
    the MPI error codes."""
    err = 0
    fa = flag.ctypes.data
    ping_in = requests
    pong_out = requests + hsize
    ping_out = requests + 2 * hsize
    pong_in = requests + 3 * hsize
    for i in range(reps):
        err |= C.Barrier(comm)
        err |= C.Irecv(rbuf, nbytes, dtype, src, 1, comm, ping_in)
        err |= C.Irecv(rbuf + nbytes, nbytes, dtype, dest, 2, comm, pong_in)
        t0 = C.Wtime()
        err |= C.Isend(sbuf, nbytes, dtype, dest, 1, comm, ping_out)
        answered = 0
        done = 0
        answering = 0
        while answered < rounds or done < rounds:
            if answered < rounds:
                err |= C.Test(ping_in, fa, statuses)
                if flag[0] != 0:
                    if answering != 0:
                        err |= C.Wait(pong_out, statuses)
                    err |= C.Isend(sbuf + nbytes, nbytes, dtype, src, 2, comm, pong_out)
                    answering = 1
                    answered += 1
                    if answered < rounds:
                        err |= C.Irecv(rbuf, nbytes, dtype, src, 1, comm, ping_in)
            if done < rounds:
                err |= C.Test(pong_in, fa, statuses)
                if flag[0] != 0:
                    t1 = C.Wtime()
                    trips[done] = t1 - t0
                    err |= C.Wait(ping_out, statuses)
                    done += 1
                    if done < rounds:
                        err |= C.Irecv(rbuf + nbytes, nbytes, dtype, dest, 2, comm, pong_in)
                        t0 = C.Wtime()
                        err |= C.Isend(sbuf, nbytes, dtype, dest, 1, comm, ping_out)
        if answering != 0:
            err |= C.Wait(pong_out, statuses)
        out[i] = np.median(trips[:rounds])
    return err


LOOPS = (bandwidth_loop, latency_loop)
