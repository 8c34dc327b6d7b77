"""``gpu-viz record hardware | scheduling | divergence``: the GPU records the lessons show in CPU mode.

* ``hardware`` -- notebooks 01, 04, 05: latency staircase, bandwidth, occupancy, copy bandwidth,
  launch floor (:func:`gpu_viz.measure.memory.hardware_record`);
* ``scheduling`` -- notebook 09: the deck's 2048-block launch at 256 and 1024 threads per block
  (:func:`gpu_viz.frames.scheduling.summary` of ``gpu_viz.record.scheduling``), with every
  block's %smid and start / end time (:func:`gpu_viz.frames.scheduling.timeline_entry`);
* ``divergence`` -- notebook 03: divergent vs uniform branches (:func:`gpu_viz.claims.divergence.cost`);
* ``probes`` -- notebooks 03, 06, 09, 10, 12: shuffle-step latency, the doubling point, warp order,
  the fp16 load's width, the grid-stride timings, x re-read vs staged in registers
  (:func:`gpu_viz.claims.probes.record`);
* ``exercises`` -- every write-the-kernel exercise's reference solution, graded on this GPU
  (:func:`gpu_viz.exercises.kernel_task.record`): the silicon's verdicts;
* ``decoder`` -- notebook 11's finale: a decoder step with each RMSNorm (:func:`gpu_viz.claims.decoder.record`);
* ``hit-rates`` -- optional, needs ncu: L1/L2 hit rates of notebook 10's two row kernels
  (:func:`gpu_viz.claims.hit_rates.record`);
* ``memory-access`` -- notebooks 07 and 08: the coalescing patterns' and the reduction rungs' GB/s, the
  counts derived from recorded addresses, the race distributions
  (:func:`gpu_viz.claims.memory_access.record`);
* ``memory-counters`` -- needs ncu: notebooks 07 and 08's sector and bank-conflict counters beside the
  emulator's, or why they could not be read (:func:`gpu_viz.claims.memory_access.record_counters`).

Each writes ``<gpu-slug>-<date>-<what>.json`` into ``--out`` (default: the current folder).
"""
from __future__ import annotations

import json
from pathlib import Path

from . import backend
from .measure import records

WHAT = ("hardware", "scheduling", "divergence", "probes", "exercises", "decoder", "hit-rates", "memory-access",
        "memory-counters")


def record(what: str, out=None) -> Path:
    """Measure ``what`` (one of :data:`WHAT`) on this GPU and save its record; returns the path.

    Raises:
        ValueError: unknown ``what``.  GPUUnavailable: in CPU mode.
    """
    if what not in WHAT:
        raise ValueError(f"what must be one of {WHAT}, got {what!r}")
    backend.require_gpu(f"the {what} record")
    if what == "probes":
        from .claims import probes

        return probes.record(out)
    if what == "exercises":
        from .exercises import kernel_task

        return kernel_task.record(out)
    if what == "decoder":
        from .claims import decoder

        return decoder.record(out)
    if what == "hit-rates":
        from .claims import hit_rates

        return hit_rates.record(out)
    if what in ("memory-access", "memory-counters"):
        from .claims import memory_access

        return memory_access.record(out) if what == "memory-access" else memory_access.record_counters(out)
    if what == "hardware":
        from .measure import memory

        rec = records.new_record(rows=[], **memory.hardware_record())
    elif what == "scheduling":
        from .frames import scheduling as frames
        from .record import scheduling as producer

        traces = [producer.trace(threads=t) for t in (256, 1024)]
        runs = [frames.summary(tr) for tr in traces]
        for r in runs:
            print(json.dumps(r))
        # the per-block timelines too: notebook 09 draws the silicon's run from them in CPU mode
        rec = records.new_record([frames.summary_row(r) for r in runs], scheduling=runs[0],
                                 **{frames.TIMELINE_KEY: [frames.timeline_entry(tr) for tr in traces]})
    else:
        from .claims import divergence

        out_ = divergence.cost()
        print(f"divergent / uniform = {out_['ratio']:.2f}x")
        rec = records.new_record(divergence.record_rows(out_), divergence_ratio=out_["ratio"])
    return records.save_record(rec, tag=what, directory=out)


def _cli(args) -> int:
    if not backend.has_gpu():
        print(f"gpu-viz record needs a CUDA GPU: {backend.detect().describe()}")
        return 2
    print(record(args.what, args.out))
    return 0


def register_cli(subparsers) -> None:
    """Add ``gpu-viz record {hardware,...,memory-access,memory-counters} [--out DIR]``."""
    p = subparsers.add_parser("record", help="measure one of the lessons' GPU records and save it",
                              description="Measure one of the lessons' GPU records on this GPU and save it as "
                                          "JSON (the file CPU mode shows, labelled with its GPU and date).  "
                                          "Needs a CUDA GPU.")
    p.add_argument("what", choices=WHAT, help="which record")
    p.add_argument("--out", type=Path, default=Path("."), help="folder for the JSON record (default: here)")
    p.set_defaults(func=_cli)
