"""Sanitizer run for kernels/rmsnorm_fused.cu through gpu_viz.rmsnorm.fused (public as gpu_viz.ops):
small shapes, every dtype.

Run under compute-sanitizer by scripts/gpu-check, one tool at a time, e.g.
    compute-sanitizer --tool memcheck  python scripts/sanitize/rmsnorm_fused.py
    compute-sanitizer --tool racecheck python scripts/sanitize/rmsnorm_fused.py   (also synccheck, initcheck)
Covers each variant (warp / block / wide), the 16-byte and scalar paths, and every defect of the
seed write-up: N=768 in a 96-thread block (and 97, 100), N > 8192, N % 8 != 0, misaligned views,
row strides, M = 0, a NaN row, a non-default stream; plus the backward (torch composite); and
the add op and the extended paths: rmsnorm_add (y and h), fp32 weights with fp16/bf16 x, weight_offset, the
llama cast (both through the extended-output ``_x`` kernels, also in a hand-made block), the
misaligned element-wise kernels, wide rows (65536, 131072), the public plan path.
Framework memory pools are off (PYTORCH_NO_CUDA_MEMORY_CACHING=1, CuPy's allocator = cudaMalloc)
so memcheck sees every buffer's true bounds.  Each launch: fresh random data, NaN-poisoned
output, the float64 reference (gpu_viz.rmsnorm.reference) within the one tolerance table
(gpu_viz.rmsnorm.tolerances), compared by gpu_viz.check.  Exit 1 on any mismatch, 2 without a
GPU; one line per case.
"""
import os
import sys

os.environ.setdefault("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")

import numpy as np  # noqa: E402

DTYPES = ("float32", "float16", "bfloat16")


