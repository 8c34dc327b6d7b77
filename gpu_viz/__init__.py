"""gpu_viz: the Python side of the course "CUDA on the Metal, live".

Data path, one stem per lesson (``gpu_viz.lessons``): ``kernels/<stem>.cu`` (its traced build)
--(``gpu_viz.record.<stem>`` on a GPU, ``gpu_viz.model.<stem>`` without one)-->
:class:`gpu_viz.trace.Trace` --(``gpu_viz.frames.<stem>``)--> frames --> players
(``gpu_viz.widgets``).  ``gpu_viz.measure`` times and keeps records, ``gpu_viz.figures`` draws
what is not a trace, ``gpu_viz.rmsnorm`` is the RMSNorm family (its fused ops public as
``gpu_viz.ops``).
"""
from __future__ import annotations

import re

__version__ = "0.1.0"

from .backend import detect, has_gpu, provenance  # noqa: E402,F401


#: How a measured chapter's notebook calls :func:`banner` (the slides index reads it to label the deck).
RECORDED_BANNER_CALL = "gpu_viz.banner(recorded=True)"


#: A reason that already says there is no GPU ("no NVIDIA driver ..., so no GPU to run on", "no
#: CUDA-capable GPU is visible"): the banner gives it without its own "no usable CUDA GPU: " lead.
_SAYS_NO_GPU = re.compile(r"\bno\b[^.;:]*?\bGPU\b", re.IGNORECASE)


def banner(recorded: bool = False) -> str:
    """The first cell of every notebook: mode, and on a GPU its name, sm_XX, SM count, peak bandwidth.

    Args:
        recorded: the notebook shows committed GPU records in CPU mode rather than CPU-model
            traces (the measured chapters): its CPU-mode banner says so, and so does
            :meth:`gpu_viz.backend.Backend.describe` afterwards in the same process.

    Returns the text it prints: lines of at most 72 characters, each paragraph's lines of even
    length (no word left alone on a line of its own), a name never split from what it names
    ("NVIDIA driver": :data:`gpu_viz.words.NO_BREAK`), "no GPU" said once.
    """
    from . import backend, device, words

    backend.note_chapter(recorded=recorded)
    b = detect()
    if b.is_gpu:
        info = device.current()
        bw = info.peak_bandwidth_GBps
        text = (f"GPU mode: {info.name} ({info.sm}), {info.sm_count} SMs, "
                f"peak memory bandwidth {bw:,.0f} GB/s" if bw else
                f"GPU mode: {info.name} ({info.sm}), {info.sm_count} SMs, peak memory bandwidth unknown")
        text += "\nEverything below runs live on this GPU."
    else:
        why = b.plain_reason
        if b.cause != backend.CAUSE_FORCED_CPU and not _SAYS_NO_GPU.search(why):
            why = "no usable CUDA GPU: " + why
        text = "CPU MODE -- " + why.rstrip(".") + "."
        if recorded:
            text += ("\nNothing below is run here: the timings shown are committed GPU records, "
                     "each with its GPU and date.")
        else:
            from . import emulator

            if emulator.available():
                text += ("\nKernels below run in the emulator: their own PTX, one warp at a time, on the "
                         "CPU; the largest launches and the block scheduling come from the CPU model. "
                         "Nothing is timed. Recorded GPU numbers, where shown, carry their GPU and date.")
            else:
                text += ("\nTraces below come from the CPU model where there is one (the emulator needs "
                         "NVRTC: pip install 'gpu-viz[emulator]'); cells that need the emulator say what "
                         "they do not show. Nothing is timed. Recorded GPU numbers, where shown, carry "
                         "their GPU and date.")
        if b.cause != backend.CAUSE_FORCED_CPU:
            text += "\nExpected a GPU? gpu_viz.doctor.report() gives the details and what to do."
    # lines of at most 72 characters: the banner is projected on each deck's title slide
    text = "\n".join("\n".join(words.wrap_even(line, 72)) for line in text.splitlines())
    print(text)
    return text


def _submodules():
    import pkgutil

    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))


#: The subpackages and modules ``gpu_viz.<name>`` reaches after a plain ``import gpu_viz`` (every one
#: in the package's folder, listed from it), imported on first use (PEP 562): text the course prints
#: names calls such as ``gpu_viz.doctor.report()``, and a learner who types one after
#: ``import gpu_viz`` must not get an AttributeError.
SUBMODULES = _submodules()


def __getattr__(name):
    if name in SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
