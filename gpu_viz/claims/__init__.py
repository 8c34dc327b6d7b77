"""The claims the lessons make about the hardware, measured: each probe timed on this GPU (and
written to a record by ``gpu-viz record``), read from the committed record in CPU mode, or counted by
the emulator, and the teaching text that quotes the number with where it came from.

* :mod:`.probes` -- a shuffle step's cost, the doubling point, warp order, the fp16 load's width,
  the grid-stride timings, where data lives, L2's bandwidth (notebooks 01, 03, 06, 09-12).
* :mod:`.divergence` -- what a divergent branch costs (notebook 03).
* :mod:`.memory_access` -- notebooks 07 and 08: coalescing and banks, races and the reduction ladder: the
  emulator's counts anywhere; on a GPU the bandwidths, the counts derived from recorded addresses,
  Nsight Compute's counters and the race distributions.
* :mod:`.decoder` -- a Llama-style decoder step with each RMSNorm (notebook 11's finale).
* :mod:`.hit_rates` -- L1/L2 hit rates of notebook 10's two row kernels (ncu).
* :mod:`.inflight` -- the deck kernel against Little's law (notebook 11; its exercise grades the same facts).
* :mod:`.text` -- the markdown the notebooks show (``from gpu_viz.claims import text as claims``).

Below them: :mod:`gpu_viz.measure` (timing, records, hardware probes); the producers and models they
check against (``record/``, ``model/``, ``frames/``, ``rmsnorm/``).
"""
