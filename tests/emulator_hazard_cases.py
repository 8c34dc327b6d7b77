"""One minimal faulty kernel per hazard kind, each with its fixed twin: the emulator must report the
kind at the marked line on the faulty one and no error on the fixed one (tests/test_emulator.py);
on a GPU, compute-sanitizer runs them (scripts/sanitize/emulator_hazards.py) and
tests/test_emulator_gpu.py compares what it flags with what the emulator flags.

In each ``faulty`` source the line the hazard must be reported at ends with ``// <-- HAZARD``.
``make(rng, faulty)`` builds the arguments: numpy arrays become device buffers (:class:`Uninit`:
allocated and never written), numpy scalars are passed by value (``np.uint64(0)``: a null pointer).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

MARK = "// <-- HAZARD"


@dataclasses.dataclass
class Uninit:
    """A device buffer allocated and never written (cudaMalloc with no memset; ``Device.empty``)."""

    shape: int
    dtype: type = np.float32


@dataclasses.dataclass
class HazardCase:
    name: str
    kind: str                          # gpu_viz.emulator.hazards kind the faulty kernel must raise
    #: the compute-sanitizer tool expected to flag the faulty kernel on silicon (None: no tool looks
    #: there: racecheck sees shared memory only, initcheck global memory only)
    tool: Optional[str]
    kernel: str
    faulty: str
    fixed: str
    grid: Tuple[int, ...]
    block: Tuple[int, ...]
    make: Callable[[np.random.Generator, bool], List]
    launch: Dict = dataclasses.field(default_factory=dict)   # emulator launch options
    #: safe to run on silicon (False: the faulty kernel would hang the GPU)
    gpu: bool = True
    #: the text of more lines where the emulator may report it (e.g. the other of two barriers)
    also_lines: Sequence[str] = ()

    def line(self) -> int:
        """The 1-based line of the faulty source marked ``// <-- HAZARD``."""
        lines = self.faulty.split("\n")
        hits = [k + 1 for k, text in enumerate(lines) if MARK in text]
        assert len(hits) == 1, (self.name, hits)
        return hits[0]

    def lines(self) -> List[int]:
        """Every line the hazard may be reported at: the marked one, then those in ``also_lines``."""
        text = self.faulty.split("\n")
        return [self.line()] + [k + 1 for k, t in enumerate(text) if t.strip() in self.also_lines]

    def source(self, faulty: bool) -> str:
        return self.faulty if faulty else self.fixed


def run_emulated(case: HazardCase, faulty: bool, arch: str, rng: np.random.Generator, **options):
    """(run, host copies of the buffer arguments) of the faulty kernel or its fixed twin in the emulator."""
    from gpu_viz import emulator as em

    prog = em.compile(case.source(faulty), name=f"{case.name}.cu", arch=arch)
    dev = em.Device()
    args = []
    for k, a in enumerate(case.make(rng, faulty)):
        if isinstance(a, Uninit):
            args.append(dev.empty(a.shape, a.dtype, name=f"arg{k}"))
        elif isinstance(a, np.ndarray):
            args.append(dev.asarray(a, name=f"arg{k}"))
        else:
            args.append(a)
    run = prog.launch(case.kernel, case.grid, case.block, args, device=dev, **{**case.launch, **options})
    return run, [a.get() if isinstance(a, em.DeviceArray) else None for a in args]


CASES: Dict[str, HazardCase] = {}


def hazard(**kw) -> HazardCase:
    c = HazardCase(**kw)
    CASES[c.name] = c
    return c


def _f32(rng, n):
    return rng.standard_normal(n).astype(np.float32)


def _both(faulty: str, fix: Sequence[Tuple[str, str]]) -> Tuple[str, str]:
    """(faulty, fixed): the fixed source is the faulty one with each (old, new) replaced once."""
    fixed = faulty
    for old, new in fix:
        assert fixed.count(old) == 1, old
        fixed = fixed.replace(old, new)
    return faulty, fixed.replace(" " + MARK, "")


# memcheck -------------------------------------------------------------------------------------------------

src, fixed = _both(r"""
extern "C" __global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) y[i] = 2.0f * x[i];  // <-- HAZARD
}
""", [("i <= n", "i < n")])
hazard(name="oob_read", tool='memcheck', kind="out-of-bounds", kernel="scale", faulty=src, fixed=fixed, grid=(2,), block=(32,),
       make=lambda rng, f: [_f32(rng, 40), np.zeros(41, np.float32), np.int32(40)])

