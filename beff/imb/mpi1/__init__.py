"""IMB-MPI1 kernels: point-to-point and collectives."""
