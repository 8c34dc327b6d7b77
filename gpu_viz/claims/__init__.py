"""The claims the lessons make about the hardware: measured on this GPU (and written to a record by
``gpu-viz record``), read from the committed record in CPU mode, or counted by the emulator --
always with where the number came from.

* :mod:`.memory_access` -- notebook 07's coalescing, banks, races and reduction ladder: the
  emulator's counts anywhere; on a GPU the bandwidths, the counts derived from recorded addresses,
  Nsight Compute's counters and the race distributions.

Below them: :mod:`gpu_viz.measure` (timing, records); the producers they check against
(``record/``, ``model/``, ``frames/``).
"""
