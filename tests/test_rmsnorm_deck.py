"""The deck's RMSNorm: the eager module (gpu_viz.rmsnorm.eager) and the four-phase kernel
(kernels/rmsnorm_deck.cu, deck + guarded variants) launched by gpu_viz.rmsnorm.deck.

CPU tests: the eager module vs float64, the float64 reference itself, gpu_viz.check.assert_close,
argument validation, the kernel file's regions, nvcc builds for every arch without spills.
GPU tests (``-m gpu``): the guarded kernel vs float64 over d x block x dtype with NaN-poisoned
outputs; the deck variant at its own launch; torch streams, CUDA graphs, CuPy arrays.
Tolerances per dtype: the one table, gpu_viz.rmsnorm.tolerances (its derivation is there).
"""
import math
import shutil

import numpy as np
import pytest
import torch

from gpu_viz import check, kernels
from gpu_viz.rmsnorm import deck, eager
from gpu_viz.rmsnorm.deck import four_phase
from gpu_viz.rmsnorm.dtypes import DTYPES, bytes_moved, torch_dtype
from gpu_viz.rmsnorm.eager import EagerRMSNorm
from gpu_viz.rmsnorm.reference import rmsnorm as reference
from gpu_viz.rmsnorm.tolerances import tolerance

TORCH_DTYPES = {name: torch_dtype(name) for name in DTYPES}
EPS = 1e-6


def _rand(rng, shape, dtype="float32", device="cpu"):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(
        device=device, dtype=TORCH_DTYPES[dtype])


def _check(got, want, dtype, name="y"):
    """``got`` against the float64 ``want`` within the one table's tolerance for ``dtype``."""
    atol, rtol = tolerance(dtype)
    return check.assert_close(name, got, want, atol=atol, rtol=rtol)


# ----------------------------------------------------------------------------- CPU: eager

@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (5, 768), (2, 4096), (2, 3, 123)])
def test_eager_matches_float64_fp32(rng, shape):
    x = _rand(rng, shape)
    w = _rand(rng, shape[-1:])
    m = EagerRMSNorm.from_weight(w, eps=EPS)
    y = m(x)
    assert y.dtype == torch.float32 and y.shape == x.shape
    _check(y, reference(x, w, EPS), "float32", name="eager y")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_eager_half_input_promotes_to_fp32_output(rng, dtype):
    # The deck's code: x * <fp32 tensor> promotes, so half input gives an fp32 output.
    x = _rand(rng, (4, 256), dtype)
    w = _rand(rng, (256,), dtype)
    y = EagerRMSNorm.from_weight(w, EPS)(x)
    assert y.dtype == torch.float32
    # computed in fp32 from the half values: fp32 accuracy against float64 of the same inputs
    check.assert_close("eager y", y, reference(x, w, EPS), atol=1e-5, rtol=1e-5)


def test_eager_module_is_the_deck_slide():
    import inspect

    src = inspect.getsource(EagerRMSNorm.forward)
    for line in ("v = x.float().pow(2)", ".mean(-1, keepdim=True)",
                 "xn = x * torch.rsqrt(v + self.eps)", "return self.weight * xn"):
        assert line in src
    assert "chapter_1/llama_inference.py" in EagerRMSNorm.__doc__
    m = EagerRMSNorm(16, eps=1e-5)
    assert m.weight.shape == (16,) and m.eps == 1e-5 and torch.all(m.weight == 1)


def test_eager_ops_are_six_in_fp32_seven_in_half(rng):
    m = EagerRMSNorm(64)
    ops32 = eager.eager_ops(m, _rand(rng, (2, 64)))
    assert ops32 == ["pow", "mean", "add", "rsqrt", "mul", "mul"]
    m16 = EagerRMSNorm(64, dtype=torch.float16)
    ops16 = eager.eager_ops(m16, _rand(rng, (2, 64), "float16"))
    assert ops16[0] == "_to_copy" and len(ops16) == 7


