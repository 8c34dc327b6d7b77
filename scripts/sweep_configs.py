"""Time every register-resident launch configuration of the fused ops at a few shapes (GPU machine).

Usage: python scripts/sweep_configs.py
For each (op, M, N) in fp16 it forces each block variant (elements per thread 8/16/32, so
N/8, N/16, N/32 threads per row) and the wide variant, checks the output against float64, and
times it ("kernel" timing, inputs rotated past L2), next to what launch_config picks.  Data for
benchmarks/NOTES.md, not a record.
"""
import torch

from gpu_viz import bench, device, ops

SHAPES = [(16384, 4096), (32768, 8192), (128, 4096), (4096, 4096)]
l2 = device.current().l2_bytes
print(f"{'op':13s} {'M x N':>12s} {'config':28s} {'µs':>8s} {'GB/s':>7s}")
for gate in (False, True):
    op = "rmsnorm_gate" if gate else "rmsnorm"
    for M, N in SHAPES:
        nbytes = ops.bytes_moved(M, N, "float16", gate=gate)
        k = bench.rotation_count(nbytes, l2)
        xs = [torch.randn(M, N, device="cuda", dtype=torch.float16) for _ in range(k)]
        gs = [torch.randn(M, N, device="cuda", dtype=torch.float16) for _ in range(k)] if gate else None
        w = torch.randn(N, device="cuda", dtype=torch.float16)
        outs = [torch.empty_like(xs[0]) for _ in range(k)]
        picked = ops.launch_config(M, N, "float16", gate=gate)
        cands = [("picked " + picked["kernel"], None)]
        for ept in ops.EPT_CHOICES:
            threads = N // ept
            if 32 <= threads <= ops.BLOCK_MAX_THREADS[ept]:
                cands.append((f"block e{ept} x{threads}", ops.forced_config(M, N, "float16", variant="block",
                                                                          block=threads, ept=ept, vec=8, gate=gate)))
        cands.append(("wide x1024", ops.forced_config(M, N, "float16", variant="wide", block=ops.WIDE_THREADS,
                                                       vec=8, gate=gate)))
        for name, cfg in cands:
            def fn(i, cfg=cfg):
                info = ops._validate(xs[i % k], w, gs[i % k] if gate else None, 1e-6)
                return ops._launch(info, out=outs[i % k], config=cfg)
            try:
                y = fn(0)
                ref = (ops.reference_rmsnorm_gate(xs[0], gs[0], w) if gate else ops.reference_rmsnorm(xs[0], w))
                err = float(abs(y.double().cpu().numpy() - ref).max())
                if err > 0.05:
                    print(f"{op:13s} {M:>6d}x{N:<5d} {name:28s} WRONG (max err {err:.3g})")
                    continue
                t = bench.time_graph(fn, reps=50, calls_per_graph=k if k > 1 else 10)
                print(f"{op:13s} {M:>6d}x{N:<5d} {name:28s} {t.median_us:8.2f} {t.GBps(nbytes):7.0f}")
            except Exception as exc:  # a config the launcher refuses
                print(f"{op:13s} {M:>6d}x{N:<5d} {name:28s} refused: {str(exc)[:80]}")