src, fixed = _both(r"""
extern "C" __global__ void shift(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i + 1] = x[i];  // <-- HAZARD
}
""", [("if (i < n)", "if (i + 1 < n)")])
hazard(name="oob_write", tool='memcheck', kind="out-of-bounds", kernel="shift", faulty=src, fixed=fixed, grid=(2,), block=(32,),
       make=lambda rng, f: [_f32(rng, 40), np.zeros(40, np.float32), np.int32(40)])

src, fixed = _both(r"""
extern "C" __global__ void reverse(const float* x, float* y) {
  __shared__ float s[32];
  int t = threadIdx.x;
  s[t] = x[t];  // <-- HAZARD
  __syncthreads();
  y[t] = s[blockDim.x - 1 - t];
}
""", [("s[32]", "s[64]")])
hazard(name="oob_shared", tool='memcheck', kind="out-of-bounds", kernel="reverse", faulty=src, fixed=fixed, grid=(1,), block=(64,),
       make=lambda rng, f: [_f32(rng, 64), np.zeros(64, np.float32)])

src = r"""
extern "C" __global__ void store(const float* x, float* y) {
  int i = threadIdx.x;
  y[i] = x[i] + 1.0f;  // <-- HAZARD
}
"""
hazard(name="null_pointer", tool='memcheck', kind="out-of-bounds", kernel="store", faulty=src, fixed=src.replace(" " + MARK, ""),
       grid=(1,), block=(32,), make=lambda rng, f: [_f32(rng, 32), np.uint64(0) if f else np.zeros(32, np.float32)])

src, fixed = _both(r"""
extern "C" __global__ void pairs(const float* x, float* y, int off) {
  int i = threadIdx.x;
  const float2* v = reinterpret_cast<const float2*>(x + off);
  float2 p = v[i];  // <-- HAZARD
  y[i] = p.x + p.y;
}
""", [])
hazard(name="misaligned", tool='memcheck', kind="misaligned", kernel="pairs", faulty=src, fixed=fixed, grid=(1,), block=(32,),
       make=lambda rng, f: [_f32(rng, 70), np.zeros(32, np.float32), np.int32(1 if f else 2)])

# racecheck ------------------------------------------------------------------------------------------------

src, fixed = _both(r"""
extern "C" __global__ void reverse(const float* x, float* y) {
  __shared__ float s[64];
  int t = threadIdx.x;
  s[t] = x[t];
  y[t] = s[63 - t];  // <-- HAZARD
}
""", [("  s[t] = x[t];\n", "  s[t] = x[t];\n  __syncthreads();\n")])
hazard(name="shared_race", tool='racecheck', kind="race", kernel="reverse", faulty=src, fixed=fixed, grid=(1,), block=(64,),
       make=lambda rng, f: [_f32(rng, 64), np.zeros(64, np.float32)])

src, fixed = _both(r"""
extern "C" __global__ void neighbour(const float* x, float* y) {
  __shared__ float s[64];
  int t = threadIdx.x;
  s[t] = x[t];
  y[t] = s[t ^ 1];  // <-- HAZARD
}
""", [("  s[t] = x[t];\n", "  s[t] = x[t];\n  __syncwarp();\n")])
hazard(name="lockstep", tool='racecheck', kind="lockstep", kernel="neighbour", faulty=src, fixed=fixed, grid=(1,), block=(64,),
       make=lambda rng, f: [_f32(rng, 64), np.zeros(64, np.float32)])

# __syncwarp() (full mask) where the warp has fewer than 32 lanes: the lanes a partial warp does not
# have, and lanes that returned, count as exited, and __syncwarp waits for the non-exited lanes of its
# mask only (CUDA Programming Guide), so the fixed twins are right (a full-mask SHUFFLE there is not:
# shuffle_mask).
src, fixed = _both(r"""
extern "C" __global__ void neighbour(const float* x, float* y) {
  __shared__ float s[64];
  int t = threadIdx.x;
  s[t] = x[t];
  y[t] = s[t ^ 1];  // <-- HAZARD
}
""", [("  s[t] = x[t];\n", "  s[t] = x[t];\n  __syncwarp();\n")])
hazard(name="syncwarp_partial_warp", tool='racecheck', kind="lockstep", kernel="neighbour", faulty=src, fixed=fixed,
       grid=(1,), block=(48,), make=lambda rng, f: [_f32(rng, 48), np.zeros(48, np.float32)])