def main() -> int:
    from gpu_viz import backend

    # the package's names first, so that a renamed module fails here too, not only on a GPU
    from gpu_viz import check as checks
    from gpu_viz import ops
    from gpu_viz.rmsnorm import reference
    from gpu_viz.rmsnorm.fused import checks as fchecks
    from gpu_viz.rmsnorm.fused import config as fconfig
    from gpu_viz.rmsnorm.fused import launch as flaunch
    from gpu_viz.rmsnorm.fused import names as fnames
    from gpu_viz.rmsnorm.dtypes import DTYPES, torch_dtype
    from gpu_viz.rmsnorm.tolerances import tolerance

    if not backend.has_gpu():
        print(f"rmsnorm_fused sanitize: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    print(f"C++ launcher: {flaunch.ensure_launcher()}")  # built here if it is not yet, before any check
    import cupy
    import torch

    cupy.cuda.set_allocator(None)
    tdt = {name: torch_dtype(name) for name in DTYPES}
    rng = np.random.default_rng(2026)
    results = {"ok": 0, "fail": 0}

    def values(M, N, dtype, layout="contiguous", scale=1.0):
        v = torch.from_numpy((rng.standard_normal((M, N)) * scale).astype(np.float32)).to("cuda", tdt[dtype])
        if layout == "contiguous":
            return v
        if layout == "row_stride":  # rows of a wider buffer, stride N + 3 (scalar path)
            buf = torch.full((M, N + 3), float("nan"), device="cuda", dtype=tdt[dtype])
            buf[:, :N] = v
            return buf[:, :N]
        buf = torch.full((M * N + 1,), float("nan"), device="cuda", dtype=tdt[dtype])  # misaligned
        x = buf[1:].view(M, N)
        x.copy_(v)
        return x

    def check(label, got, ref, tol, nan_rows=()):
        try:
            if nan_rows:
                g = got.float().cpu().numpy()
                assert all(np.isnan(g[r]).all() for r in nan_rows), f"{label}: NaN row not NaN"
            # every element, the NaN rows too: NaN passes only where the float64 reference is NaN
            # the references are computed on the CPU (torch's float64 reduce kernel trips racecheck):
            # compare there, the kernel's output copied over
            cpu = lambda t: t.cpu() if hasattr(t, "cpu") else t  # noqa: E731
            rep = checks.assert_close(label, cpu(got), cpu(ref), atol=tol[0], rtol=tol[1])
            results["ok"] += 1
            print(f"ok   {label} max_abs_err={rep.max_abs_err:.2e}")
        except AssertionError as exc:  # gpu_viz.check.MismatchError is one
            results["fail"] += 1
            print(f"FAIL {exc}")

    def forward(M, N, dtype, gate, layout="contiguous", config=None, nan_row=None, stream=None,
                offset=0.0, cast="fp32"):
        x = values(M, N, dtype, layout)
        g = values(M, N, dtype, layout, 3.0) if gate else None
        w = values(1, N, dtype)[0]
        if nan_row is not None:
            x[nan_row, N // 2] = float("nan")
        info = fchecks.validate("rmsnorm_gate" if gate else "rmsnorm", x, g, w, 1e-6, offset, cast)
        out = torch.full((M, N), float("nan"), device="cuda", dtype=tdt[dtype])
        if stream is not None:
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                y = flaunch.launch(info, out=out, config=config)
        else:
            y = flaunch.launch(info, out=out, config=config)
        torch.cuda.synchronize()
        if offset or cast != "fp32":
            ref = reference.rmsnorm(x.cpu(), w.cpu(), 1e-6, g.cpu() if gate else None,
                                    weight_offset=offset, cast=cast)
        else:
            ref = ops.reference_rmsnorm_gate(x, g, w) if gate else ops.reference_rmsnorm(x, w)
        cfg = config or fconfig.config_for(M, N, dtype, gate, N % ops.DTYPES[dtype][2] == 0,
                                             ops.fits_l2(M, N, dtype, gate, ops.l2_bytes(0)), None,
                                             layout == "contiguous", None, fnames.out_ext(offset, cast == "llama"))
        label = (f"{'rmsnorm_gate' if gate else 'rmsnorm':12s} {dtype:8s} M={M:3d} N={N:6d} {layout:10s} "
                 f"{cfg.kernel} block={cfg.block}" + (" nan-row" if nan_row is not None else "")
                 + (" side-stream" if stream is not None else "")
                 + (f" offset={offset:g} cast={cast}" if offset or cast != "fp32" else ""))
        check(label, y, ref, tolerance(dtype), nan_rows=(nan_row,) if nan_row is not None else ())

    def forward_new(M, N, dtype, op, layout="contiguous", wdt=None, offset=0.0, cast="fp32"):
        """The add op (y and h poisoned), fp32 weights, the Gemma offset,
        the llama cast, the misaligned element-wise twins; through the launcher, then the
        public op (the plan path, or the wide module where it takes the row)."""
        x = values(M, N, dtype, layout)
        x2 = values(M, N, dtype, layout, 3.0) if op != "rmsnorm" else None
        w = values(1, N, wdt or dtype)[0]
        kw = {"weight_offset": offset, "cast": cast}
        info = fchecks.validate(op, x, x2, w, 1e-6, offset, cast)
        out = torch.full((M, N), float("nan"), device="cuda", dtype=tdt[dtype])
        h = torch.full((M, N), float("nan"), device="cuda", dtype=tdt[dtype]) if op == "rmsnorm_add" else None
        y = flaunch.launch(info, out=out, h_out=h)
        def public():
            return (ops.rmsnorm(x, w, **kw) if op == "rmsnorm" else ops.rmsnorm_gate(x, x2, w, **kw)
                    if op == "rmsnorm_gate" else ops.rmsnorm_add(x, x2, w, **kw)[0])
        pub = public()   # the layout's first call: Python makes its plan
        pub2 = public()  # its second: the C++ launcher's, where it is built
        torch.cuda.synchronize()
        # the float64 references on the CPU: torch's float64 mean over 131072 elements on the GPU
        # is a reduce kernel racecheck reports hazards in (torch's, not ours)
        xc, wc = x.cpu(), w.cpu()
        if op == "rmsnorm_add":
            y, hh = y
            src = xc + x2.cpu()
            check(f"{op:12s} {dtype:8s} M={M:3d} N={N:6d} {layout:10s} h", hh, src.double(), (0.0, 0.0))
            ref = reference.rmsnorm(src, wc, 1e-6, **kw)
        else:
            ref = reference.rmsnorm(xc, wc, 1e-6, x2.cpu() if x2 is not None else None, **kw)
        label = (f"{op:12s} {dtype:8s} M={M:3d} N={N:6d} {layout:10s} w={wdt or dtype} offset={offset:g} "
                 f"cast={cast}")
        check(label, y, ref, tolerance(dtype))
        check(label + " public", pub, ref, tolerance(dtype))
        check(label + " public, second call", pub2, pub.double(), (0.0, 0.0))

    for dtype in DTYPES:
        for op in ("rmsnorm", "rmsnorm_gate", "rmsnorm_add"):
            for M, N in ((5, 7), (5, 256), (5, 768), (3, 4096), (64, 4096), (2, 8200), (1, 16392), (2, 40000)):
                forward_new(M, N, dtype, op)
            forward_new(4, 4096, dtype, op, "offset")
            forward_new(3, 2048, dtype, op, "row_stride")
            forward_new(2, 32768, dtype, op, "offset")
            forward_new(3, 4096, dtype, op, offset=1.0, cast="llama")
            if dtype != "float32":
                for M, N in ((5, 256), (3, 4096), (2, 8200), (2, 65536)):
                    forward_new(M, N, dtype, op, wdt="float32", offset=1.0)
                forward_new(3, 4096, dtype, op, "offset", wdt="float32", cast="llama")
        for N in (65536, 131072):  # the wide-row module, where it takes the row (else this file's wide)
            forward_new(2, N, dtype, "rmsnorm")
            forward_new(2, N, dtype, "rmsnorm_gate")

    side = torch.cuda.Stream()
    for dtype in DTYPES:
        vec16 = ops.DTYPES[dtype][2]
        for gate in (False, True):
            # warp scalar / vector, block scalar / vector, wide scalar / vector
            for M, N in ((5, 7), (5, 768), (2, 1025), (2, 8200), (2, 8201), (1, 16392),
                         # 16-byte path edges of the chooser: last warp-per-row N, first block N
                         # (40 threads -> 64: idle lanes), 1024-thread EPT-8 block, lean reduction
                         (5, 256), (5, 264), (3, 8192), (3, 4096)):
                forward(M, N, dtype, gate)
            forward(5, 1000, dtype, gate, "offset")
            forward(2, 4100, dtype, gate, "row_stride")
            for block in (96, 97, 100):  # the seed's N=768 / 96-thread case, scalar and vector
                forward(3, 768, dtype, gate, config=ops.forced_config(
                    3, 768, dtype, variant="block", block=block, ept=8, gate=gate))
            forward(3, 768, dtype, gate, config=ops.forced_config(
                3, 768, dtype, variant="block", block=96, ept=8, vec=vec16, gate=gate))
            for offset, cast in ((1.0, "fp32"), (0.5, "llama")):  # the _x build in a hand-made block
                forward(3, 768, dtype, gate, config=ops.forced_config(
                    3, 768, dtype, variant="block", block=96, ept=8, vec=vec16, gate=gate, weight_offset=offset,
                    cast=cast), offset=offset, cast=cast)
            forward(2, 5000, dtype, gate, config=ops.forced_config(
                2, 5000, dtype, variant="wide", block=100, gate=gate))
            forward(4, 768, dtype, gate, nan_row=1)
            forward(4, 4096, dtype, gate, nan_row=2)
            forward(3, 4096, dtype, gate, stream=side)
            for N in (4096, 8192, 16384):  # the configs of problems beyond L2 (these small ones fit)
                forward(3, N, dtype, gate, config=ops.choose_config(3, N, dtype, gate=gate, fits_l2=False))
            y0 = ops.rmsnorm(values(0, 64, dtype), values(1, 64, dtype)[0])
            assert y0.shape == (0, 64)
            # backward (fp32 torch composite) against float64 autograd
            x = values(3, 768, dtype).requires_grad_(True)
            w = values(1, 768, dtype)[0].requires_grad_(True)
            g = values(3, 768, dtype, scale=3.0).requires_grad_(True) if gate else None
            G = values(3, 768, dtype)
            (ops.rmsnorm_gate(x, g, w) if gate else ops.rmsnorm(x, w)).backward(G)
            ref = ops.reference_grads(x, w, G, gate=g)
            atol, rtol = tolerance(dtype, grad=True)
            check(f"grad x      {dtype} gate={gate}", x.grad, ref["x"], (atol, rtol))
            check(f"grad weight {dtype} gate={gate}", w.grad, ref["weight"], (atol * 2, rtol))
            if gate:
                check(f"grad gate   {dtype}", g.grad, ref["gate"], (atol, rtol))
    # CuPy arrays on a CuPy stream (fp16, fp32: CuPy has no bfloat16)
    for dtype in ("float16", "float32"):
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            x = cupy.asarray(rng.standard_normal((3, 771)).astype(dtype))
            w = cupy.asarray(rng.standard_normal(771).astype(dtype))
            y = ops.rmsnorm(x, w)
        s.synchronize()
        check(f"cupy rmsnorm {dtype} 3x771 on a CuPy stream", y, ops.reference_rmsnorm(x, w), tolerance(dtype))
    total = results["ok"] + results["fail"]
    print(f"rmsnorm_fused sanitize: {results['fail']} mismatching checks of {total}")
    return 1 if results["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
