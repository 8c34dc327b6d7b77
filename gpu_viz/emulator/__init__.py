"""A warp-synchronous PTX emulator: any kernel's PTX, from NVRTC with no GPU and no driver, run on
the CPU with the lanes of each warp vectorised in numpy.

Data path: CUDA C --(:func:`compile`: NVRTC, ``-lineinfo``)--> PTX --(``ptx.parse``)--> a
:class:`Program` --(:meth:`Program.launch` on a :class:`Device`)--> a :class:`Run`: the outputs in
the device arrays, plus the hazards compute-sanitizer would report (out of bounds, races,
uninitialised reads, barrier divergence, bad shuffle masks) and the counts the memory lessons
draw (sectors per request, bank conflicts, instructions per line).

Inside :func:`emulated`, the package's GPU producers (``gpu_viz.record.*``) run unchanged on the
emulator, so a lesson's traced kernel yields the Trace the silicon would, labelled
:data:`LABEL`.  What it cannot know (``%smid``, clocks, timers) comes from the named model in
:mod:`gpu_viz.emulator.block` and is listed in ``Run.simulated``; approximate instructions
(``ex2.approx`` ...) are computed correctly rounded and listed in ``Run.approximate``.
"""
from .hazards import Hazard, HazardLog
from .isa import Unsupported
from .machine import LaunchError, Run
from .nvrtc import DEFAULT_ARCH, NVRTCUnavailable, available
from .runtime import LABEL, Device, DeviceArray, Program, Session, compile, compile_file, emulated, label

__all__ = ["compile", "compile_file", "Program", "Device", "DeviceArray", "Run", "Hazard", "HazardLog",
           "LaunchError", "Unsupported", "NVRTCUnavailable", "available", "emulated", "Session", "LABEL",
           "label", "DEFAULT_ARCH"]