def test_eager_traffic_counts_intermediates():
    rows = eager.eager_traffic(1024, 2048, "float32")
    assert [r[0] for r in rows] == ["pow(2)", "mean(-1)", "+ eps", "rsqrt", "x * rsqrt", "weight * xn"]
    n = 1024 * 2048 * 4
    total = sum(r + w for _, r, w in rows)
    assert 7 * n < total < 7 * n + 64 * 1024  # seven full-size passes plus per-row scalars
    fused = bytes_moved(1024, 2048, "float32")  # what one kernel must move: x, w in; y out
    assert fused == 2 * n + 2048 * 4
    half = eager.eager_traffic(8, 16, "float16")
    assert half[0] == ("x.float() (_to_copy)", 8 * 16 * 2, 8 * 16 * 4) and len(half) == 7
    with pytest.raises(TypeError, match="dtype int8 is not supported"):
        eager.eager_traffic(1, 1, "int8")


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_eager_rejects_bad_d(bad):
    with pytest.raises(ValueError, match="d must be a positive int"):
        EagerRMSNorm(bad)


# ----------------------------------------------------------------------------- CPU: reference, check

def test_reference_against_closed_form():
    x = np.array([[3.0, 4.0], [1.0, -1.0]])
    w = np.array([2.0, 0.5])
    y = reference(x, w, eps=0.0)
    np.testing.assert_allclose(y, [[3 / math.sqrt(12.5) * 2, 4 / math.sqrt(12.5) * 0.5],
                                   [2.0, -0.5]], rtol=1e-15)


def test_reference_d1_is_sign_times_weight():
    x = np.array([[5.0], [-0.25]])
    np.testing.assert_allclose(reference(x, np.array([3.0]), eps=0.0), [[3.0], [-3.0]])


def test_reference_rejects_mismatched_weight():
    with pytest.raises(ValueError, match=r"weight must have shape \(N,\) = \(4,\)"):
        reference(np.ones((2, 4)), np.ones(3))


def test_assert_close_names_buffer_index_and_nan():
    ref = np.arange(10.0)
    got = ref.copy()
    got[3] = np.nan
    got[7] += 1.0
    with pytest.raises(check.MismatchError, match=r"y: 2 of 10 .*1 NaN.*\(3,\): got nan") as ei:
        check.assert_close("y", got, ref, atol=1e-6, rtol=1e-6)
    assert [idx for idx, _, _ in ei.value.report.first] == [(3,), (7,)]
    assert check.assert_close("y", ref + 1e-9, ref, atol=1e-6, rtol=0).n == 10


def test_assert_close_catches_an_unwritten_nan_poisoned_output():
    with pytest.raises(check.MismatchError, match="4 NaN"):
        check.assert_close("y", np.full(4, np.nan), np.zeros(4), atol=1.0, rtol=1.0)


# ----------------------------------------------------------------------------- CPU: validation

def _ok(rng, M=2, d=8, dtype="float32"):
    return _rand(rng, (M, d), dtype), _rand(rng, (d,), dtype)


@pytest.mark.parametrize("kwargs, exc, pattern", [
    ({"variant": "fast"}, ValueError, r"variant must be one of \('deck', 'guarded'\)"),
    ({"block": 16}, ValueError, r"block must be in 32\.\.1024 threads.*got 16"),
    ({"block": 2048}, ValueError, r"block must be in 32\.\.1024.*got 2048"),
    ({"block": 256.0}, TypeError, r"block must be an int"),
    ({"eps": -1.0}, ValueError, r"eps must be finite and >= 0"),
    ({"eps": float("nan")}, ValueError, r"eps must be finite"),
])
def test_four_phase_rejects_bad_options(rng, kwargs, exc, pattern):
    x, w = _ok(rng)
    with pytest.raises(exc, match=pattern):
        four_phase(x, w, **kwargs)


