"""The animated lessons' players, built as the notebooks build them, for tests/test_players*.py.

Every player a lesson lists (``LessonCases.players`` in gpu_viz/lessons.py: a name, a launch and
the player's options) is a case ``(name, build)``; ``build(kind)`` returns ``(animation, trace)``.
Two kinds per player:

* ``model``: the lesson's CPU-mode trace (what a CPU-mode deck shows);
* ``record``: the trace shape the GPU producer returns (``source="gpu"``), filled from the CPU
  trace's arrays and labelled as a fixture, so the GPU code paths of the frames (titles,
  provenance) are drawn and checked -- the per-thread lessons have no committed per-thread record.
  Where a committed GPU record holds what a player draws, the ``record`` kind draws the record
  instead (:data:`RECORDED`): notebook 04's DRAM latency and notebook 09's SM count and occupancy,
  from the H200's hardware record (benchmarks/results/*-hardware.json).  A lesson without a GPU
  producer and without such a record draws its CPU trace in both kinds.
"""
import dataclasses

from gpu_viz.lessons import LATENCY, LESSONS, SCHEDULING
from gpu_viz.measure import records
from gpu_viz.trace import GPU_SOURCE

#: The label of the GPU-shaped fixtures (never passed off as a recording).
FIXTURE_LABEL = "test fixture: the GPU producer's trace shape, filled from the CPU model"
KINDS = ("model", "record")


def gpu_shaped(trace):
    """``trace`` as the GPU producer returns it (``source="gpu"``), labelled as a fixture."""
    return dataclasses.replace(trace, source=GPU_SOURCE, provenance=FIXTURE_LABEL)


def _recorded():
    rec, label = records.recorded_hardware()
    assert rec is not None, "benchmarks/results/ has no *-hardware.json record"
    return rec, label


def _recorded_latency(launch):
    """Notebook 04's run at the DRAM latency the H200 record holds (the model's latency, labelled)."""
    rec, label = _recorded()
    return LATENCY.trace(**dict(launch, latency_cycles=int(round(rec["dram_latency"]["cycles_per_load"])),
                                latency_source=label))


def _recorded_scheduling(launch):
    """Notebook 09's launch, modelled on the SMs and occupancy of the GPU the record was made on."""
    rec, _label = _recorded()
    kw = {k: v for k, v in launch.items() if k != "seed"}
    return SCHEDULING.module("model").trace(**kw, info=records.device_of(rec), seed=launch.get("seed"))


#: Players whose ``record`` kind draws a committed GPU record: name -> ``trace(launch)``.
RECORDED = {"latency": _recorded_latency, "scheduling": _recorded_scheduling}


def _case(lesson, name, launch, options):
    def build(kind):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if kind == "record" and name in RECORDED:
            tr = RECORDED[name](launch)
        else:
            tr = lesson.trace(**launch)
            if kind == "record" and lesson.gpu:
                tr = gpu_shaped(tr)
        return lesson.animation(tr, **options), tr

    build.__name__ = name
    return build


#: Every player of every lesson, by name.
CASES = {name: _case(les, name, launch, options)
         for les in LESSONS.values() for name, launch, options in les.cases.players}
