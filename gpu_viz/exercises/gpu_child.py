"""The child process a learner's kernel runs in on a GPU (``python -m gpu_viz.exercises.gpu_child DIR``).

It reads ``DIR/job.json`` (the source, the kernel's name, its parameters, one entry per launch) and
``DIR/in.pkl`` (the arrays, pickled by the parent), compiles the source with NVRTC through CuPy (the GPU path's options
and headers), runs every launch, and writes ``DIR/out.pkl``.  The parent
(:func:`gpu_viz.exercises.kernel_task.run_in_child`) stops it after a timeout, so a kernel that never
ends cannot freeze the notebook.  ``"emulate": true`` runs the same launches in the emulator (the
tests of this path on machines without a GPU).
"""
from __future__ import annotations

import json
import os
import pickle
import sys

import numpy as np


def main(argv) -> int:
    tmp = argv[0]
    with open(os.path.join(tmp, "job.json"), encoding="utf-8") as f:
        meta = json.load(f)
    with open(os.path.join(tmp, "in.pkl"), "rb") as f:
        arrays = pickle.load(f)
    out = {}
    if meta["emulate"]:
        from gpu_viz import emulator

        prog = emulator.compile(meta["code"], name="your_kernel.cu", arch=meta["arch"] or emulator.DEFAULT_ARCH)
        for j, job in enumerate(meta["jobs"]):
            dev = emulator.Device()
            args, outs = _args(job, arrays, lambda a, name: dev.asarray(a, name=name))
            prog.launch(meta["kernel"], tuple(job["grid"]), tuple(job["block"]), args, device=dev,
                        shared_mem=job["shared_mem"], budget=10**12, time_limit=1e9)
            out.update({k: v.get() for k, v in outs.items()})
    else:
        from gpu_viz import backend, kernels

        cp = backend.require_cupy("running your kernel")
        mod = cp.RawModule(code=meta["code"], options=kernels.gpu_options() + (f"-I{kernels.KERNEL_DIR}",))
        fn = mod.get_function(meta["kernel"])
        for j, job in enumerate(meta["jobs"]):
            args, outs = _args(job, arrays, lambda a, name: cp.asarray(a))
            fn(tuple(job["grid"]), tuple(job["block"]), tuple(args), shared_mem=job["shared_mem"])
            cp.cuda.get_current_stream().synchronize()
            out.update({k: cp.asnumpy(v) for k, v in outs.items()})
    with open(os.path.join(tmp, "out.pkl"), "wb") as f:
        pickle.dump({k: np.asarray(v) for k, v in out.items()}, f, protocol=5)
    return 0


def _args(job, arrays, to_device):
    args, outs = [], {}
    for a in job["args"]:
        if a[0] == "scalar":
            args.append(np.dtype(a[1]).type(a[2]))
        else:
            key = a[1]
            d = to_device(arrays[key], key.split("_", 1)[1])
            args.append(d)
            outs[key] = d
    return args, outs


def _failure(exc: BaseException) -> str:
    """One line for the parent (it shows the child's last stderr line): the exception's type and its
    message's error lines, and where it was raised, read from the frames alone.  Python's own
    traceback printing reads each frame's source file, and a frame of compiled code can point at a
    file that is not Python source: that printing can itself fail and hide the error."""
    import traceback

    text = str(exc)
    errors = [ln.strip() for ln in text.splitlines() if "error" in ln.lower()]
    said = "; ".join(errors[:3]) if errors else " ".join(text.split())[:500]
    frames = [(f.f_code.co_filename, line) for f, line in traceback.walk_tb(exc.__traceback__)]
    # the innermost frames, outermost first: a library's own frame alone does not say who called it
    where = (" (at " + " < ".join(f"{os.path.basename(f)}:{n}" for f, n in reversed(frames[-6:])) + ")"
             if frames else "")
    return f"{type(exc).__name__}: {said}{where}"


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except Exception as exc:  # noqa: BLE001  (every failure reaches the parent as one line)
        sys.stderr.write(_failure(exc) + "\n")
        code = 1
    sys.exit(code)
