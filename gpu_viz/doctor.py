"""`gpu-viz doctor`: what this machine offers the course, and what to do when the GPU path fails.

    import gpu_viz.doctor; gpu_viz.doctor.report()      # in a notebook cell
    gpu-viz doctor [--json]                             # in a shell

It reads (each guarded, none can raise): the GPU and its sm_XX, the NVIDIA driver's CUDA
version, the CUDA runtime CuPy was built for, NVRTC, CuPy, torch (and its CUDA), ipywidgets,
Python, whether this is Colab; then reuses :func:`gpu_viz.backend.detect` (which compiles and
launches a probe kernel) for the verdict, and explains a failure in plain words:

- a CPU runtime (no driver, no GPU): on Colab, Runtime > Change runtime type > GPU;
- a driver older than the runtime (``cudaErrorInsufficientDriver``): update the driver, or
  install the CuPy wheel that matches the driver's CUDA;
- NVRTC missing, or present without the CUDA headers (``cuda_fp16.h``) our kernels include;
- CuPy missing: the ``pip install cupy-cudaXXx`` line for this driver's CUDA major version.
"""
from __future__ import annotations

import dataclasses
import html
import json
import os
import platform
import re
import sys
from typing import Dict, List, Optional

from . import backend

#: CuPy wheel per CUDA major version of the driver (https://docs.cupy.dev/en/stable/install.html).
CUPY_WHEELS = {11: "cupy-cuda11x", 12: "cupy-cuda12x", 13: "cupy-cuda13x"}
COLAB_GPU_STEPS = "Runtime > Change runtime type > Hardware accelerator: a GPU (e.g. T4) > Save; then run all cells again"


@dataclasses.dataclass
class Item:
    """One line of the report: ``name: value``; ``ok`` is True/False, or None for plain information."""

    name: str
    value: str
    ok: Optional[bool] = None


@dataclasses.dataclass
class Report:
    """The doctor's findings.

    Attributes:
        mode: ``"gpu"`` or ``"cpu"`` (from :func:`gpu_viz.backend.detect`).
        reason: why CPU mode ("" in GPU mode).
        problem: a short name for what is wrong: ``"ok"``, ``"forced-cpu"``, ``"cpu-runtime"``,
            ``"driver-too-old"``, ``"cupy-missing"``, ``"cupy-broken"`` (installed, fails to import),
            ``"nvrtc-headers"``, ``"nvrtc-missing"``,
            ``"ptx-too-new"`` or ``"other"``.
        items: the facts, in display order.
        advice: what to do, in plain words (empty when all is well).
    """

    mode: str
    reason: str
    problem: str
    items: List[Item]
    advice: List[str]

    @property
    def ok(self) -> bool:
        return self.mode == backend.GPU

    def as_dict(self) -> Dict:
        return {"mode": self.mode, "reason": self.reason, "problem": self.problem,
                "items": {i.name: i.value for i in self.items}, "advice": self.advice}

    def text(self) -> str:
        width = max(len(i.name) for i in self.items)
        lines = ["gpu-viz doctor", ""]
        for i in self.items:
            mark = {True: "ok ", False: "!! ", None: "   "}[i.ok]
            lines.append(f"  {mark}{i.name.ljust(width)}  {i.value}")
        lines.append("")
        if self.ok:
            lines.append("Verdict: GPU mode -- the course runs live on this GPU.")
        else:
            lines.append(f"Verdict: CPU mode -- {self.reason}")
        for a in self.advice:
            lines.append(f"  * {a}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{'&#9989;' if i.ok else '&#10060;' if i.ok is False else ''}</td>"
            f"<td><b>{html.escape(i.name)}</b></td><td>{html.escape(i.value)}</td></tr>" for i in self.items)
        verdict = ("<b>GPU mode</b>: the course runs live on this GPU." if self.ok
                   else f"<b>CPU mode</b>: {html.escape(self.reason)}")
        advice = "".join(f"<li>{html.escape(a)}</li>" for a in self.advice)
        return (f"<div class='gpu-viz-doctor'><table>{rows}</table><p>{verdict}</p>"
                + (f"<ul>{advice}</ul>" if advice else "") + "</div>")

    def __str__(self) -> str:
        return self.text()