src, fixed = _both(r"""
extern "C" __global__ void rotate(const float* x, float* y, int n) {
  __shared__ float s[32];
  int t = threadIdx.x;
  if (t >= n) return;
  s[t] = x[t];
  y[t] = s[(t + 1) % n];  // <-- HAZARD
}
""", [("  s[t] = x[t];\n", "  s[t] = x[t];\n  __syncwarp();\n")])
hazard(name="syncwarp_exited_lanes", tool='racecheck', kind="lockstep", kernel="rotate", faulty=src, fixed=fixed,
       grid=(1,), block=(32,), make=lambda rng, f: [_f32(rng, 32), np.zeros(32, np.float32), np.int32(20)])

src, fixed = _both(r"""
extern "C" __global__ void last(const int* x, int* y) {
  __shared__ int winner;
  int t = threadIdx.x;
  winner = x[t];  // <-- HAZARD
  __syncthreads();
  y[t] = winner;
}
""", [("  winner = x[t];", "  if (t == 0) winner = x[t];")])
hazard(name="same_instruction", tool='racecheck', kind="same-instruction", kernel="last", faulty=src, fixed=fixed, grid=(1,),
       block=(32,), make=lambda rng, f: [rng.permutation(32).astype(np.int32), np.zeros(32, np.int32)])

src, fixed = _both(r"""
extern "C" __global__ void count(int* counter) {
  counter[0] = counter[0] + 1;  // <-- HAZARD
}
""", [("counter[0] = counter[0] + 1;", "atomicAdd(counter, 1);")])
hazard(name="global_race", tool=None, kind="race", kernel="count", faulty=src, fixed=fixed, grid=(4,), block=(32,),
       make=lambda rng, f: [np.zeros(1, np.int32)])

# A compare-and-swap loop: its plain read of what other threads' atomics write is validated by the
# atomicCAS (retried when the value changed), so it is no race error, only a note; the load-add-store
# it replaces is one.  The float max goes through the int bits (atomicMax has no float form).
src, fixed = _both(r"""
extern "C" __global__ void count(const int* key, int* bins) {
  int k = key[blockIdx.x * blockDim.x + threadIdx.x];
  bins[k] = bins[k] + 1;  // <-- HAZARD
}
""", [("  bins[k] = bins[k] + 1;", """  int* p = &bins[k];
  int old = *p, assumed;
  do {
    assumed = old;
    old = atomicCAS(p, assumed, assumed + 1);
  } while (old != assumed);""")])
hazard(name="cas_loop", tool=None, kind="race", kernel="count", faulty=src, fixed=fixed, grid=(4,), block=(64,),
       make=lambda rng, f: [rng.integers(0, 4, 256).astype(np.int32), np.zeros(4, np.int32)])

src, fixed = _both(r"""
extern "C" __global__ void largest(const float* x, float* m) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  if (v > m[0]) m[0] = v;  // <-- HAZARD
}
""", [("  if (v > m[0]) m[0] = v;", """  int* p = (int*)m;
  int old = *p, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= v) break;
    old = atomicCAS(p, assumed, __float_as_int(v));
  } while (old != assumed);""")])
hazard(name="cas_max_float", tool=None, kind="race", kernel="largest", faulty=src, fixed=fixed, grid=(2,),
       block=(64,), make=lambda rng, f: [_f32(rng, 128), np.full(1, -np.inf, np.float32)])

# initcheck ------------------------------------------------------------------------------------------------

src, fixed = _both(r"""
extern "C" __global__ void half_filled(const float* x, float* y) {
  __shared__ float s[64];
  int t = threadIdx.x;
  if (t < 32) s[t] = x[t];
  __syncthreads();
  y[t] = s[t];  // <-- HAZARD
}
""", [("if (t < 32) s[t] = x[t];", "s[t] = t < 32 ? x[t] : 0.0f;")])
hazard(name="uninit_shared", tool=None, kind="uninitialized", kernel="half_filled", faulty=src, fixed=fixed, grid=(1,),
       block=(64,), make=lambda rng, f: [_f32(rng, 64), np.zeros(64, np.float32)])

src = r"""
extern "C" __global__ void plus_one(const float* x, float* y) {
  int i = threadIdx.x;
  y[i] = x[i] + 1.0f;  // <-- HAZARD
}
"""
hazard(name="uninit_global", tool='initcheck', kind="uninitialized", kernel="plus_one", faulty=src, fixed=src.replace(" " + MARK, ""),
       grid=(1,), block=(32,), make=lambda rng, f: [Uninit(32) if f else _f32(rng, 32), np.zeros(32, np.float32)])

