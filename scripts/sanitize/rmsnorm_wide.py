"""Sanitizer run for kernels/rmsnorm_wide.cu through gpu_viz.rmsnorm.wide: small wide shapes,
both ops, the policy at every row-length bucket (2- to 16-CTA clusters) in fp16 and fp32, each
bucket's policy shape in every mode (registers, shared memory, shared memory with the mbarrier
exchange, split between the two) where its shared memory fits, bf16 with an fp32 weight, a partly
filled configuration (N = 40000), and HYBRID's knobs: its register chunks and weight distance, and
the gate read in the last step (gate_late) in fp16, bf16 with an fp32 weight and fp32.
``--hybrid``: only those last cases.

Run under compute-sanitizer, one tool at a time, e.g.
    compute-sanitizer --tool memcheck  python scripts/sanitize/rmsnorm_wide.py
    compute-sanitizer --tool racecheck python scripts/sanitize/rmsnorm_wide.py   (also synccheck, initcheck)
The torch caching allocator is off (PYTORCH_NO_CUDA_MEMORY_CACHING=1) so memcheck sees every
buffer's true bounds.  Each launch: fresh random data, NaN-poisoned output, the float64
reference (on the CPU, so that only our kernels run under the tool) within the one tolerance
table (gpu_viz.rmsnorm.bench.check_rows).  Exit 1 on any mismatch, 2 without a GPU or without
clusters; one line per case.
"""
import os
import sys

os.environ.setdefault("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")

def cases(wide):
    """(dtype, weight dtype, N, M, shape, options): the policy (shape None) at every bucket (fp16,
    fp32) and each bucket's policy shape in every mode whose shared memory fits, with an fp32
    weight (bf16), a partly filled configuration, then :func:`hybrid_cases`."""
    out = []
    for dt, M in (("float16", 2), ("float32", 1)):
        size = 2 if dt == "float16" else 4
        for N in sorted(wide.POLICY["rmsnorm"][size]):
            out.append((dt, dt, N, M, None))
            c, t, e, _ = wide.POLICY["rmsnorm"][size][N]
            for mode in wide.MODES:
                try:  # the gate op's slice is twice x's: where even rmsnorm's does not fit, skip
                    wide.config(N, dt, (9, 0), gate=True, shape=(c, t, e, mode))
                except ValueError:
                    continue
                out.append((dt, dt, N, M, (c, t, e, mode)))
    out += [("bfloat16", "float32", 65536, 2, None), ("bfloat16", "float32", 262144, 1, None),
            ("bfloat16", "bfloat16", 40000, 3, None)]
    return [c + ({},) for c in out] + hybrid_cases(wide)


def hybrid_cases(wide):
    """(dtype, weight dtype, N, M, shape, options) of HYBRID's knobs: its register chunks and
    weight distance (and ``gate_late``, for the gate op's run of the case only)."""
    H = wide.HYBRID
    return [("float16", "float16", 131072, 2, (4, 512, 64, H), dict(hreg=2, wdist=3)),
            ("float32", "float32", 40000, 2, (4, 256, 64, H), dict(hreg=12, wdist=16)),
            # the gate read in the last step (its rmsnorm twin runs without gate_late)
            ("float16", "float16", 200000, 2, (4, 1024, 64, H), dict(hreg=2, wdist=2, gate_late=True)),
            ("bfloat16", "float32", 262144, 1, (4, 1024, 64, H), dict(hreg=1, wdist=1, gate_late=True)),
            ("float32", "float32", 262144, 1, (8, 1024, 32, H), dict(hreg=1, wdist=2, gate_late=True))]


def case_options(kw, gate: bool):
    """A case's options for one op: ``gate_late`` is the gate op's only."""
    return {k: v for k, v in kw.items() if gate or k != "gate_late"}


def main() -> int:
    from gpu_viz import backend
    from gpu_viz.rmsnorm import wide
    from gpu_viz.rmsnorm.bench import check_rows
    from gpu_viz.rmsnorm.dtypes import torch_dtype

    if not backend.has_gpu():
        print(f"rmsnorm_wide sanitize: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    import torch

    if not wide.supported(65536, "float16", torch.cuda.get_device_capability()):
        print("rmsnorm_wide sanitize: no thread-block clusters on this GPU", file=sys.stderr)
        return 2
    gen = torch.Generator(device="cuda").manual_seed(1234)
    failures = 0
    for dt, wdt, N, M, shape, kw in (hybrid_cases(wide) if "--hybrid" in sys.argv[1:] else cases(wide)):
        for gate in (False, True):
            opts = case_options(kw, gate)
            x = torch.randn(M, N, device="cuda", generator=gen).to(torch_dtype(dt))
            g = (2 * torch.randn(M, N, device="cuda", generator=gen)).to(x.dtype) if gate else None
            w = (1 + 0.5 * torch.randn(N, device="cuda", generator=gen)).to(torch_dtype(wdt))
            out = torch.full_like(x, float("nan"))
            rstd = wide.forward(x, w, 1e-6, out, gate=g, shape=shape, **opts)
            torch.cuda.synchronize()
            # the float64 reference on the CPU: only our kernels run on the GPU under the tool
            ok, msg = check_rows("rmsnorm_gate" if gate else "rmsnorm", out.cpu(), x.cpu(), w.float().cpu(),
                                 g.cpu() if gate else None, 1e-6, dt)
            ok = ok and bool(torch.isfinite(rstd.cpu()).all())
            cfg = wide.config(N, dt, torch.cuda.get_device_capability(), gate=gate, weight_dtype=wdt, shape=shape, **opts)
            print(f"{'ok  ' if ok else 'FAIL'} {cfg.kernel} M={M} N={N}: {msg[:200]}", flush=True)
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
