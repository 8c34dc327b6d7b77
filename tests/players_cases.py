"""The animated lessons' players, built as the notebooks build them, for tests/test_players*.py.

Each case is ``(name, build)``; ``build()`` returns ``(animation, trace_or_result)``.  Two sources
per lesson:

* ``model``: the CPU model's trace (what a CPU-mode deck shows);
* ``record``: the committed GPU records where they hold what the player draws --
  04 takes the DRAM latency recorded on the H200 (benchmarks/results/*-hardware.json), 07 the
  H200's SM count and occupancy from the same record.  The per-thread lessons (03, 06, 09) have
  no committed per-thread record; their ``record`` case is the trace shape the GPU producer
  returns (``source="gpu"``), filled from the model's arrays and labelled as such, so the GPU
  code paths of the frames (titles, provenance) are drawn and checked.
"""
import dataclasses

import numpy as np

from gpu_viz import backend, kernels
from gpu_viz.frames import latency as latency_frames
from gpu_viz.frames import reduction as reduction_frames
from gpu_viz.frames import scheduling as scheduling_frames
from gpu_viz.lessons import (BANKS, COALESCING, DIVERGENCE, GRID_STRIDE, RACES, REDUCTION_LADDER, RMSNORM_DECK,
                             SCHEDULING, VECTOR_ADD)
from gpu_viz.measure import records
from gpu_viz.model import latency as latency_model
from gpu_viz.model import reduction as reduction_model
from gpu_viz.model import scheduling as scheduling_model
from gpu_viz.trace import GPU_SOURCE
from gpu_viz.widgets import Animation

#: The label of the GPU-shaped fixtures (never passed off as a recording).
FIXTURE_LABEL = "test fixture: the GPU producer's trace shape, filled from the CPU model"


def gpu_shaped(trace):
    """``trace`` as the GPU producer returns it (``source="gpu"``), labelled as a fixture."""
    return dataclasses.replace(trace, source=GPU_SOURCE, provenance=FIXTURE_LABEL)


def _recorded():
    rec, label = records.recorded_hardware()
    assert rec is not None, "benchmarks/results/ has no *-hardware.json record"
    return rec, label


def vector_add(kind):
    tr = VECTOR_ADD.trace(seed=11, n=64, block=64)
    tr = gpu_shaped(tr) if kind == "record" else tr
    return VECTOR_ADD.animation(tr), tr


def divergence(kind):
    tr = DIVERGENCE.trace(seed=12, n=64, block=64, iters=8)
    tr = gpu_shaped(tr) if kind == "record" else tr
    return DIVERGENCE.animation(tr), tr


def grid_stride(kind):
    tr = GRID_STRIDE.trace(seed=13, n=2500, grid=1, block=1024)
    tr = gpu_shaped(tr) if kind == "record" else tr
    return GRID_STRIDE.animation(tr), tr


def latency(kind):
    if kind == "record":
        rec, label = _recorded()
        L, src = int(round(rec["dram_latency"]["cycles_per_load"])), label
    else:
        L, src = 200, "the deck's ~200 cycles"
    tr = latency_model.simulate(8, L, 16, 2, latency_source=src)
    snip = kernels.snippet("memory.cu", "stream_read_loop")
    lines = {latency_model.LOAD: snip.line_of("float4 v"), latency_model.COMPUTE: snip.line_of("acc +=")}
    anim = Animation(latency_frames.frames(tr, count=12, source_lines=lines),
                     title="MODEL: a warp scheduler switching among 8 warps", provenance=tr.provenance,
                     source=snip.text, interval_ms=700)
    return anim, tr


def scheduling(kind):
    if kind == "record":
        rec, _label = _recorded()
        tr = scheduling_model.trace(2048, 256, 20000, info=records.device_of(rec))
    else:
        tr = SCHEDULING.trace(blocks=2048, threads=256, spin_cycles=20000)
    return scheduling_frames.animation(tr, frames=10), tr      # as notebook 09 calls it: the default source


def rmsnorm_deck(kind):
    tr = RMSNORM_DECK.trace(seed=9, d=2048, block=1024)
    tr = gpu_shaped(tr) if kind == "record" else tr
    return RMSNORM_DECK.animation(tr, warp=5), tr


def rmsnorm_deck_stale(kind):
    tr = RMSNORM_DECK.trace(seed=4, d=2048, block=256, variant="deck", prefill=True)
    tr = gpu_shaped(tr) if kind == "record" else tr
    return RMSNORM_DECK.animation(tr, kinds=["handoff", "w0"], title="The deck's phase 2 at 256 threads"), tr


def seed_tree(kind):
    ones = np.ones(96, np.float32)
    res = reduction_model.seed_reduce(ones)
    if kind == "record":   # the GPU producer returns no "weight": the frames compute it from the model
        res = {k: v for k, v in res.items() if k != "weight"}
    return reduction_frames.animation(ones, res, corrected=False, provenance=backend.MODEL_LABEL), res


def coalescing(kind):
    tr = COALESCING.trace(seed=14, pattern="misaligned", n=256, block=128)
    tr = gpu_shaped(tr) if kind == "record" else tr
    return COALESCING.animation(tr), tr


def banks(kind):
    tr = BANKS.trace(seed=15, case="tile 32x32", rows=64, cols=96)
    tr = gpu_shaped(tr) if kind == "record" else tr
    return BANKS.animation(tr), tr


def races(kind):
    # notebook 08's launch; the emulator's seeded interleavings in CPU mode (no per-run GPU record is committed)
    tr = RACES.trace(seed=16, kernel="histogram_racy", runs=8, grid=4, block=128, nbins=256, n=2048)
    tr = gpu_shaped(tr) if kind == "record" else tr
    return RACES.animation(tr), tr


def reduction_ladder(kind):
    tr = REDUCTION_LADDER.trace(seed=17, rung="strided", block=128)
    tr = gpu_shaped(tr) if kind == "record" else tr
    return REDUCTION_LADDER.animation(tr), tr


CASES = {"vector_add": vector_add, "divergence": divergence, "grid_stride": grid_stride, "latency": latency,
         "scheduling": scheduling, "rmsnorm_deck": rmsnorm_deck, "rmsnorm_deck_stale": rmsnorm_deck_stale,
         "seed_tree": seed_tree, "coalescing": coalescing, "banks": banks, "races": races,
         "reduction_ladder": reduction_ladder}
KINDS = ("model", "record")
