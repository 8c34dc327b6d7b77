"""The RMSNorm family, one job per file:

* :mod:`.dtypes` -- dtype names, element sizes, the fewest bytes an op must move.
* :mod:`.reference` -- THE float64 reference (forward of both ops, gradients).
* :mod:`.tolerances` -- THE per-dtype tolerance table against it, with its derivation.
* :mod:`.eager` -- the deck's eager module and the seed's eager expression (the baselines).
* :mod:`.deck` -- the deck's four-phase kernel (``kernels/rmsnorm_deck.cu``), launched.
* :mod:`.fused` -- the production fused ops (``kernels/rmsnorm_fused.cu``); public as ``gpu_viz.ops``.
* :mod:`.bench` -- benchmark providers by name and the harness (check, then time).
* :mod:`.report` -- tables, charts and the performance checks of a run or a record.

    y = x * w * rsqrt(mean(x^2, -1) + eps)                 rmsnorm
    y = x * w * silu(g) * rsqrt(mean(x^2, -1) + eps)       rmsnorm_gate (statistic from x only)
"""