def test_four_phase_rejects_bad_arrays(rng):
    x, w = _ok(rng)
    with pytest.raises(TypeError, match="x must be a torch.Tensor or cupy.ndarray"):
        four_phase(x.numpy(), w)
    with pytest.raises(TypeError, match="weight must be the same kind of array as x"):
        four_phase(x, w.numpy())
    with pytest.raises(ValueError, match="x must have dtype float32, float16 or bfloat16, got float64"):
        four_phase(x.double(), w.double())
    with pytest.raises(ValueError, match="weight must have the same dtype as x \\(float32\\), got float16"):
        four_phase(x, w.half())
    with pytest.raises(ValueError, match=r"weight must have shape \(d,\) = \(8,\).*got \(7,\)"):
        four_phase(x, w[:7])
    with pytest.raises(ValueError, match=r"at least one feature per row"):
        four_phase(x[:, :0], w[:0])
    with pytest.raises(ValueError, match="x must be contiguous"):
        four_phase(_rand(rng, (8, 2)).t(), w)
    with pytest.raises(ValueError, match="weight must be contiguous"):
        four_phase(x, _rand(rng, (16,))[::2])
    with pytest.raises(ValueError, match=r"x must be on a CUDA device, got device 'cpu'.*x\.cuda\(\)"):
        four_phase(x, w)
    with pytest.raises(ValueError, match=r"x must have shape \(M, d\)"):
        four_phase(torch.tensor(1.0), w)


def test_four_phase_rejects_bad_out(rng):
    x, w = _ok(rng)
    with pytest.raises(ValueError, match="out must have x's shape"):
        deck.validate(x, w, out=torch.empty(3, 8))
    with pytest.raises(TypeError, match="out must be the same kind"):
        deck.validate(x, w, out=np.empty((2, 8), np.float32))


def test_kernel_names():
    assert deck.kernel_name("deck", "float16") == "rmsnorm_deck_f16"
    assert deck.kernel_name("guarded", "bfloat16") == "rmsnorm_guarded_bf16"
    with pytest.raises(ValueError, match="dtype must be one of"):
        deck.kernel_name("deck", "float64")


# ----------------------------------------------------------------------------- CPU: nvcc build

@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", kernels.ARCHES)
def test_rmsnorm_deck_cu_builds_without_spills(arch):
    usage = {u.kernel: u for u in kernels.nvcc_compile(deck.FILE, arch)}
    expected = {deck.kernel_name(v, t) for v in deck.VARIANTS for t in deck.DTYPES}
    assert set(usage) == expected
    for name, u in usage.items():
        assert u.spill_stores_bytes == 0 and u.spill_loads_bytes == 0 and u.stack_frame_bytes == 0, u
        assert u.registers <= 64, u  # __launch_bounds__(1024): 1024 threads x 64 regs = 64K regs/SM


def test_regions_are_the_deck_phases():
    """The regions the notebooks show; phase 3 (thread 0 publishes the RMS) is the same code in
    both variants: the guarded one differs from the deck's only in phase 2."""
    for region, needle in [("phase1", "local += v * v;"), ("phase2", "float total = (tid < 32) ? smem[tid] : 0;"),
                           ("phase3", "if (tid == 0) {"), ("phase3", "smem_rstd = rsqrtf(mean + eps);"),
                           ("phase4", "float rstd = smem_rstd;"),
                           ("guarded_phase2", "block_reduce_sum(local, smem)"),
                           ("guarded_phase2", "deck_phase2(local, smem)")]:
        assert needle in kernels.snippet(deck.FILE, region).text, (region, needle)


# ============================================================================= GPU

GPU_DS = (1, 7, 768, 2048, 4096, 5000, 8192, 16384)
GPU_BLOCKS = (32, 96, 128, 256, 1000, 1024)


def _poisoned_like(x):
    out = torch.empty_like(x)
    out.fill_(float("nan"))
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
@pytest.mark.parametrize("block", GPU_BLOCKS)
@pytest.mark.parametrize("d", GPU_DS)
def test_guarded_matches_float64(rng, d, block, dtype):
    M = 3
    x = _rand(rng, (M, d), dtype, "cuda")
    w = _rand(rng, (d,), dtype, "cuda")
    out = _poisoned_like(x)
    y = four_phase(x, w, EPS, block=block, variant="guarded", out=out)
    torch.cuda.synchronize()
    assert y is out and y.dtype == x.dtype
    _check(y, reference(x, w, EPS), dtype, name=f"y[d={d}, block={block}, {dtype}]")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_deck_variant_right_at_its_own_launch(rng, dtype):
    # the deck: 1024 threads (32 warps) on rows of 2048 features
    x = _rand(rng, (64, deck.DECK_D), dtype, "cuda")
    w = _rand(rng, (deck.DECK_D,), dtype, "cuda")
    for variant in deck.VARIANTS:
        y = four_phase(x, w, EPS, block=1024, variant=variant, out=_poisoned_like(x))
        torch.cuda.synchronize()
        _check(y, reference(x, w, EPS), dtype, name=f"{variant} y")


