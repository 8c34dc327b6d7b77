"""Emulated == silicon, bit for bit (GPU only): the semantics kernels of tests/emulator_cases.py run on
the GPU through CuPy (compiled for the device's architecture) and in the emulator for that same
architecture, on the same fresh inputs; then the hazard kernels of tests/emulator_hazard_cases.py
under compute-sanitizer, compared with what the emulator flags.

Where silicon leaves an order unspecified, the comparison is of what is specified: the old values
that atomics on one address return are compared as a multiset per address.  Outputs of the
approximate instructions (Run.approximate: ex2.approx, sin.approx ...) are compared within PTX's
stated error, not bit for bit.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_viz import emulator as em

from emulator_cases import CASES, run_cupy, run_emulated
from emulator_hazard_cases import CASES as HAZARDS
from emulator_hazard_cases import run_emulated as run_hazard

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not em.available(), reason="NVRTC is not installed (pip install nvidia-cuda-nvrtc)")]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "sanitize" / "emulator_hazards.py"

#: The kernels compared with silicon: every family of tests/emulator_cases.py (printf's pointer
#: values and order differ by design and are left out).
COMPARED = ("int_arith", "int_div", "bits", "f32_round", "f32_plain", "math_approx", "f2i", "i2f", "f_narrow",
            "half_compare", "half_ops", "bf16_ops", "half2_ops", "f64_ops", "compare", "flow", "shape2d", "shape3d",
            "transpose", "dyn_shared", "grid_stride", "atomics", "shuffles", "votes", "syncwarp", "tiles",
            "reductions", "assert_ok")


def device_arch() -> str:
    import cupy as cp

    return "sm_" + cp.cuda.Device().compute_capability


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def _atomic_olds(case, args, old):
    """The atomics case's old values, per address as sorted multisets (silicon serves the lanes of
    one address in an unspecified order; the emulator in lane order)."""
    x, n = args[0], int(args[-1])
    slot = (x & 7).tolist()
    out = []
    for k, keys in ((0, slot), (3, [i & 3 for i in range(n)]), (4, [i & 3 for i in range(n)]),
                    (5, [(i // case.block[0], s) for i, s in enumerate(slot)])):
        col = old[k * n:(k + 1) * n].tolist()
        groups = {}
        for key, v in zip(keys, col):
            groups.setdefault(key, []).append(v)
        out.append({key: sorted(v) for key, v in groups.items()})
    return out, old[n:3 * n]                               # exch and CAS: one lane per address, exact


@pytest.mark.parametrize("name", COMPARED)
def test_emulated_equals_silicon(name, rng):
    case = CASES[name]
    arch = device_arch()
    if int(arch[3:]) < min(int(a[3:]) for a in case.arches):
        pytest.skip(f"{name} needs {min(case.arches)} or later, the GPU is {arch}")
    args = case.make(rng)
    run, emulated = run_emulated(case, arch, args)
    assert run.completed and not run.hazards.errors(), [h.text() for h in run.hazards]
    silicon = run_cupy(case, args)
    for k, (e, g) in enumerate(zip(emulated, silicon)):
        if e is None:
            continue
        if k in case.approximate:
            # PTX's MUFU instructions: within 2^-21 relative (ex2, lg2, rsqrt) or 2^-20.9 absolute (sin, cos)
            np.testing.assert_allclose(e, g, rtol=2 ** -20, atol=2 ** -20, err_msg=f"{name} argument {k}")
            continue
        if name == "atomics" and k == 6:
            (e_sets, e_exact), (g_sets, g_exact) = _atomic_olds(case, args, e), _atomic_olds(case, args, g)
            assert e_sets == g_sets, f"{name}: the old values of atomics differ as multisets"
            np.testing.assert_array_equal(e_exact, g_exact)
            continue
        bad = np.flatnonzero(_bits(e) != _bits(g))
        assert bad.size == 0, (f"{name} ({arch}) argument {k}: {bad.size} of {e.size} differ; first "
                               + ", ".join(f"[{i}] emulated {e[i]!r} silicon {g[i]!r}" for i in bad[:5]))


# -- hazards: the emulator against compute-sanitizer ------------------------------------------------------------

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


def _sanitizer():
    exe = shutil.which("compute-sanitizer")
    if exe is None:
        for root in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
            cand = Path(root) / "bin" / "compute-sanitizer"
            if root and cand.is_file():
                return str(cand)
    return exe


def sanitizer_flags(name: str, tool: str, faulty: bool) -> bool:
    """Whether ``compute-sanitizer --tool tool`` reports anything (an error, or for racecheck a
    hazard of any severity) for one hazard kernel, run alone in its own process."""
    exe = _sanitizer()
    if exe is None:
        pytest.skip("compute-sanitizer is not on PATH (CUDA toolkit)")
    extra = {"memcheck": ["--leak-check", "no"], "racecheck": ["--racecheck-report", "all"]}.get(tool, [])
    cmd = [exe, "--tool", tool, "--error-exitcode", "86", *extra,
           sys.executable, str(SCRIPT), "--faulty" if faulty else "--fixed", name]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    text = proc.stdout + proc.stderr
    summary = [line for line in text.splitlines() if "ERROR SUMMARY" in line or "RACECHECK SUMMARY" in line]
    if not summary:
        raise AssertionError(f"{name} under {tool}: no summary line (exit {proc.returncode})\n{text[-3000:]}")
    counts = [int(v) for v in re.findall(r"(\d+) (?:errors?|warnings?|hazards?)", summary[-1])]
    return proc.returncode == 86 or any(counts)


GPU_HAZARDS = sorted(n for n, c in HAZARDS.items() if c.gpu)


@pytest.mark.sanitizer
@pytest.mark.parametrize("name", GPU_HAZARDS)
def test_sanitizer_flags_what_the_emulator_maps_to_it(name, rng):
    """The faulty kernel: the tool the emulator's hazard names (Hazard.tool) must flag it, and a
    tool the emulator maps none of its hazards to must not; the fixed twin: that tool is clean."""
    case = HAZARDS[name]
    run, _ = run_hazard(case, True, device_arch(), rng)
    emulator_tools = {h.tool for h in run.hazards.errors()} - {None}
    assert (case.tool in emulator_tools) or (case.tool is None and not emulator_tools), (name, emulator_tools)
    flagged = {tool for tool in sorted(emulator_tools) if sanitizer_flags(name, tool, True)}
    assert flagged == emulator_tools, (f"{name}: compute-sanitizer flagged {sorted(flagged)}, the emulator's "
                                       f"hazards map to {sorted(emulator_tools)}")
    # the fixed twins run under all four tools in scripts/gpu-check's sanitize phase (one process)


@pytest.mark.sanitizer
def test_emulator_only_hazards_are_not_flagged_by_any_tool(rng):
    """Hazards the emulator reports that no sanitizer tool looks for (a race in global memory, an
    uninitialised shared read, an integer division by zero): every tool passes them, which is why
    the emulator reports them."""
    quiet = [n for n in GPU_HAZARDS if HAZARDS[n].tool is None]
    assert quiet
    for name in quiet:
        flagged = [tool for tool in TOOLS if sanitizer_flags(name, tool, True)]
        assert not flagged, f"{name}: flagged by {flagged}; its Hazard.tool should name that tool"
