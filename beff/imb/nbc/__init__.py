"""IMB-NBC (nonblocking collectives) and IMB-MPI4 (persistent collectives), measured with IMB's
overlap method (see :mod:`beff.imb.nbc.common`)."""