# ----------------------------------------------------------------------------- probes (each guarded)
_cuda_version = backend.cuda_version_text  # 12040 -> "12.4"


def _import(name):
    try:
        return __import__(name), ""
    except ImportError as exc:
        return None, f"not installed ({exc})"
    except Exception as exc:  # a broken install
        return None, f"fails to import ({type(exc).__name__}: {exc})"


def _call(fn, *args):
    try:
        return fn(*args), ""
    except Exception as exc:
        return None, " ".join(f"{type(exc).__name__}: {exc}".split())


def in_colab() -> bool:
    """True inside a Google Colab runtime."""
    return "google.colab" in sys.modules or bool(os.environ.get("COLAB_RELEASE_TAG"))


# ----------------------------------------------------------------------------- the report
def diagnose(show: bool = False) -> Report:
    """Collect the facts and the advice; print (``show=True``) and return the :class:`Report`."""
    b = backend.detect(refresh=True)
    items: List[Item] = [Item("Python", f"{platform.python_version()} ({sys.executable})"),
                         Item("Colab", "yes" if in_colab() else "no")]

    cupy, cupy_err = _import("cupy")
    # read as the backend's verdict reads them: CuPy's answer, else libcuda's; positive ints, else None
    driver_v = backend.driver_cuda_version(cupy)
    runtime_v = None
    nvrtc_text = "unknown (CuPy missing)"
    if cupy is not None:
        items.append(Item("CuPy", getattr(cupy, "__version__", "?"), True))
        runtime_v = backend.runtime_cuda_version(cupy)
        nvrtc = getattr(getattr(cupy, "cuda", None), "nvrtc", None)
        got, err = _call(nvrtc.getVersion) if nvrtc else (None, "cupy.cuda.nvrtc missing")
        nvrtc_text = ".".join(map(str, got)) if got else f"unavailable ({err[:200]})"
    else:
        items.append(Item("CuPy", cupy_err, False))
    items.append(Item("NVIDIA driver (CUDA)", _cuda_version(driver_v) if driver_v else "no driver found",
                      bool(driver_v) if b.mode == backend.CPU else True))
    if cupy is not None:
        items.append(Item("CUDA runtime (CuPy's)", _cuda_version(runtime_v) if runtime_v else "unknown"))
        items.append(Item("NVRTC", nvrtc_text, not nvrtc_text.startswith("unavailable")))
    items.append(Item("GPU", f"{b.device_name} ({b.sm})" if b.is_gpu else "none usable", b.is_gpu))

    torch, torch_err = _import("torch")
    if torch is not None:
        tcuda = getattr(getattr(torch, "version", None), "cuda", None)
        avail, _ = _call(torch.cuda.is_available) if hasattr(torch, "cuda") else (False, "")
        items.append(Item("torch", f"{torch.__version__} (CUDA {tcuda or 'none: CPU build'}, "
                                   f"GPU {'visible' if avail else 'not visible'})"))
        from .rmsnorm import launcher  # the fused ops' per-call path (builds nothing here)

        items.append(Item("C++ launcher (fused ops)", launcher.describe()))
    else:
        items.append(Item("torch", torch_err + " (needed for the PyTorch baselines only)"))
    widgets, w_err = _import("ipywidgets")
    items.append(Item("ipywidgets", getattr(widgets, "__version__", "?") if widgets else w_err, bool(widgets)))
    emu = emulator_status()
    items.append(Item("Emulator (CPU mode)", emu, None if b.is_gpu else not emu.startswith("unavailable")))

    problem, advice = _advise(b, driver_v, runtime_v, nvrtc_text, torch)
    if not b.is_gpu and emu.startswith("unavailable"):
        from .emulator import nvrtc

        # switched off on purpose (GPU_VIZ_NO_EMULATOR): the way back is to unset it, not to install anything
        fix = (f"Unset {nvrtc.NO_EMULATOR_ENV} (it turns the emulator off on purpose), then restart the kernel."
               if nvrtc.switched_off() else
               "Install it: `pip install 'gpu-viz[emulator]'` (nvidia-cuda-nvrtc and the CUDA headers), then "
               "restart the kernel.")
        advice.append("Without NVRTC the emulator cannot run kernels: the lessons' traces come from the CPU models "
                      "and the write-the-kernel exercises are not graded. " + fix)
    rep = Report(mode=b.mode, reason=b.reason, problem=problem, items=items, advice=advice)
    if show:
        print(rep.text())
    return rep


