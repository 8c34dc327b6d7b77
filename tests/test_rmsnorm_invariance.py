"""Batch invariance, weights in another dtype, Gemma's offset, HF's cast order, the fused
residual add and the per-call plan path of the fused ops (gpu_viz.rmsnorm.fused).

CPU: the chooser's sum order never depends on M (``reduction_order``), and a float32
emulation of the kernels' reduction gives the same bits for both launch shapes a row of 8-16 KB
may get; HF state dicts load unchanged.  GPU (marked ``gpu``): bit-for-bit rows at
M = 1, 3, 64, 1000, 4096 and in misaligned views; fp32 weights, offsets, the llama cast and the
add op against float64 references; their gradients; plans across layouts.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gpu_viz import check, ops  # noqa: E402
from gpu_viz.rmsnorm.fused import checks as fchecks, config as fconfig, launch as flaunch
from gpu_viz.rmsnorm import reference  # noqa: E402
from gpu_viz.rmsnorm.dtypes import torch_dtype  # noqa: E402
from gpu_viz.rmsnorm.tolerances import tolerance  # noqa: E402

gpu = pytest.mark.gpu
INVARIANCE_M = (1, 3, 64, 1000, 4096)
KERNEL_OPS = ("rmsnorm", "rmsnorm_gate", "rmsnorm_add")


# ---------------------------------------------------------------------------------------
# CPU: the policy

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("op", KERNEL_OPS)
def test_sum_order_never_depends_on_M(dtype, op):
    """For every N up to 20000 (and the wide ones), every M and both fits_l2: one sum order."""
    two = op != "rmsnorm"
    vec16 = ops.DTYPES[dtype][2]
    Ns = list(range(1, 20001)) + [32768, 65536, 131072, 262144]
    for N in Ns:
        orders = set()
        for vectorized in ({N % vec16 == 0}):
            for M in (1, 3, 64, 1000, 4096, 10 ** 6):
                for fits in (False, True):
                    for aligned in (True, False):
                        cfg = fconfig.config_for(M, N, dtype, two, vectorized, fits, op, aligned)
                        orders.add(ops.reduction_order(cfg))
        assert len(orders) == 1, (N, orders)


def _emulate_sum(sq: np.ndarray, vec: int, block: int, ept: int) -> np.ndarray:
    """float32 sum of squares per row, in the order the block kernel adds them (see
    kernels/rmsnorm_fused.cu, "Batch invariance"): per-vector chains, one butterfly per chunk
    (or one chain per thread over its chunks when the kernel's canonical form is off), the
    tree over a thread's chunks, then the butterfly over warp totals."""
    rows, N = sq.shape
    nvec, chunks, nw = N // vec, ept // vec, block // 32
    canon = chunks > 1
    p = np.zeros((rows, block * chunks), np.float32)  # vector j's chain, j < nvec
    acc = np.zeros((rows, nvec), np.float32)
    for k in range(vec):
        acc = (acc + sq[:, k::vec][:, :nvec]).astype(np.float32)
    p[:, :nvec] = acc
    # thread t, chunk c holds vector t + c * block
    part = p.reshape(rows, chunks, block)  # [row, c, t]

    def butterfly(v):  # v [..., 32] -> the xor butterfly's total (same in every lane)
        for off in (16, 8, 4, 2, 1):
            idx = np.arange(32) ^ off
            v = (v + v[..., idx]).astype(np.float32)
        return v[..., 0]

    if canon:
        s = butterfly(part.reshape(rows, chunks, nw, 32))  # [row, c, w]
        h = chunks // 2
        while h >= 1:
            s[:, :h] = (s[:, :h] + s[:, h:2 * h]).astype(np.float32)
            h //= 2
        wt = s[:, 0]
    else:
        wt = butterfly(part[:, 0].reshape(rows, nw, 32))
    lanes = np.zeros((rows, 32), np.float32)
    lanes[:, :nw] = wt
    return butterfly(lanes)


@pytest.mark.parametrize("N", [4096, 4104, 6144, 8192])
def test_both_launch_shapes_add_in_one_order(rng, N):
    """The chooser's two shapes for 8-16 KB fp16 rows (one vector per thread when the problem
    fits L2, several otherwise) give bit-identical sums in the float32 emulation; a block of a
    count of warps that is not a power of two (what the chooser avoids) would not."""
    a = fconfig.config_for(64, N, "float16", False, True, True)
    b = fconfig.config_for(10 ** 5, N, "float16", False, True, False)
    assert (a.ept, b.ept) == (8, 16) and a.kernel != b.kernel
    x = rng.standard_normal((256, N)).astype(np.float16).astype(np.float32)
    sq = (x * x).astype(np.float32)
    sa, sb = _emulate_sum(sq, 8, a.block, a.ept), _emulate_sum(sq, 8, b.block, b.ept)
    assert np.array_equal(sa.view(np.uint32), sb.view(np.uint32))
    odd = 32 * (-(-(N // 8) // 2 // 32))  # the unrounded thread count
    if (odd // 32) & (odd // 32 - 1):
        so = _emulate_sum(sq, 8, odd, 16)
        assert not np.array_equal(sa.view(np.uint32), so.view(np.uint32))


def _hf_llama_rmsnorm_cls():
    # HF transformers' LlamaRMSNorm (src/transformers/models/llama/modeling_llama.py), its forward
    # verbatim in substance: fp32 statistic, normalised value cast back, then weight *.
    class LlamaRMSNorm(torch.nn.Module):
        def __init__(self, hidden_size, eps=1e-6):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(hidden_size))
            self.variance_epsilon = eps

        def forward(self, hidden_states):
            input_dtype = hidden_states.dtype
            hidden_states = hidden_states.to(torch.float32)
            variance = hidden_states.pow(2).mean(-1, keepdim=True)
            hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
            return self.weight * hidden_states.to(input_dtype)
    return LlamaRMSNorm


def _hf_gemma_forward(x, weight, eps):
    # HF GemmaRMSNorm: everything in fp32, (1 + w), one cast at the end (output.type_as(x)).
    xf = x.float()
    out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (out * (1.0 + weight.float())).type_as(x)


def test_state_dicts_load_unchanged():
    hf = _hf_llama_rmsnorm_cls()(64)
    with torch.no_grad():
        hf.weight.copy_(torch.randn(64))
    m = ops.FusedRMSNorm(64, cast="llama")  # fp32 weight, as HF's
    m.load_state_dict(hf.state_dict(), strict=True)
    assert torch.equal(m.weight, hf.weight) and m.weight.dtype == torch.float32
    gemma_sd = {"weight": torch.randn(64) * 0.1}  # Gemma stores w and scales by (1 + w)
    g = ops.FusedRMSNorm(64, weight_offset=1.0)
    assert torch.equal(g.weight, torch.zeros(64))  # the identity before loading
    g.load_state_dict(gemma_sd, strict=True)
    assert "weight_offset=1" in repr(g) and "cast='llama'" in repr(m)
    with pytest.raises(ValueError, match="cast must be one of .*'llama': HF LlamaRMSNorm's order"):
        ops.FusedRMSNorm(8, cast="gemma")  # the same words as the op's own check
    for bad in (torch.int32, torch.float64, torch.complex64):  # refused when made, naming dtype
        with pytest.raises(TypeError, match=r"dtype \(of the weight\) must be torch.float32"):
            ops.FusedRMSNorm(8, dtype=bad)
    with pytest.raises(TypeError, match="weight must be a torch CUDA tensor or a CuPy array, got None"):
        ops.rmsnorm(torch.ones(2, 8), None)


def test_new_arguments_checked():
    x, w = torch.randn(2, 8), torch.randn(8)
    with pytest.raises(ValueError, match="cast must be one of"):
        ops.rmsnorm(x, w, cast="bf16")
    with pytest.raises(ValueError, match="weight_offset"):
        ops.rmsnorm(x, w, weight_offset=float("inf"))
    with pytest.raises(ValueError, match="residual must have x's shape"):
        ops.rmsnorm_add(x, torch.randn(2, 7), w)
    with pytest.raises(ValueError, match="x is on device cpu"):
        ops.rmsnorm_add(x, x, w)
    with pytest.raises(TypeError, match="residual must be a torch CUDA tensor"):
        ops.rmsnorm_add(x, None, w)
    with pytest.raises(TypeError, match="gate must be a torch CUDA tensor"):
        ops.rmsnorm_gate(x, None, w)


def test_reference_llama_cast_rounds_once_between():
    x = torch.randn(4, 32, dtype=torch.bfloat16)
    w = torch.randn(32, dtype=torch.float32)
    ref = reference.rmsnorm(x, w, 1e-6, cast="llama")
    x64 = x.double()
    n = (x64 / (x64.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()).to(torch.bfloat16).double()
    assert torch.equal(ref, n * w.double())
    assert not torch.equal(ref, reference.rmsnorm(x, w, 1e-6))


# ---------------------------------------------------------------------------------------
# GPU

def _rand(rng, shape, dtype, scale=1.0):
    return torch.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32)).to("cuda", torch_dtype(dtype))


def _apply(op, x, x2, w, **kw):
    if op == "rmsnorm":
        return ops.rmsnorm(x, w, 1e-6, **kw)
    if op == "rmsnorm_gate":
        return ops.rmsnorm_gate(x, x2, w, 1e-6, **kw)
    return ops.rmsnorm_add(x, x2, w, 1e-6, **kw)[0]


def _bits(t):
    return t.contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32)


@gpu
@pytest.mark.parametrize("N", [768, 2048, 4096, 6144, 8192, 16384, 32768])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("op", KERNEL_OPS)
def test_rows_bit_identical_at_every_M(rng, op, dtype, N):
    """op(x[:m]) row for row equals op(x) bit for bit at m = 1, 3, 64, 1000 against 4096 (the
    problem fits L2 at the small m, not at 4096 for N >= 4096), also for one row taken from
    the middle, and for the same values in a misaligned view (the element-wise kernels)."""
    Mx = max(INVARIANCE_M)
    x = _rand(rng, (Mx, N), dtype)
    x2 = _rand(rng, (Mx, N), dtype, 3.0) if op != "rmsnorm" else None
    w = _rand(rng, (N,), dtype) + 1
    full = _apply(op, x, x2, w)
    ref = (ops.reference_rmsnorm(x[:64], w) if op == "rmsnorm" else
           ops.reference_rmsnorm_gate(x[:64], x2[:64], w) if op == "rmsnorm_gate" else
           reference.rmsnorm_add(x[:64], x2[:64], w)[0])
    check.assert_close(f"{op} {dtype} N={N}", full[:64], ref, atol=tolerance(dtype)[0], rtol=tolerance(dtype)[1])
    bad = []
    for m in INVARIANCE_M[:-1]:
        part = _apply(op, x[:m], x2[:m] if x2 is not None else None, w)
        if not torch.equal(_bits(part), _bits(full[:m])):
            bad.append(f"M={m}")
    mid = 2049
    one = _apply(op, x[mid:mid + 1], x2[mid:mid + 1] if x2 is not None else None, w)
    if not torch.equal(_bits(one), _bits(full[mid:mid + 1])):
        bad.append("row 2049 alone")
    buf = torch.empty(64 * N + 1, device="cuda", dtype=x.dtype)
    xm = buf[1:].view(64, N)
    xm.copy_(x[:64])
    mis = _apply(op, xm, x2[:64] if x2 is not None else None, w)
    if not torch.equal(_bits(mis), _bits(full[:64])):
        bad.append("misaligned view")
    torch.cuda.synchronize()
    assert not bad, f"{op} {dtype} N={N}: rows differ from op(x[:4096])'s at {bad}"


@gpu
@pytest.mark.parametrize("xdt", ["float16", "bfloat16"])
@pytest.mark.parametrize("N", [256, 4096, 5000, 8192, 32768])
def test_fp32_weight_llama_and_gemma(rng, xdt, N):
    """fp32 weights with fp16/bf16 x: output in x's dtype; the default (one rounding) and the
    llama cast against float64 references in their own terms and against HF's module; Gemma's
    offset against HF's Gemma formula."""
    x = _rand(rng, (37, N), xdt)
    w = _rand(rng, (N,), "float32") * 0.5 + 1
    atol, rtol = tolerance(xdt)
    y = ops.rmsnorm(x, w)
    assert y.dtype == x.dtype
    check.assert_close("fp32 weight", y, reference.rmsnorm(x, w), atol=atol, rtol=rtol)
    yl = ops.rmsnorm(x, w, cast="llama")
    check.assert_close("llama cast", yl, reference.rmsnorm(x, w, cast="llama"), atol=atol, rtol=rtol)
    hf = _hf_llama_rmsnorm_cls()(N).cuda()
    with torch.no_grad():
        hf.weight.copy_(w)
    want = hf(x)
    assert want.dtype == torch.float32  # HF promotes; ours stays in x's dtype
    check.assert_close("llama vs HF", yl, want.to(x.dtype).double(), atol=atol, rtol=rtol)
    wg = _rand(rng, (N,), "float32") * 0.1
    yg = ops.rmsnorm(x, wg, weight_offset=1.0)
    check.assert_close("gemma offset", yg, reference.rmsnorm(x, wg, weight_offset=1.0), atol=atol, rtol=rtol)
    check.assert_close("gemma vs HF", yg, _hf_gemma_forward(x, wg, 1e-6).double(), atol=atol, rtol=rtol)
    g = _rand(rng, (37, N), xdt, 3.0)
    check.assert_close("gate fp32 weight offset", ops.rmsnorm_gate(x, g, wg, weight_offset=1.0),
                       reference.rmsnorm(x, wg, 1e-6, g, weight_offset=1.0), atol=atol, rtol=rtol)


@gpu
@pytest.mark.parametrize("op", KERNEL_OPS)
def test_plain_kernels_give_the_x_builds_bits_on_plain_calls(rng, monkeypatch, op):
    """The plain kernels hold only the plain output loop; their _x twins hold all three behind
    the uniform branch and, launched with the same plain arguments, take its plain side: the
    same bits at every variant (warp, block, this file's wide; 16-byte, scalar, misaligned), dtype and
    weight dtype, a -0 weight staying -0 in both."""
    monkeypatch.setattr(flaunch, "uses_wide", lambda *a, **k: False)  # wide rows: this file's kernel
    for dtype in ("float16", "bfloat16", "float32"):
        for wdt in ((dtype,) if dtype == "float32" else (dtype, "float32")):
            for N in (7, 256, 1000, 4096, 8200, 20000, 20001):
                x = _rand(rng, (5, N), dtype)
                x2 = _rand(rng, (5, N), dtype, 3.0) if op != "rmsnorm" else None
                w = _rand(rng, (N,), wdt)
                w[0] = -0.0
                buf = torch.empty(5 * N + 1, device="cuda", dtype=x.dtype)
                for xv in (x, buf[1:].view(5, N).copy_(x)):
                    info = fchecks.validate(op, xv, x2, w, 1e-6)
                    plain = flaunch.launch(info)
                    with monkeypatch.context() as m:
                        m.setattr(fchecks, "out_ext", lambda offset, llama: True)  # the _x twin, plain arguments
                        ext = flaunch.launch(info)
                    outs = [r if op == "rmsnorm_add" else (r,) for r in (plain, ext)]  # (y, h) or (y,)
                    for a, b in zip(*outs):
                        assert torch.equal(_bits(a), _bits(b)), (op, dtype, wdt, N, xv.data_ptr() % 16)


@gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("N", [100, 1024, 4096, 8200, 16384, 65536])
def test_residual_add(rng, dtype, N):
    x, r = _rand(rng, (45, N), dtype), _rand(rng, (45, N), dtype)
    w = _rand(rng, (N,), dtype) + 1
    y, h = ops.rmsnorm_add(x, r, w)
    assert torch.equal(h, x + r), "h is torch's own x + residual, bit for bit"
    atol, rtol = tolerance(dtype)
    check.assert_close(f"add y N={N}", y, reference.rmsnorm(x + r, w), atol=atol, rtol=rtol)
    ya, ha = torch.ops.gpu_viz.rmsnorm_add(x, r, w, 1e-6)
    assert torch.equal(ya, y) and torch.equal(ha, h)


@gpu
@pytest.mark.parametrize("case", ["fp32w_offset", "add", "gate_fp32w"])
def test_gradients_of_the_new_paths(rng, case):
    N, M = 512, 12
    x = _rand(rng, (M, N), "bfloat16" if case != "add" else "float32").requires_grad_(True)
    w = (_rand(rng, (N,), "float32") * 0.1).requires_grad_(True)
    G = _rand(rng, (M, N), x.dtype)
    x64, w64 = x.detach().double().requires_grad_(True), w.detach().double().requires_grad_(True)
    if case == "fp32w_offset":
        y = ops.rmsnorm(x, w, weight_offset=1.0)
        y64 = x64 * (w64 + 1) / (x64.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()
        (y * G).sum().backward()
        (y64 * G.double()).sum().backward()
        pairs = [("dx", x.grad, x64.grad), ("dw", w.grad, w64.grad)]
    elif case == "gate_fp32w":
        g = _rand(rng, (M, N), x.dtype, 3.0).requires_grad_(True)
        g64 = g.detach().double().requires_grad_(True)
        y = ops.rmsnorm_gate(x, g, w)
        y64 = x64 * w64 * (g64 * torch.sigmoid(g64)) / (x64.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()
        (y * G).sum().backward()
        (y64 * G.double()).sum().backward()
        pairs = [("dx", x.grad, x64.grad), ("dw", w.grad, w64.grad), ("dg", g.grad, g64.grad)]
    else:
        r = _rand(rng, (M, N), x.dtype).requires_grad_(True)
        r64 = r.detach().double().requires_grad_(True)
        GH = _rand(rng, (M, N), x.dtype)
        y, h = ops.rmsnorm_add(x, r, w)
        h64 = x64 + r64
        y64 = h64 * w64 / (h64.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()
        ((y * G).sum() + (h * GH).sum()).backward()
        ((y64 * G.double()).sum() + (h64 * GH.double()).sum()).backward()
        pairs = [("dx", x.grad, x64.grad), ("dres", r.grad, r64.grad), ("dw", w.grad, w64.grad)]
    for name, got, want in pairs:
        atol, rtol = tolerance(got.dtype, grad=True)
        check.assert_close(f"{case} {name}", got, want, atol=atol, rtol=rtol)


def same_on_a_side_stream_and_in_a_graph(x, w, y):
    """ops.rmsnorm(x, w) gives y's bits on another current stream (read per call, not planned)
    and replayed from a CUDA graph (shared with tests/test_rmsnorm_launcher.py)."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y2 = ops.rmsnorm(x, w)
    s.synchronize()
    assert torch.equal(y2, y)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        yg = ops.rmsnorm(x, w)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(yg, y)


@gpu
def test_plans_follow_the_layout(rng):
    """A plan per layout: a view with another stride or a misaligned base gets its own plan
    and the right answer; a CPU tensor after a cached CUDA call still gets the clear error."""
    x = _rand(rng, (64, 4096), "float16")
    w = _rand(rng, (4096,), "float16")
    flaunch.clear_plans()  # both caches: a C++ plan of an earlier test's layout would answer first
    y = ops.rmsnorm(x, w)
    n = len(flaunch._plans())
    assert n == 1
    assert torch.equal(ops.rmsnorm(x, w), y) and len(flaunch._plans()) == n
    wide = torch.empty(64, 4104, device="cuda", dtype=x.dtype)
    wide[:, :4096] = x
    assert torch.equal(ops.rmsnorm(wide[:, :4096], w), y) and len(flaunch._plans()) == n + 1
    with pytest.raises(ValueError, match="x is on device cpu"):
        ops.rmsnorm(x.cpu(), w)
    with pytest.raises(TypeError, match="weight has dtype"):
        ops.rmsnorm(x, w.bfloat16())
    same_on_a_side_stream_and_in_a_graph(x, w, y)


@gpu
def test_launchers_agree(rng, monkeypatch):
    x = _rand(rng, (300, 4096), "bfloat16")
    w = _rand(rng, (4096,), "float32")
    out = {}
    for launcher in flaunch.LAUNCHERS:
        monkeypatch.setattr(flaunch, "LAUNCHER", launcher)
        out[launcher] = ops.rmsnorm(x, w)
    torch.cuda.synchronize()
    assert torch.equal(out["driver"], out["cupy"])


def test_wide_dispatch_depends_on_N_dtype_and_GPU_only():
    """The cluster path (gpu_viz.rmsnorm.wide) takes a row by op, N, dtype and compute capability
    (uses_wide has no M, stride or pointer to look at); the add op and the llama cast stay on
    rmsnorm_fused.cu's kernels; sm_89 and N below the cluster path's range stay there too."""
    from gpu_viz.rmsnorm import wide

    for N in (32768, 65536, 131072, 262144):
        for dt in ("float16", "bfloat16", "float32"):
            assert ops.uses_wide("rmsnorm", N, dt, (9, 0)) == wide.supported(N, dt, (9, 0))
            assert ops.uses_wide("rmsnorm_gate", N, dt, (9, 0), weight_dtype="float32") == wide.supported(N, dt, (9, 0))
            assert not ops.uses_wide("rmsnorm_add", N, dt, (9, 0))
            assert not ops.uses_wide("rmsnorm", N, dt, (9, 0), cast="llama")
            assert not ops.uses_wide("rmsnorm", N, dt, (8, 9))
    assert ops.uses_wide("rmsnorm", 65536, "float16", (9, 0))
    assert not ops.uses_wide("rmsnorm", 4096, "float16", (9, 0))
