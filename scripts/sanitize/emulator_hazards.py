"""Sanitizer run for the emulator's hazard kernels (tests/emulator_hazard_cases.py): one minimal
faulty kernel per hazard kind, and its fixed twin.

Plain (what scripts/gpu-check's sanitize phase runs under memcheck, racecheck, synccheck and
initcheck): every FIXED twin, once each, its outputs compared with the emulator's bit for bit; a
clean run under every tool is the claim that the fixes are fixes on silicon too.
    compute-sanitizer --tool racecheck --error-exitcode 86 python scripts/sanitize/emulator_hazards.py

One kernel (what tests/test_emulator_gpu.py runs, one process per kernel and tool, to compare which
kernels each tool flags with which the emulator flags):
    compute-sanitizer --tool memcheck python scripts/sanitize/emulator_hazards.py --faulty oob_read
    python scripts/sanitize/emulator_hazards.py --fixed shared_race
    python scripts/sanitize/emulator_hazards.py --list        # the kernels safe to run on a GPU

Every buffer is its own cudaMalloc (CuPy's pool off), so memcheck and initcheck see each array's
exact bounds and first write.  Exits 0 when every launch ran (and, plain, matched the emulator), 1
otherwise, 2 without a GPU.  A faulty kernel's own CUDA error (an illegal address under no tool) is
printed and exits 3: the sanitizer's report is the result there, not the exit status.
"""
import argparse
import sys
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent


def _cases():
    sys.path.insert(0, str(ROOT / "tests"))
    import emulator_hazard_cases

    return emulator_hazard_cases


def launch_on_gpu(hc, case, faulty: bool, seed: int):
    """Run one kernel on the GPU; the host copies of its buffer arguments (None for scalars)."""
    import cupy as cp

    from gpu_viz.kernels import gpu_options

    rng = np.random.default_rng(seed)
    mod = cp.RawModule(code=case.source(faulty), options=tuple(gpu_options()))
    fn = mod.get_function(case.kernel)
    args = []
    for a in case.make(rng, faulty):
        if isinstance(a, hc.Uninit):
            args.append(cp.empty(a.shape, a.dtype))
        elif isinstance(a, np.ndarray):
            args.append(cp.asarray(a))
        else:
            args.append(a)
    fn(case.grid, case.block, tuple(args))
    cp.cuda.runtime.deviceSynchronize()
    return [cp.asnumpy(a) if isinstance(a, cp.ndarray) else None for a in args]


def main(argv=None) -> int:
    from gpu_viz import backend
    from gpu_viz.emulator import hazards, runtime  # noqa: F401  (the package's names, checked before the GPU is)

    ap = argparse.ArgumentParser(description="the emulator's hazard kernels on a GPU, for compute-sanitizer")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--faulty", metavar="NAME", help="run this faulty kernel once")
    which.add_argument("--fixed", metavar="NAME", help="run this fixed twin once")
    which.add_argument("--list", action="store_true", help="print the kernels safe to run on a GPU")
    args = ap.parse_args(argv)
    if not backend.has_gpu():
        print(f"emulator_hazards sanitize: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    hc = _cases()
    if args.list:
        print("\n".join(sorted(n for n, c in hc.CASES.items() if c.gpu)))
        return 0
    name = args.faulty or args.fixed
    if name is not None and name not in hc.CASES:
        ap.error(f"no hazard kernel {name!r}; they are {sorted(hc.CASES)}")
    if name is not None and args.faulty and not hc.CASES[name].gpu:
        ap.error(f"{name} would hang the GPU (the emulator stops it by its budget); it is not run here")
    import cupy as cp

    cp.cuda.set_allocator(None)          # every array its own cudaMalloc: exact bounds for memcheck/initcheck
    if name is not None:
        try:
            launch_on_gpu(hc, hc.CASES[name], bool(args.faulty), seed=7)
        except Exception as exc:  # noqa: BLE001  (a faulty kernel's CUDA error: the sanitizer reports it)
            print(f"{name}: {type(exc).__name__}: {exc}")
            return 3
        print(f"ran {'faulty' if args.faulty else 'fixed'} {name}")
        return 0
    arch = "sm_" + cp.cuda.Device().compute_capability
    failures = 0
    for n in sorted(hc.CASES):
        case = hc.CASES[n]
        try:
            silicon = launch_on_gpu(hc, case, False, seed=11)
            run, emulated = hc.run_emulated(case, False, arch, np.random.default_rng(11))
            assert run.completed and not run.hazards.errors(), [h.text() for h in run.hazards.errors()]
            for k, (e, g) in enumerate(zip(emulated, silicon)):
                if e is not None:
                    assert np.array_equal(e.view(np.uint8), g.view(np.uint8)), f"argument {k}: {e} != {g}"
            print(f"ok   fixed {n}")
        except Exception:  # noqa: BLE001  (report every failure, then exit 1)
            failures += 1
            print(f"FAIL fixed {n}\n{traceback.format_exc()}")
    print(f"emulator_hazards sanitize: {failures} failing of {len(hc.CASES)} fixed kernels")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