def emulator_status() -> str:
    """The emulator's compiler and headers: "NVRTC 13.0, headers in ..." or "unavailable (why)"."""
    from . import emulator
    from .emulator import nvrtc

    try:
        major, minor = nvrtc.version()
    except emulator.NVRTCUnavailable as exc:
        return f"unavailable ({str(exc).split(':')[0]})"
    inc = nvrtc.include_dirs()
    if not inc:
        return (f"unavailable (NVRTC {major}.{minor}, but no CUDA headers (cuda_fp16.h): "
                "pip install nvidia-cuda-runtime nvidia-cuda-cccl)")
    return f"NVRTC {major}.{minor}, CUDA headers in {inc[0]}: kernels run on the CPU, from their PTX"


#: Every problem name the doctor reports (``Report.problem``).
PROBLEMS = ("ok", "forced-cpu", "cpu-runtime", "driver-too-old", "cupy-missing", "cupy-broken", "nvrtc-headers",
            "nvrtc-missing", "ptx-too-new", "other")

#: The problem for each backend cause (every one in :data:`gpu_viz.backend.CAUSES`).  "other"
#: and "driver-too-old" are refined by :func:`_problem` from the versions the doctor reads.
PROBLEM_OF_CAUSE = {
    backend.CAUSE_OK: "ok",
    backend.CAUSE_FORCED_CPU: "forced-cpu",
    backend.CAUSE_CUPY_MISSING: "cupy-missing",
    backend.CAUSE_CUPY_BROKEN: "cupy-broken",  # installed: what to do depends on why the import fails
    backend.CAUSE_NO_DRIVER: "cpu-runtime",
    backend.CAUSE_NO_DEVICE: "cpu-runtime",
    backend.CAUSE_DRIVER_TOO_OLD: "driver-too-old",
    backend.CAUSE_DRIVER_INSUFFICIENT: "driver-too-old",
    backend.CAUSE_NVRTC_HEADERS: "nvrtc-headers",
    backend.CAUSE_NVRTC_MISSING: "nvrtc-missing",
    backend.CAUSE_PTX_TOO_NEW: "ptx-too-new",
    backend.CAUSE_DRIVER_LIBRARY: "other",
    backend.CAUSE_RUNTIME_INIT: "other",
    backend.CAUSE_DEVICE_PROPERTIES: "other",
    backend.CAUSE_COMPILE_FAILED: "other",
    backend.CAUSE_LAUNCH_FAILED: "other",
    backend.CAUSE_WRONG_RESULT: "other",
}

# causes from the compile and launch steps, where a missing NVRTC explains an unclassified error
_NVRTC_STEP_CAUSES = (backend.CAUSE_COMPILE_FAILED, backend.CAUSE_LAUNCH_FAILED)


def _problem(b, driver_v, runtime_v, nvrtc_text) -> str:
    """The problem name (one of :data:`PROBLEMS`) for the backend ``b``: its cause's entry in
    :data:`PROBLEM_OF_CAUSE`, refined by the facts the doctor read (driver's and runtime's CUDA
    versions, the NVRTC row).  Raises ValueError for a cause the table does not map."""
    try:
        problem = PROBLEM_OF_CAUSE[b.cause]
    except KeyError:
        raise ValueError(f"backend cause {b.cause!r} has no doctor problem; add it to "
                         "doctor.PROBLEM_OF_CAUSE") from None
    if problem == "driver-too-old" and not driver_v:
        # the doctor finds no driver to update: the advice is a GPU runtime / a driver install
        return "cpu-runtime"
    if problem != "other":
        return problem
    # an error the backend could not classify: say what the versions point at, if anything
    if b.cause in _NVRTC_STEP_CAUSES and driver_v and nvrtc_text.startswith("unavailable"):
        return "nvrtc-missing"
    if not driver_v:
        return "cpu-runtime"
    if runtime_v and driver_v < runtime_v:
        return "driver-too-old"
    return "other"


