"""Infrastructure for measuring on a GPU (DESIGN.md section 5): it imports nothing of the lessons.

* :mod:`.timing` -- CUDA events, CUDA-graph replay, spread, buffer rotation, copy bandwidth,
  the launch floor.
* :mod:`.records` -- one JSON file per GPU run: write, find (checkout or installed wheel), load;
  which GPU a lesson describes (:func:`.records.lesson_device`, the one answer).
* :mod:`.memory` -- the memory hierarchy of ``kernels/memory.cu``: latency, bandwidth, occupancy,
  the hardware record.
* :mod:`.facts` -- the hardware facts lessons compute from: live once per process, else recorded.

The lessons' own measurements (probes, the decoder step, divergence's cost, hit rates) and the
teaching text quoting them are :mod:`gpu_viz.claims`; ``gpu-viz record`` is :mod:`gpu_viz.record_cli`.
"""
