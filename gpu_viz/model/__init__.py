"""CPU models of the traced kernels: the same Trace, computed warp-synchronously in numpy."""