@pytest.mark.gpu
@pytest.mark.parametrize("block", [32, 64, 96, 256, 992])
def test_guarded_right_where_deck_is_undefined(rng, block):
    # fewer than 32 warps: the deck's phase 2 reads unwritten smem; the guarded one must be right
    x = _rand(rng, (17, deck.DECK_D), "float32", "cuda")
    w = _rand(rng, (deck.DECK_D,), "float32", "cuda")
    y = four_phase(x, w, EPS, block=block, out=_poisoned_like(x))
    torch.cuda.synchronize()
    _check(y, reference(x, w, EPS), "float32")
    with pytest.warns(RuntimeWarning, match="uninitialised shared memory"):
        four_phase(x, w, EPS, block=block, variant="deck")
    torch.cuda.synchronize()


@pytest.mark.gpu
def test_runs_on_the_current_torch_stream(rng):
    # If the kernel ignored torch's (non-blocking) side stream, it would read x before the
    # queued sleep + copy on that stream finished, and see the old values.
    d = 2048
    x = torch.zeros(256, d, device="cuda")
    w = _rand(rng, (d,), "float32", "cuda")
    new = _rand(rng, (256, d), "float32", "cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        x.copy_(new)
        y = four_phase(x, w, EPS, out=_poisoned_like(x))
    side.synchronize()
    _check(y, reference(new, w, EPS), "float32", name="y on side stream")


@pytest.mark.gpu
def test_captures_in_a_cuda_graph(rng):
    d = 4096
    x = _rand(rng, (32, d), "float16", "cuda")
    w = _rand(rng, (d,), "float16", "cuda")
    out = _poisoned_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        four_phase(x, w, EPS, out=out)  # warm up: compile outside the capture
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        four_phase(x, w, EPS, out=out)
    out.fill_(float("nan"))
    x.copy_(_rand(rng, (32, d), "float16", "cuda"))
    g.replay()
    torch.cuda.synchronize()
    _check(out, reference(x, w, EPS), "float16", name="graph-replayed y")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cupy_arrays_and_empty_rows(rng, dtype):
    import cupy as cp

    x = cp.asarray(rng.standard_normal((5, 3, 300)).astype(dtype))
    w = cp.asarray(rng.standard_normal(300).astype(dtype))
    cp.cuda.Device().synchronize()  # the side stream below does not wait for the null stream
    with cp.cuda.Stream(non_blocking=True):
        y = four_phase(x, w, EPS, block=96)
        cp.cuda.get_current_stream().synchronize()
    assert isinstance(y, cp.ndarray) and y.shape == x.shape and y.dtype == x.dtype
    _check(y, reference(x, w, EPS), dtype)
    empty = four_phase(x[:0], w)
    assert empty.shape == (0, 3, 300)


@pytest.mark.gpu
def test_eager_on_gpu_launches_one_kernel_per_op(rng):
    m = EagerRMSNorm(2048, device="cuda")
    x = _rand(rng, (16, 2048), "float32", "cuda")
    names = eager.eager_kernels(m, x)
    ops = eager.eager_ops(m, x)
    assert len(ops) == 6 and len(names) >= len(ops), (ops, names)
    y = four_phase(x, m.weight.detach(), m.eps)
    torch.cuda.synchronize()
    _check(y, reference(x, m.weight, m.eps), "float32")
    _check(m(x), reference(x, m.weight, m.eps), "float32", name="eager y")


@pytest.mark.gpu
def test_kernel_attributes_fit_1024_threads():
    for variant in deck.VARIANTS:
        for dtype in deck.DTYPES:
            k = deck.get_kernel(variant, dtype)
            assert k.max_threads_per_block == 1024 and k.local_size_bytes == 0
