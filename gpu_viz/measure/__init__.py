"""Timing and records (DESIGN.md section 5), and the lessons' GPU measurements that are not traces.

* :mod:`.timing` -- CUDA events, CUDA-graph replay, spread, buffer rotation, copy bandwidth,
  the launch floor.
* :mod:`.records` -- one JSON file per GPU run: write, find (checkout or installed wheel), load.
* :mod:`.memory` -- the memory hierarchy of ``kernels/memory.cu`` (notebooks 01, 04).
* :mod:`.divergence` -- what divergence costs (``kernels/divergence.cu``, notebook 03).
* :mod:`.lessons` -- ``gpu-viz record hardware | scheduling | divergence``: the records the
  lessons show in CPU mode.
"""
