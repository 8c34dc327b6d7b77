"""The emulator's throughput on this machine: warp-instructions per second for four kernels (a
vector add, a 1024-thread block reduction, a grid-stride loop, a divergent kernel), with and
without the race / initialisation checks.  Every run's output is checked against numpy first.

    python benchmarks/emulator_bench.py                      # print the table
    python benchmarks/emulator_bench.py --out benchmarks/cpu   # and write cpu-emulator-<date>.json (CPU records stay out of results/)
    python benchmarks/emulator_bench.py --profile block_sum  # cProfile of one kernel, top 25 functions

Not a test: the numbers depend on the machine and its load (a 2-core CI-class machine is the one
the record names).  Seconds are the emulation's wall time (``Run.seconds``), best of ``--repeat``;
``cpu_seconds`` the process's CPU time in that run (less sensitive to other processes' load).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

SOURCE = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float s[1024];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 32; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t < 32) {
    float v = s[t] + s[t + 32];
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if (t == 0) out[blockIdx.x] = v;
  }
}

extern "C" __global__ void saxpy(float a, const float* x, float* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}

extern "C" __global__ void divergent(const int* k, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int m = k[i];
  float acc = 0.0f;
  if (threadIdx.x & 1) {
    for (int j = 0; j < m; ++j) acc += (float)j * 0.5f;
  } else {
    for (int j = 0; j < m / 2; ++j) acc -= (float)j;
  }
  switch (m & 3) {
    case 0: acc *= 2.0f; break;
    case 1: acc += 1.0f; break;
    default: acc = -acc;
  }
  out[i] = acc;
}
"""

MACHINE = "2-core CPU (CI class)"


def _cases(seed: int = 2026):
    """(name, kernel, grid, block, threads, args builder, check) per benchmark; each builder draws
    the same inputs every call (the rows with and without checks run the same data)."""
    def vector_add(dev):
        rng = np.random.default_rng(seed)
        n = 1 << 18
        a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        c = dev.full(n, np.nan, np.float32)
        return (dev.asarray(a), dev.asarray(b), c, np.int32(n)), lambda: np.array_equal(c.get(), a + b)

    def block_sum(dev):
        rng = np.random.default_rng(seed)
        n = 64 * 1024
        x = rng.integers(-8, 8, n).astype(np.float32)          # integer sums: exact in any order
        out = dev.full(64, np.nan, np.float32)
        return (dev.asarray(x), out, np.int32(n)), lambda: np.array_equal(out.get(), x.reshape(64, 1024).sum(1))

    def saxpy(dev):
        rng = np.random.default_rng(seed)
        n = 1 << 17
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        Y = dev.asarray(y)
        want = (np.float32(2.5) * x.astype(np.float64) + y).astype(np.float32)   # fma: one rounding
        return (np.float32(2.5), dev.asarray(x), Y, np.int64(n)), lambda: np.array_equal(Y.get(), want)

    def divergent(dev):
        rng = np.random.default_rng(seed)
        n = 16384
        k = rng.integers(0, 24, n).astype(np.int32)
        out = dev.full(n, np.nan, np.float32)

        def ref():
            res = np.empty(n, np.float32)
            for i, m in enumerate(k.tolist()):
                acc = np.float32(0)
                for j in range(m if i & 1 else m // 2):
                    acc = np.float32(acc + np.float32(j) * np.float32(0.5)) if i & 1 else np.float32(acc - np.float32(j))
                acc = {0: acc * np.float32(2), 1: acc + np.float32(1)}.get(m & 3, -acc)
                res[i] = acc
            return res
        return (dev.asarray(k), out, np.int32(n)), lambda: np.array_equal(out.get(), ref())

    return [("vector_add", "vector_add", (1024,), (256,), 1 << 18, vector_add),
            ("block_sum_1024", "block_sum", (64,), (1024,), 64 * 1024, block_sum),
            ("grid_stride", "saxpy", (4,), (256,), 1024, saxpy),
            ("divergent", "divergent", (64,), (256,), 16384, divergent)]


def measure(repeat: int = 2, only=None, arch: str = "sm_75"):
    from gpu_viz import emulator as em

    prog = em.compile(SOURCE, name="emulator_bench.cu", arch=arch)
    rows = []
    for name, kernel, grid, block, threads, build in _cases():
        if only and name not in only:
            continue
        for checks in (True, False):
            best, best_cpu = None, None
            for _ in range(repeat):
                dev = em.Device()
                args, check = build(dev)
                cpu0 = time.process_time()
                run = prog.launch(kernel, grid, block, args, device=dev, checks=checks)
                cpu = time.process_time() - cpu0
                if not (run.completed and not run.hazards.errors() and check()):
                    raise AssertionError(f"{name}: wrong result or a hazard: {[h.text() for h in run.hazards]}")
                if best is None or run.seconds < best.seconds:
                    best, best_cpu = run, cpu
            rows.append({"kernel": name, "threads": threads, "warp_instructions": best.warp_instructions,
                         "seconds": round(best.seconds, 4),
                         "warp_instructions_per_second": round(best.warp_instructions / best.seconds),
                         "checks": checks, "cpu_seconds": round(best_cpu, 4)})
            print(f"{name:16s} checks={checks!s:5s} {best.warp_instructions:9,d} warp-instr {best.seconds:7.3f} s "
                  f"(cpu {best_cpu:6.3f} s) {best.warp_instructions / best.seconds:10,.0f} warp-instr/s", flush=True)
    return rows


def record(rows, arch: str) -> dict:
    from gpu_viz.emulator import nvrtc

    major, minor = nvrtc.version()
    return {"date": datetime.date.today().isoformat(), "machine": MACHINE, "python": platform.python_version(),
            "numpy": np.__version__, "nvrtc": f"{major}.{minor}", "arch": arch,
            # the records' common header (benchmarks/README.md): no GPU took part in this one
            "gpu": None, "sm": None, "driver": None, "cuda": None, "torch": None, "cupy": None,
            "note": "emulated on the CPU from the kernels' PTX; seconds: the emulation's wall time (best of the "
                    "repeats), cpu_seconds: this process's CPU time in that run; the machine is shared, see load_average",
            "load_average": [round(v, 2) for v in os.getloadavg()],
            "rows": [dict(op="emulate", **r) for r in rows]}


def profile(name: str, arch: str) -> None:
    import cProfile
    import pstats

    cProfile.runctx("measure(1, [name], arch)", globals(), {"measure": measure, "name": name, "arch": arch},
                    "/tmp/emulator_bench.prof")
    pstats.Stats("/tmp/emulator_bench.prof").sort_stats("tottime").print_stats(25)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="a folder: write cpu-emulator-<date>.json there")
    ap.add_argument("--repeat", type=int, default=2, help="runs per row; the fastest is kept (default 2)")
    ap.add_argument("--only", nargs="*", help="benchmark names (vector_add block_sum_1024 grid_stride divergent)")
    ap.add_argument("--arch", default="sm_75")
    ap.add_argument("--profile", metavar="NAME", help="cProfile one benchmark instead")
    args = ap.parse_args(argv)
    if args.profile:
        profile(args.profile, args.arch)
        return 0
    rows = measure(args.repeat, args.only, args.arch)
    if args.out:
        rec = record(rows, args.arch)
        path = Path(args.out) / f"cpu-emulator-{rec['date']}.json"
        path.write_text(json.dumps(rec, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
