"""IMB-MT: AllReduceMT, BarrierMT, BcastMT, BiBandMT, ExchangeMT, PingPingMT, PingPongMT,
ReduceMT, SendRecvMT and UniBandMT, with several threads per rank under MPI_THREAD_MULTIPLE,
each thread on its own duplicate of MPI_COMM_WORLD."""