def _advise(b, driver_v, runtime_v, nvrtc_text, torch):
    """``(problem, advice)`` for the backend ``b``: the problem from its cause (:func:`_problem`),
    the advice in plain words.  Raises ValueError for a cause the doctor does not map."""
    problem = _problem(b, driver_v, runtime_v, nvrtc_text)
    colab = in_colab()
    cpu_note = ("Meanwhile the course runs in CPU mode: the lessons' kernels and your own run in the emulator "
                "(from their PTX; the CPU models where it cannot), nothing is timed, and recorded GPU numbers "
                "carry their GPU and date.")
    if problem == "ok":
        advice = []
        if torch is not None and not getattr(getattr(torch, "version", None), "cuda", None):
            advice.append("torch is a CPU build: the PyTorch baselines (eager, F.rms_norm, torch.compile) will "
                          "not run on the GPU. Install a CUDA build: https://pytorch.org/get-started/locally/")
        return problem, advice
    if problem == "forced-cpu":
        return problem, [f"CPU mode was asked for by {backend.FORCE_CPU_ENV}; unset it (or set it to 0) "
                         "and restart the kernel to use the GPU."]
    if problem == "cupy-missing":
        if driver_v:
            wheel = CUPY_WHEELS.get(driver_v // 1000, "cupy-cuda12x")
            return problem, [f"CuPy is not installed. Your driver supports CUDA {_cuda_version(driver_v)}: "
                             f"run `pip install {wheel}` (in a notebook: `%pip install {wheel}`), then "
                             "restart the kernel.", cpu_note]
        steps = ["CuPy is not installed, and no NVIDIA driver was found, so there is no GPU to use yet."]
        steps.append(f"On Colab: {COLAB_GPU_STEPS}." if colab else
                     "On your own machine: install the NVIDIA driver (nvidia-smi should list the GPU), then "
                     "`pip install cupy-cuda12x` (CUDA 12 drivers) or `pip install cupy-cuda13x` (CUDA 13).")
        return problem, steps + [cpu_note]
    if problem == "cupy-broken":
        why = re.sub(r"^CuPy failed to import \((.*)\)$", r"\1", b.reason, flags=re.S)
        steps = [f"CuPy is installed, but importing it fails: {why}."]
        if re.search(r"PermissionError|NotADirectoryError|FileNotFoundError|Read-only file system|"
                     r"Permission denied|Not a directory", b.reason):
            steps.append(
                "CuPy makes its kernel cache folder (~/.cupy, in your home folder "
                f"{os.environ.get('HOME', '?')}) when it is imported, and cannot make it here. Point "
                "CUPY_CACHE_DIR at a folder you can write: `export CUPY_CACHE_DIR=/tmp/cupy-cache` (in a "
                "notebook, `%env CUPY_CACHE_DIR=/tmp/cupy-cache` in its first cell), then restart the kernel.")
        else:
            wheel = CUPY_WHEELS.get((driver_v or 12000) // 1000, "cupy-cuda12x")
            steps.append(f"Reinstall the CuPy wheel for your driver: `pip install --force-reinstall {wheel}`, "
                         "then restart the kernel.")
        return problem, steps + [cpu_note]
    if problem == "nvrtc-headers":
        major = (runtime_v or 12000) // 1000
        return problem, [
            "NVRTC (the run-time compiler) works but cannot find the CUDA headers the course's kernels include "
            f"(cuda_fp16.h, cuda_bf16.h). Install them: `pip install nvidia-cuda-runtime-cu{major}` (ships the "
            "headers), or point CUDA_PATH at a CUDA toolkit (export CUDA_PATH=/usr/local/cuda); then restart "
            "the kernel.", cpu_note]
    if problem == "nvrtc-missing":
        major = (runtime_v or 12000) // 1000
        return problem, [
            f"NVRTC, the run-time CUDA compiler CuPy uses to build the kernels, is missing ({nvrtc_text}). "
            f"Install it: `pip install nvidia-cuda-nvrtc-cu{major} nvidia-cuda-runtime-cu{major}`, or install "
            "the CUDA toolkit and set CUDA_PATH; then restart the kernel.", cpu_note]
    if problem == "ptx-too-new":
        return problem, [
            "The driver is older than the NVRTC that compiled the kernels and cannot load their PTX. Update "
            "the NVIDIA driver, or install a CuPy/NVRTC for an older CUDA "
            f"(`pip install {CUPY_WHEELS.get((driver_v or 12000) // 1000, 'cupy-cuda12x')}`).", cpu_note]
    # the runtime said cudaErrorInsufficientDriver (with no driver, or one it rejects)
    insufficient = b.cause in (backend.CAUSE_NO_DRIVER, backend.CAUSE_DRIVER_TOO_OLD,
                               backend.CAUSE_DRIVER_INSUFFICIENT)
    if problem == "cpu-runtime":
        first = ("This runtime has no GPU (a CPU runtime reports cudaErrorInsufficientDriver or no device)."
                 if colab or insufficient else "No NVIDIA GPU is visible to this process.")
        fix = (f"On Colab: {COLAB_GPU_STEPS}." if colab else
               "No NVIDIA driver was found: if this machine has an NVIDIA GPU, install its driver "
               "(`nvidia-smi` should then list the GPU); otherwise run the course on a GPU machine or "
               "Colab. Without a GPU the NVRTC row does not matter." if not driver_v else
               "Check that `nvidia-smi` lists a GPU and that CUDA_VISIBLE_DEVICES does not hide it.")
        return problem, [first, fix, cpu_note]
    if problem == "driver-too-old":
        wheel = CUPY_WHEELS.get(driver_v // 1000, "cupy-cuda12x")
        relation = ("older than" if runtime_v and driver_v < runtime_v else
                    "which the runtime reports as insufficient for")  # e.g. a broken driver install
        return problem, [
            f"The NVIDIA driver supports CUDA {_cuda_version(driver_v)}, {relation} the CUDA runtime "
            f"{_cuda_version(runtime_v)} CuPy was built for (cudaErrorInsufficientDriver). Update the driver "
            f"(any driver for CUDA {_cuda_version(runtime_v)} or newer), or install the CuPy built for your "
            f"driver: `pip uninstall -y cupy-cuda11x cupy-cuda12x cupy-cuda13x && pip install {wheel}`.",
            cpu_note]
    return "other", [f"The GPU path failed: {b.reason}. Run `gpu-viz doctor` in a shell for the same report, "
                     "and include it when you ask for help.", cpu_note]


def report(show: bool = True) -> Report:
    """Print the doctor's report (the notebook/one-liner entry point) and return the :class:`Report`.

    In a notebook, the returned object also renders as an HTML table.
    """
    return diagnose(show=show)


# ----------------------------------------------------------------------------- CLI
def _cli(args) -> int:
    rep = diagnose(show=not args.json)
    if args.json:
        print(json.dumps(rep.as_dict(), indent=1))
    return 0 if rep.ok or not args.strict else 1


def register_cli(subparsers) -> None:
    """Add the ``doctor`` subcommand to ``gpu-viz``."""
    p = subparsers.add_parser("doctor", help="check the GPU, driver, CUDA, NVRTC, CuPy, torch; explain failures",
                              description="Check what the course needs to run on a GPU (the NVIDIA driver, the "
                                          "CUDA runtime, NVRTC, CuPy, torch) and, when it would run in CPU mode, "
                                          "say why and what to do.")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--strict", action="store_true", help="exit 1 when the course would run in CPU mode")
    p.set_defaults(func=_cli)