# synccheck ------------------------------------------------------------------------------------------------

src, fixed = _both(r"""
extern "C" __global__ void first_warp(const float* x, float* y) {
  int warp = threadIdx.x / 32;
  if (warp == 0) __syncthreads();  // <-- HAZARD
  y[threadIdx.x] = x[threadIdx.x];
}
""", [("if (warp == 0) __syncthreads();", "__syncthreads();")])
# measured on an H200: synccheck does not flag it (warp 1 exits, and exited threads count as arrived)
hazard(name="barrier_one_warp", tool=None, kind="barrier-divergence", kernel="first_warp", faulty=src, fixed=fixed, grid=(1,),
       block=(64,), make=lambda rng, f: [_f32(rng, 64), np.zeros(64, np.float32)])

src, fixed = _both(r"""
extern "C" __global__ void two_barriers(const float* x, float* y) {
  __shared__ float s[64];
  int t = threadIdx.x;
  if (t < 32) {
    s[t] = x[t];
    __syncthreads();  // <-- HAZARD
  } else {
    s[t] = -x[t];
    __syncthreads();
  }
  y[t] = s[63 - t];
}
""", [("    __syncthreads();  // <-- HAZARD\n", ""), ("    __syncthreads();\n  }\n", "  }\n  __syncthreads();\n")])
hazard(name="barrier_two_places", tool='synccheck', kind="barrier-divergence", kernel="two_barriers", faulty=src, fixed=fixed,
       grid=(1,), block=(64,), make=lambda rng, f: [_f32(rng, 64), np.zeros(64, np.float32)],
       also_lines=("__syncthreads();",))

src, fixed = _both(r"""
extern "C" __global__ void half_warp(const float* x, float* y) {
  int lane = threadIdx.x % 32;
  if (lane < 16) __syncthreads();  // <-- HAZARD
  y[threadIdx.x] = x[threadIdx.x];
}
""", [("if (lane < 16) __syncthreads();", "__syncthreads();")])
hazard(name="barrier_in_warp", tool='synccheck', kind="barrier-divergence", kernel="half_warp", faulty=src, fixed=fixed, grid=(1,),
       block=(64,), make=lambda rng, f: [_f32(rng, 64), np.zeros(64, np.float32)])

src, fixed = _both(r"""
extern "C" __global__ void pair_sum(const float* x, float* y) {
  int t = threadIdx.x, lane = t % 32;
  int lanes = min(32, (int)blockDim.x - (t - lane));
  unsigned mask = 0xffffffffu;
  float v = x[t];
  float o = __shfl_down_sync(mask, v, 1);  // <-- HAZARD
  y[t] = lane + 1 < lanes ? v + o : v;
}
""", [("unsigned mask = 0xffffffffu;", "unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;")])
# measured on an H200: synccheck does not flag it (the partial warp's missing lanes were never launched)
hazard(name="shuffle_mask", tool=None, kind="shuffle-mask", kernel="pair_sum", faulty=src, fixed=fixed, grid=(1,), block=(100,),
       make=lambda rng, f: [_f32(rng, 100), np.zeros(100, np.float32)])

# only the emulator ------------------------------------------------------------------------------------------

src, fixed = _both(r"""
extern "C" __global__ void wait_for(const int* flag, int* y) {
  int k = 0;
  while (flag[0] != 0) {  // <-- HAZARD
    k++;
  }
  y[threadIdx.x] = k;
}
""", [("while (flag[0] != 0) {", "for (int left = flag[0]; left != 0; --left) {")])
hazard(name="runaway", tool=None, kind="runaway", kernel="wait_for", faulty=src, fixed=fixed, grid=(1,), block=(32,),
       make=lambda rng, f: [np.array([1 if f else 3], np.int32), np.zeros(32, np.int32)], launch={"budget": 20_000},
       gpu=False)

src, fixed = _both(r"""
extern "C" __global__ void ratio(const int* a, const int* b, int* c) {
  int i = threadIdx.x;
  c[i] = a[i] / b[i];  // <-- HAZARD
}
""", [("a[i] / b[i]", "b[i] != 0 ? a[i] / b[i] : 0")])
hazard(name="division_by_zero", tool=None, kind="division-by-zero", kernel="ratio", faulty=src, fixed=fixed, grid=(1,),
       block=(32,), make=lambda rng, f: [rng.integers(-100, 100, 32).astype(np.int32),
                                         np.arange(32, dtype=np.int32) - 5, np.zeros(32, np.int32)])

del src, fixed
