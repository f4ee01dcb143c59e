"""b_eff's MPI side; the pure math is beff.patterns."""
