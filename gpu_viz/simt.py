"""Warps and SIMT (notebook 03): the traced vector add, the divergence demo, the kernel's PTX/SASS.

Data path: ``kernels/vector_add.cu`` / ``kernels/divergence.cu`` --(producers here: poison,
launch, read back, check)--> :class:`gpu_viz.trace.Trace` --> ``gpu_viz.frames_simt`` -->
:class:`gpu_viz.widgets.player.Animation`.  Without a GPU the producers return the CPU model's
Trace (``gpu_viz.model.vector_add``): same arrays, same steps, ``smid``/``hw_warpid`` simulated.

Public:
  vector_add_trace(n=64, block=64, seed=None)      -> Trace (GPU or model)
  divergence_trace(n=64, block=64, iters=8, kernel="divergent_branch", seed=None) -> Trace
  divergence_cost(n=1<<22, block=256, iters=256)   -> dict of bench.Timing (GPU only)
  ptx(), sass()                                     -> (text or None, label saying where it came from)
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np

from . import backend, kernels
from .model import vector_add as model
from .trace import GPU_SOURCE, Trace
from .traced import check_close, check_equal, random_f32, region_lines

VA_FILE, VA_REGION = "vector_add.cu", "vector_add"
DIV_FILE = "divergence.cu"
REC_FIELDS = len(model.VECTOR_ADD_FIELDS)

#: What the deck says next to the live numbers.
DECK_CLAIM = "64 elements need 64 threads -- exactly 2 warps; the whole vector is done in six warp-instructions"


def step_lines() -> list:
    """The 1-based line in region ``vector_add`` of each of the six steps."""
    return region_lines(VA_FILE, VA_REGION, [needle for _label, needle in model.VECTOR_ADD_STEPS])


# -- vector add --------------------------------------------------------------------------------

def vector_add_gpu(A: np.ndarray, B: np.ndarray, block: int = 64) -> Trace:
    """Launch ``vector_add_traced`` on the GPU and return its Trace (same layout as the model's).

    Every record is poisoned (-1, NaN) before the launch, and after it: every launched thread
    wrote its record, C == A + B against a float64 reference, and no thread touched i >= n.

    Raises:
        GPUUnavailable in CPU mode; AssertionError if the launch left a wrong or unwritten value.
    """
    import cupy as cp

    backend.require_gpu("the traced vector add")
    A = model._as_f32("A", A)
    n = A.shape[0]
    B = model._as_f32("B", B, n)
    model.check_launch(n, block, min_n=1)
    grid = -(-n // block)
    T = grid * block
    dA, dB = cp.asarray(A), cp.asarray(B)
    dC = cp.full(n, np.nan, cp.float32)
    rec = cp.full(T * REC_FIELDS, -1, cp.int32)
    vals = cp.full(T * 3, np.nan, cp.float32)
    fn = kernels.function(VA_FILE, "vector_add_traced")
    fn((grid,), (block,), (dA, dB, dC, np.int32(n), rec, vals))
    cp.cuda.get_current_stream().synchronize()
    rec = rec.get().reshape(T, REC_FIELDS)
    vals = vals.get().reshape(T, 3)
    C = dC.get()
    check_close("C", C, A.astype(np.float64) + B.astype(np.float64), rtol=2.0 ** -24)
    arrays = {name: np.ascontiguousarray(rec[:, k]) for k, name in enumerate(model.VECTOR_ADD_FIELDS)}
    if (rec[:, :5] < 0).any():
        raise AssertionError("vector_add_traced: some launched thread did not write its record")
    if not np.isnan(vals[n:]).all():
        raise AssertionError("vector_add_traced: a thread with i >= n loaded or stored a value")
    arrays.update(a=np.ascontiguousarray(vals[:, 0]), b=np.ascontiguousarray(vals[:, 1]),
                  c=np.ascontiguousarray(vals[:, 2]), A=A.copy(), B=B.copy())
    check_equal("c[i] == C[i]", arrays["c"][:n].view(np.uint32), C.view(np.uint32))
    n_warps = grid * (-(-block // model.WARP))
    return Trace(kernel="vector_add_traced",
                 params={"n": n, "block": block, "grid": grid, "warps": n_warps, "sm_model": None},
                 arrays=arrays, source=GPU_SOURCE,
                 provenance=backend.live_label() + "; %smid and %warpid read on the SM",
                 steps=model.vector_add_steps(n_warps, step_lines()))


def vector_add_trace(n: int = 64, block: int = 64, seed: Optional[int] = None) -> Trace:
    """C = A + B for ``n`` fresh random floats, traced live on a GPU, else by the CPU model.

    Args:
        n: elements (default 64 = the deck's 2 warps); block: threads per block (1..1024).
        seed: for the random A, B (None: fresh entropy).
    """
    model.check_launch(n, block, min_n=1)
    A, B = random_f32(n, seed), random_f32(n, None if seed is None else seed + 1)
    if backend.has_gpu():
        return vector_add_gpu(A, B, block)
    return model.vector_add(A, B, block, region_lines=step_lines())


# -- divergence --------------------------------------------------------------------------------

def _f64_paths(x: np.ndarray, branch: np.ndarray, iters: int) -> np.ndarray:
    v = x.astype(np.float64)
    mul = np.where(branch == 0, 1.0001, 0.9999)
    add = np.where(branch == 0, 0.5, -0.25)
    for _ in range(iters):
        v = v * mul + add
    return v


def divergence_gpu(x: np.ndarray, block: int = 64, iters: int = 8,
                   kernel: str = "divergent_branch") -> Trace:
    """Launch ``kernel`` (divergent_branch | uniform_branch) with record = 1; Trace as the model's.

    Checks: every element's branch and active mask written, y against a float64 reference.
    """
    import cupy as cp

    backend.require_gpu("the divergence demo")
    x = model._as_f32("x", x)
    n = x.shape[0]
    model.check_launch(n, block, min_n=1)
    model.check_iters(iters)
    branch_ref = model.divergence_branch(n, block, kernel)
    dx = cp.asarray(x)
    dy = cp.full(n, np.nan, cp.float32)
    br = cp.full(n, -1, cp.int32)
    act = cp.zeros(n, cp.uint32)
    fn = kernels.function(DIV_FILE, kernel)
    fn((-(-n // block),), (block,), (dx, dy, np.int32(n), np.int32(iters), np.int32(1), br, act))
    y, branch, active = dy.get(), br.get(), act.get()
    check_equal(f"{kernel}: branch", branch, branch_ref)
    if (active == 0).any():
        raise AssertionError(f"{kernel}: {int((active == 0).sum())} active masks never written")
    check_close(f"{kernel}: y", y, _f64_paths(x, branch_ref, iters), atol=1e-4 * (1 + iters), rtol=1e-4)
    i = np.arange(n)
    return Trace(kernel=kernel, params={"n": n, "block": block, "iters": iters, "grid": -(-n // block)},
                 arrays={"x": x.copy(), "y": y, "branch": branch, "active": active,
                         "lane": ((i % block) % 32).astype(np.int32),
                         "warp": ((i % block) // 32).astype(np.int32), "block": (i // block).astype(np.int32)},
                 source=GPU_SOURCE, provenance=backend.live_label() + "; masks from __activemask()")


def divergence_trace(n: int = 64, block: int = 64, iters: int = 8, kernel: str = "divergent_branch",
                     seed: Optional[int] = None) -> Trace:
    """The divergence demo on fresh random x: live on a GPU, else the CPU model's masks."""
    x = random_f32(n, seed)
    if backend.has_gpu():
        return divergence_gpu(x, block, iters, kernel)
    return model.divergence(x, block, iters, kernel)


def divergence_cost(n: int = 1 << 22, block: int = 256, iters: int = 256, reps: int = 50) -> Dict:
    """Kernel time (CUDA-graph replay, gpu_viz.bench.time_graph) of divergent vs uniform branches.

    Same n threads, same work per thread (``iters`` mul+add on one path); the divergent kernel
    makes every warp run both paths.  Outputs are checked against float64 (every 61st element)
    before timing.

    Returns:
        {"divergent_branch": Timing, "uniform_branch": Timing, "ratio": divergent/uniform median,
         "n": n, "block": block, "iters": iters, "provenance": live label}
    Raises:
        GPUUnavailable in CPU mode.
    """
    import cupy as cp
    from . import bench

    backend.require_gpu("measuring the cost of divergence")
    x = random_f32(n)
    sample = np.arange(0, n, 61)   # the float64 reference on every 61st element keeps the check quick
    ref = {k: _f64_paths(x[sample], model.divergence_branch(n, block, k)[sample], iters)
           for k in model.DIVERGENCE_KERNELS}
    dx = cp.asarray(x)
    out: Dict = {"n": n, "block": block, "iters": iters}
    dummy_b, dummy_a = cp.zeros(1, cp.int32), cp.zeros(1, cp.uint32)
    for k in model.DIVERGENCE_KERNELS:
        fn = kernels.function(DIV_FILE, k)
        dy = cp.full(n, np.nan, cp.float32)
        args = (dx, dy, np.int32(n), np.int32(iters), np.int32(0), dummy_b, dummy_a)
        grid = (-(-n // block),)
        fn(grid, (block,), args)
        check_close(f"{k}: y (every 61st element)", dy.get()[sample], ref[k], atol=1e-4 * (1 + iters), rtol=1e-4)
        out[k] = bench.time_graph(lambda i: fn(grid, (block,), args), framework="cupy", reps=reps)
    out["ratio"] = out["divergent_branch"].median_us / out["uniform_branch"].median_us
    out["provenance"] = backend.live_label()
    return out


def mask_bits(mask: int) -> str:
    """A 32-bit active mask as lanes 31..0, e.g. '0101...0101' for 0x55555555."""
    return format(int(mask) & 0xFFFFFFFF, "032b")


# -- PTX and SASS ------------------------------------------------------------------------------

def find_tool(name: str) -> Optional[str]:
    """A CUDA binary utility (cuobjdump, nvdisasm, nvcc): on PATH, else from the pip wheels."""
    path = shutil.which(name)
    if path:
        return path
    for sp in sys.path:
        for hit in glob.glob(os.path.join(sp, "nvidia", "*", "bin", name)):
            if os.access(hit, os.X_OK):
                return hit
    return None


def _entry(ptx_text: str, kernel: str) -> str:
    """The ``.entry kernel`` function of a PTX module (the whole module if not found)."""
    start = ptx_text.find(f".entry {kernel}(")
    if start < 0:
        return ptx_text
    start = ptx_text.rfind("\n", 0, start) + 1
    depth, i = 0, ptx_text.find("{", start)
    for j in range(i, len(ptx_text)):
        depth += {"{": 1, "}": -1}.get(ptx_text[j], 0)
        if depth == 0:
            return ptx_text[start:j + 1]
    return ptx_text[start:]


def _target_arch() -> Tuple[str, str]:
    b = backend.detect()
    if b.is_gpu:
        return b.sm, f"for this GPU ({b.device_name})"
    return "sm_89", "for the deck's L4 (sm_89), compiled here without a GPU"


def ptx(file: str = VA_FILE, kernel: str = "vector_add") -> Tuple[Optional[str], str]:
    """PTX of ``kernel``: NVRTC (as the course compiles it) on a GPU, else the local nvcc.

    Returns (text, label); text is None when neither compiler is available, the label says why.
    """
    arch, where = _target_arch()
    compute = arch.replace("sm_", "compute_")
    src = kernels.read_source(file)
    if backend.has_gpu():
        try:
            from cupy_backends.cuda.libs import nvrtc
            prog = nvrtc.createProgram(src, file, [], [])
            try:
                nvrtc.compileProgram(prog, [f"-arch={compute}", *kernels.BASE_OPTIONS,
                                            f"-I{kernels.KERNEL_DIR}"])
                text = nvrtc.getPTX(prog)
            finally:
                nvrtc.destroyProgram(prog)
            text = text.decode() if isinstance(text, bytes) else text
            return _entry(text.rstrip("\x00"), kernel), f"PTX from NVRTC {where}"
        except Exception as exc:  # fall through to nvcc
            nvrtc_error = f"NVRTC failed ({type(exc).__name__}: {exc}); "
    else:
        nvrtc_error = ""
    nvcc = find_tool("nvcc")
    if nvcc is None:
        return None, nvrtc_error + "PTX not shown: no GPU (NVRTC) and no nvcc on this machine"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "k.ptx"
        proc = subprocess.run([nvcc, f"-arch={compute}", "-ptx", "-std=c++17", f"-I{kernels.KERNEL_DIR}",
                               "-o", str(out), str(kernels.kernel_path(file))], capture_output=True, text=True)
        if proc.returncode != 0:
            return None, f"PTX not shown: nvcc failed: {proc.stderr.strip()[:300]}"
        return _entry(out.read_text(), kernel), f"PTX from nvcc {where}"


def _nvrtc_cubin(file: str, arch: str) -> bytes:
    """A cubin of ``kernels/<file>`` for ``arch`` from NVRTC (GPU mode: NVRTC is known to load)."""
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(kernels.read_source(file), file, [], [])
    try:
        nvrtc.compileProgram(prog, [f"-arch={arch}", *kernels.BASE_OPTIONS, f"-I{kernels.KERNEL_DIR}"])
        return bytes(nvrtc.getCUBIN(prog))
    finally:
        nvrtc.destroyProgram(prog)


def sass(file: str = VA_FILE, kernel: str = "vector_add") -> Tuple[Optional[str], str]:
    """SASS (the machine code the SM runs) of ``kernel``, disassembled by cuobjdump -sass.

    The cubin comes from NVRTC on a GPU (as the course compiles it), else from the local nvcc.
    Returns (text, label); text is None when no cubin or no cuobjdump can be had, the label says why.
    Only instruction lines are kept (address, instruction), the padding after EXIT is dropped.
    """
    arch, where = _target_arch()
    cuobjdump = find_tool("cuobjdump")
    if cuobjdump is None:
        return None, ("SASS not shown: cuobjdump not found on this machine "
                      "(pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(cuobjdump) + os.pathsep + env.get("PATH", "")
    def disassemble(cubin):
        return subprocess.run([cuobjdump, "-sass", "-fun", kernel, str(cubin)], capture_output=True,
                              text=True, env=env)

    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        origin, why, proc = None, "", None
        if backend.has_gpu():
            try:
                cubin.write_bytes(_nvrtc_cubin(file, arch))
                proc = disassemble(cubin)
                if proc.returncode == 0:
                    origin = "NVRTC"
                else:  # e.g. a cuobjdump older than the NVRTC that wrote the cubin
                    why = f"cuobjdump could not read NVRTC's cubin ({proc.stderr.strip()[:160]}); "
            except Exception as exc:
                why = f"NVRTC cubin failed ({type(exc).__name__}: {str(exc)[:200]}); "
        if origin is None:
            nvcc = find_tool("nvcc")
            if nvcc is None:
                return None, why + "SASS not shown: no GPU (NVRTC) and no nvcc to build a cubin"
            proc = subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-std=c++17", f"-I{kernels.KERNEL_DIR}",
                                   "-o", str(cubin), str(kernels.kernel_path(file))], capture_output=True, text=True)
            if proc.returncode != 0:
                return None, why + f"SASS not shown: nvcc failed: {proc.stderr.strip()[:300]}"
            origin = "nvcc"
            proc = disassemble(cubin)
    if proc.returncode != 0:
        return None, why + f"SASS not shown: cuobjdump failed: {proc.stderr.strip()[:300]}"
    rows = []
    for line in proc.stdout.splitlines():
        s = line.strip()
        if s.startswith("/*") and "*/" in s:
            addr, rest = s[2:s.index("*/")], s[s.index("*/") + 2:]
            instr = rest.split("/*")[0].strip().rstrip(";").strip()
            if not instr:
                continue
            rows.append(f"/*{addr}*/  {instr}")
            if instr == "EXIT":
                break
    if not rows:
        return None, f"SASS not shown: cuobjdump printed no instructions for {kernel}"
    label = f"SASS of a {origin} cubin for {arch} ({where}), disassembled by cuobjdump"
    return "\n".join(rows), (label + f" [{why.rstrip('; ')}]" if why else label)


#: What each SASS mnemonic of vector_add does, in the deck's six steps' terms.
SASS_ROLES = (
    ("S2R", "1 index: read blockIdx.x / threadIdx.x"),
    ("CS2R", "1 index: read a special register"),
    ("S2UR", "1 index: read blockIdx.x (uniform register: same for the whole warp)"),
    ("IMAD.WIDE", "address: base + 4 * i (64-bit)"),
    ("IMAD", "1 index: i = blockIdx.x * blockDim.x + threadIdx.x"),
    ("ISETP", "2 bounds check: predicate P0 = (i >= n)"),
    ("@P0 EXIT", "2 bounds check: lanes with i >= n leave"),
    ("LDG", "3/4 load: one instruction, 32 lanes' floats"),
    ("FADD", "5 add: one instruction, 32 adds"),
    ("STG", "6 store: one instruction, 32 lanes' floats"),
    ("EXIT", "done"),
)


def classify_sass(text: str) -> list:
    """[(sass line, role)] for :func:`sass` output; role "setup (stack pointer, constants)" otherwise."""
    out = []
    for line in (text or "").splitlines():
        instr = line.split("*/", 1)[-1].strip()
        role = next((r for key, r in SASS_ROLES if instr.startswith(key)), "setup: stack pointer, constants, addresses")
        out.append((line, role))
    return out


def sass_instructions(text: str) -> list:
    """The instruction mnemonics of :func:`sass` output, e.g. ['MOV', 'S2R', ..., 'EXIT']."""
    out = []
    for line in (text or "").splitlines():
        instr = line.split("*/", 1)[-1].strip()
        if instr.startswith("@"):
            instr = instr.split(None, 1)[1]
        out.append(instr.split()[0].split(".")[0])
    return out


def main(argv=None) -> int:
    """``python -m gpu_viz.simt [--record]``: measure divergent vs uniform branches (GPU only);
    with --record save the rows as a GPU record (bench.save_record, tag "divergence")."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--record", action="store_true", help="save benchmarks/results/<gpu>-<date>-divergence.json")
    args = ap.parse_args(argv)
    if not backend.has_gpu():
        print(f"no GPU: nothing measured ({backend.detect().reason})")
        return 2
    out = divergence_cost()
    rows = [{"op": "divergence", "impl": k, "n": out["n"], "block": out["block"], "iters": out["iters"],
             "dtype": "float32", "timing": out[k].timing, "median_us": out[k].median_us,
             "p10_us": out[k].p10_us, "p90_us": out[k].p90_us} for k in model.DIVERGENCE_KERNELS]
    for r in rows:
        print(r)
    print(f"divergent / uniform = {out['ratio']:.2f}x")
    if args.record:
        from . import bench

        print(bench.save_record(bench.new_record(rows, divergence_ratio=out["ratio"]), tag="divergence"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
