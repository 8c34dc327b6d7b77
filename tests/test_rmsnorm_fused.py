"""gpu_viz.ops: fused RMSNorm / RMSNorm + SiLU gate (kernels/rmsnorm_gate.cu).

CPU part: argument checks, the launch-config chooser for every N in 1..70000, the nvcc build
(sm_75 / sm_89 / sm_90, no spills), the fake (meta) kernels, the float64 references and the
fp32 backward formula.  GPU part (``-m gpu``): hypothesis shapes, dtypes, row strides and
misaligned views against float64 with NaN-poisoned outputs, every defect of the seed write-up,
streams (torch and CuPy), torch.compile(fullgraph=True), CUDA-graph capture, gradients.
"""
from __future__ import annotations

import math
import os

import numpy as np

import pytest

torch = pytest.importorskip("torch")

from gpu_viz import backend, ops  # noqa: E402

DTYPES = ("float32", "float16", "bfloat16")
TORCH_DTYPE = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


# ---------------------------------------------------------------------------------------
# CPU: argument checks (kind, dtype, shape, strides, eps, device) with clear messages

def _xw(M=4, N=8, dtype=torch.float32):
    return torch.randn(M, N).to(dtype), torch.randn(N).to(dtype)


@pytest.mark.parametrize("has_gpu", [True, False], ids=["gpu-machine", "cpu-mode"])
def test_cpu_tensors_rejected_naming_the_argument(monkeypatch, has_gpu):
    """The remedy fits the machine: .cuda() where a GPU is usable; in CPU mode (where .cuda()
    fails too) the CPU reference function instead."""
    monkeypatch.setattr(backend, "has_gpu", lambda: has_gpu)
    x, w = _xw()
    hint = r"x\.cuda\(\)" if has_gpu else r"no usable GPU, CPU mode: gpu_viz\.ops\.reference_rmsnorm computes"
    with pytest.raises(ValueError, match=rf"x is on device cpu.*CUDA tensors.*{hint}"):
        ops.rmsnorm(x, w)
    hint = r"x\.cuda\(\)" if has_gpu else r"gpu_viz\.ops\.reference_rmsnorm_gate computes"
    with pytest.raises(ValueError, match=rf"x is on device cpu.*{hint}"):
        ops.rmsnorm_gate(x, torch.randn(4, 8), w)


def test_cpu_tensors_rejected_before_the_dispatcher():
    """A CPU tensor is refused in gpu_viz.ops itself, not inside torch's custom-op dispatch:
    the traceback ends in our frames (a learner reads ~3 frames, not ~10 of torch's)."""
    x, w = _xw()
    g = torch.randn(4, 8)
    xg = x.clone().requires_grad_(True)  # would go through torch.ops.gpu_viz.* (autograd)
    for call in (lambda: ops.rmsnorm(x, w), lambda: ops.rmsnorm_gate(x, g, w),
                 lambda: ops.rmsnorm(xg, w), lambda: ops.rmsnorm_gate(xg, g, w)):
        with pytest.raises(ValueError, match="is on device cpu") as exc:
            call()
        frames = [str(entry.path) for entry in exc.traceback]
        torch_dir = os.path.dirname(torch.__file__)
        assert not [f for f in frames if f.startswith(torch_dir)], frames


def test_host_arrays_rejected():
    x, w = _xw()
    with pytest.raises(TypeError, match=r"x must be a torch CUDA tensor or a CuPy array, got numpy.ndarray \(host"):
        ops.rmsnorm(x.numpy(), w)
    with pytest.raises(TypeError, match=r"weight must be a torch CUDA tensor or a CuPy array, got builtins.list"):
        ops.rmsnorm(x, [1.0] * 8)


@pytest.mark.parametrize("bad", [torch.int32, torch.int64, torch.float64, torch.bool])
def test_unsupported_dtypes_rejected(bad):
    x, w = _xw()
    with pytest.raises(TypeError, match=r"x has dtype torch\.\w+; expected float32, float16 or bfloat16"):
        ops.rmsnorm(x.to(bad), w.to(bad))
    with pytest.raises(TypeError, match=r"weight has dtype torch\.\w+; expected"):
        ops.rmsnorm(x, w.to(bad))


def test_mismatched_dtypes_rejected():
    x, w = _xw()
    with pytest.raises(TypeError, match=r"weight has dtype float16 but x has float32"):
        ops.rmsnorm(x, w.half())
    with pytest.raises(TypeError, match=r"gate has dtype bfloat16 but x has float32"):
        ops.rmsnorm_gate(x, x.bfloat16(), w)


def test_shapes_checked():
    x, w = _xw(4, 8)
    with pytest.raises(ValueError, match=r"weight must have shape \(N,\) = \(8,\) to match x of shape \(4, 8\), got \(7,\)"):
        ops.rmsnorm(x, w[:7])
    with pytest.raises(ValueError, match=r"weight must have shape \(N,\)"):
        ops.rmsnorm(x, w.reshape(2, 4))
    with pytest.raises(ValueError, match=r"gate must have x's shape \(4, 8\), got \(4, 7\)"):
        ops.rmsnorm_gate(x, x[:, :7], w)
    with pytest.raises(ValueError, match=r"last dimension N must be >= 1"):
        ops.rmsnorm(torch.randn(4, 0), torch.randn(0))
    with pytest.raises(ValueError, match=r"at least one dimension"):
        ops.rmsnorm(torch.tensor(1.0), torch.randn(1))


def test_non_contiguous_last_dim_rejected():
    x, w = _xw(4, 16)
    with pytest.raises(ValueError, match=r"x must be contiguous in its last dimension \(stride 1\), got stride 2"):
        ops.rmsnorm(x[:, ::2], w[:8])
    with pytest.raises(ValueError, match=r"weight must be contiguous in its last dimension"):
        ops.rmsnorm(x[:, :8], w[::2])
    with pytest.raises(ValueError, match=r"gate must be contiguous in its last dimension"):
        ops.rmsnorm_gate(x[:, :8], x[:, ::2], w[:8])
    with pytest.raises(ValueError, match=r"x must be contiguous"):
        ops.rmsnorm(torch.randn(8, 4).t(), w[:8])


@pytest.mark.parametrize("eps, err", [(-1e-6, ValueError), (float("nan"), ValueError),
                                      (float("inf"), ValueError), ("1e-6", TypeError), (None, TypeError)])
def test_eps_checked(eps, err):
    x, w = _xw()
    with pytest.raises(err, match="eps must be"):
        ops.rmsnorm(x, w, eps)


def test_dtype_name_accepts_the_usual_spellings():
    assert ops.dtype_name(torch.float16) == ops.dtype_name(np.float16) == ops.dtype_name("half") == "float16"
    assert ops.dtype_name(torch.bfloat16) == "bfloat16"
    with pytest.raises(TypeError, match="not supported"):
        ops.dtype_name(np.int8)


# ---------------------------------------------------------------------------------------
# CPU: the launch-config chooser covers every N in 1..70000 with a valid config

_NAMES = {n: ops.describe_kernel(n) for n in ops.kernel_names()}


def _threads(N: int, vec: int, ept: int) -> int:
    return -(-(N // vec) // (ept // vec) // 32) * 32 if N % vec == 0 else None


def _assert_valid(cfg: ops.LaunchConfig, M: int, N: int, fits_l2: bool = False):
    assert cfg.kernel in _NAMES
    d = _NAMES[cfg.kernel]
    assert (d["variant"], d["vec"], d["ept"]) == (cfg.variant, cfg.vec, cfg.ept)
    assert N % cfg.vec == 0
    if cfg.variant == ops.WARP:
        assert N <= (ops.WARP_ROW_MAX_N_VECTOR if cfg.vec > 1 else ops.WARP_ROW_MAX_N)
        assert cfg.block == 32 * ops.WARP_ROWS_PER_BLOCK
        assert cfg.capacity == 32 * cfg.ept >= N
        assert cfg.grid * cfg.rows_per_block >= M > (cfg.grid - 1) * cfg.rows_per_block or M == cfg.grid == 0
    elif cfg.variant == ops.BLOCK:
        assert 32 <= cfg.block <= ops.BLOCK_MAX_THREADS[cfg.ept] and cfg.block % 32 == 0
        chunks = cfg.ept // cfg.vec
        assert cfg.block * chunks * cfg.vec >= N  # every vector of the row has a thread
        assert (cfg.block - 32) * chunks * cfg.vec < N  # and no whole idle warp
        assert cfg.grid == M
        if cfg.vec == 1:
            assert cfg.ept in ops.SCALAR_BLOCK_EPT
        else:
            size = ops.DTYPES[cfg.dtype][1]
            inputs = 2 if cfg.op == "rmsnorm_gate" else 1  # x (and gate) bytes in flight per thread
            if N * size < ops.MULTI_VECTOR_ROW_BYTES:  # short rows: one 16-byte vector per thread
                assert cfg.ept == 8 and cfg.block <= 1024
            elif fits_l2 and cfg.vec in ops.EPT_CHOICES and _threads(N, cfg.vec, cfg.vec) <= min(
                    ops.BLOCK_TARGET_THREADS, ops.BLOCK_MAX_THREADS[cfg.vec]):
                # x, gate, y in L2 and a one-vector-per-thread block exists: that one
                assert cfg.ept == cfg.vec and cfg.block == _threads(N, cfg.vec, cfg.vec)
            else:  # long rows: >= 32 bytes per thread in <= 512 threads, the smallest such EPT
                assert cfg.ept * size * inputs >= ops.MULTI_VECTOR_BYTES_PER_THREAD or N > 512 * cfg.ept
                if N <= 512 * 32:
                    assert cfg.block <= ops.MULTI_VECTOR_TARGET_THREADS
                smaller = [e for e in ops.EPT_CHOICES
                           if e < cfg.ept and e * size * inputs >= ops.MULTI_VECTOR_BYTES_PER_THREAD]
                assert all(-(-N // e) > ops.MULTI_VECTOR_TARGET_THREADS for e in smaller)
    else:
        assert cfg.variant == ops.WIDE and cfg.block == ops.WIDE_THREADS and cfg.grid == M
        limit = 16384 if cfg.vec > 1 else 8192
        assert N > limit


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gate", [False, True])
def test_launch_config_covers_every_N(dtype, gate):
    vec16 = ops.DTYPES[dtype][2]
    variants = set()
    for N in range(1, 70001):
        for vectorized in ((True, False) if N % vec16 == 0 else (False,)):
            for fits in (False, True):
                cfg = ops.choose_config(7, N, dtype, gate=gate, vectorized=vectorized, fits_l2=fits)
                _assert_valid(cfg, 7, N, fits)
                variants.add((cfg.variant, cfg.vec > 1))
        assert ops.choose_config(7, N, dtype, gate=gate).vec == (vec16 if N % vec16 == 0 else 1)
    assert variants == {(v, vec) for v in (ops.WARP, ops.BLOCK, ops.WIDE) for vec in (True, False)}


def test_launch_config_examples():
    c = ops.launch_config(1024, 768, "float16")  # one 16-byte vector per thread: 96 threads = 3 warps
    assert (c["variant"], c["vec"], c["ept"], c["block"], c["rows_per_block"], c["grid"]) == ("block", 8, 8, 96, 1, 1024)
    c = ops.launch_config(1024, 768, "float16", vectorized=False)  # scalar path: still a warp per row
    assert (c["variant"], c["vec"], c["block"], c["rows_per_block"], c["grid"]) == ("warp", 1, 128, 4, 256)
    c = ops.launch_config(64, 256, "float16")
    assert (c["kernel"], c["block"], c["grid"]) == ("rmsnorm_warp_f16_v8_e8", 128, 16)
    c = ops.launch_config(1, 2048, torch.bfloat16)  # a 4 KB row: one vector per thread
    assert (c["variant"], c["vec"], c["ept"], c["block"], c["grid"]) == ("block", 8, 8, 256, 1)
    c = ops.launch_config(16384, 4096, torch.bfloat16, fits_l2=False)  # 8 KB rows: two vectors per thread
    assert (c["variant"], c["vec"], c["ept"], c["block"], c["grid"]) == ("block", 8, 16, 256, 16384)
    c = ops.launch_config(16384, 4096, torch.bfloat16, gate=True, fits_l2=False)  # one of x + one of gate
    assert (c["variant"], c["vec"], c["ept"], c["block"], c["grid"]) == ("block", 8, 8, 512, 16384)
    c = ops.launch_config(32768, 8192, "float16", gate=True, fits_l2=False)
    assert (c["kernel"], c["block"]) == ("rmsnorm_gate_block_f16_v8_e16", 512)
    c = ops.launch_config(4, 16384, "float16", fits_l2=False)
    assert (c["kernel"], c["block"]) == ("rmsnorm_block_f16_v8_e32", 512)
    c = ops.launch_config(8, 4096, "float32", fits_l2=False)  # EPT 8 = two 16-byte vectors of fp32
    assert (c["kernel"], c["block"]) == ("rmsnorm_block_f32_v4_e8", 512)
    c = ops.launch_config(8, 16384, "float32", fits_l2=False)
    assert (c["kernel"], c["block"]) == ("rmsnorm_block_f32_v4_e32", 512)
    # x, gate and y in L2: the short-row rule, one vector per thread where the block allows
    for gate in (False, True):
        c = ops.launch_config(512, 4096, "float16", gate=gate, fits_l2=True)
        assert (c["ept"], c["block"]) == (8, 512)
        c = ops.launch_config(1024, 8192, "bfloat16", gate=gate, fits_l2=True)
        assert (c["ept"], c["block"]) == (8, 1024)
        # no one-vector block (2048 threads; fp32 has no EPT 4): the config beyond L2, unchanged
        for M, N, dt in ((4, 16384, "float16"), (8, 8192, "float32"), (8, 4096, "float32")):
            assert ops.launch_config(M, N, dt, gate=gate, fits_l2=True) == ops.launch_config(
                M, N, dt, gate=gate, fits_l2=False)
    assert ops.launch_config(3, 8201, "float16")["kernel"] == "rmsnorm_wide_f16_v1"
    assert ops.launch_config(3, 131072, "float32")["kernel"] == "rmsnorm_wide_f32_v4"
    assert ops.launch_config(0, 4096, "float32")["grid"] == 0
    # the seed's N=768 case never gets a 96-thread block from the chooser, but any block works
    assert ops.forced_config(5, 768, "float16", variant="block", block=96, ept=8).capacity == 768


@pytest.mark.parametrize("args, err, msg", [
    ((-1, 8, "float16"), ValueError, r"M must be in \[0,"),
    ((4, 0, "float16"), ValueError, r"N must be in \[1,"),
    ((4, 8.0, "float16"), TypeError, r"N must be an int"),
    ((4, 8, "int8"), TypeError, r"dtype int8 is not supported"),
])
def test_launch_config_errors(args, err, msg):
    with pytest.raises(err, match=msg):
        ops.launch_config(*args)
    with pytest.raises(ValueError, match=r"vectorized=True needs N % 8 == 0"):
        ops.launch_config(4, 12, "float16", vectorized=True)


def test_launch_config_fits_l2_argument(monkeypatch):
    # None: as the op decides on the current GPU; in CPU mode there is no L2 to ask
    monkeypatch.setenv(backend.FORCE_CPU_ENV, "1")
    monkeypatch.setattr(backend, "_cached", None)
    assert ops.launch_config(512, 4096, "float16") == ops.launch_config(512, 4096, "float16", fits_l2=False)
    for bad in (1, "yes", 0.0, None):
        with pytest.raises(TypeError, match="fits_l2 must be a bool"):
            ops.choose_config(512, 4096, "float16", fits_l2=bad)
    assert ops.choose_config(512, 4096, "float16", fits_l2=np.bool_(True)).ept == 8
    for name, bad in (("gate", "no"), ("gate", [1]), ("gate", 1), ("vectorized", "yes"), ("vectorized", 2),
                      ("vectorized", [1])):
        with pytest.raises(TypeError, match=f"{name} must be a bool"):
            ops.choose_config(512, 4096, "float16", **{name: bad})
        with pytest.raises(TypeError, match=f"{name} must be a bool"):
            ops.launch_config(512, 4096, "float16", **{name: bad})


def test_launch_config_checks_M_before_asking_the_gpu(monkeypatch):
    """With fits_l2=None on a GPU, a bad M/N is reported with the chooser's range, not fits_l2's."""
    monkeypatch.setattr(backend, "has_gpu", lambda: True)
    monkeypatch.setattr(ops, "l2_bytes", lambda device: 60 << 20)
    monkeypatch.setattr(ops, "_fits_current_device", lambda M, N, dtype, gate: ops.fits_l2(M, N, dtype, gate, 60 << 20))
    with pytest.raises(ValueError, match=rf"M must be in \[0, {ops.MAX_GRID_X * ops.WARP_ROWS_PER_BLOCK}\]"):
        ops.launch_config(-1, 4096, "float16")
    with pytest.raises(ValueError, match=r"N must be in \[1,"):
        ops.launch_config(4, 0, "float16")
    assert ops.launch_config(512, 4096, "float16", gate=True)["ept"] == 8  # fits in 60 MiB


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, gate", [(512, 4096, True), (512, 4096, False), (1024, 8192, True),
                                        (16384, 4096, True), (4, 16384, False)])
def test_launch_config_follows_this_gpus_l2(M, N, gate):
    """launch_config's default is what the op launches here: fits_l2 for this device's L2."""
    l2 = ops.l2_bytes(torch.cuda.current_device())
    fits = ops.fits_l2(M, N, "float16", gate, l2)
    assert ops.launch_config(M, N, "float16", gate=gate) == ops.launch_config(M, N, "float16", gate=gate, fits_l2=fits)


def test_fits_l2():
    assert ops.fits_l2(1024, 4096, "float16", False, 16 << 20)  # x + y = 2 x 8 MiB
    assert not ops.fits_l2(1024, 4096, "float16", True, 16 << 20)  # x + gate + y = 3 x 8 MiB
    assert not ops.fits_l2(1024, 4096, torch.float32, False, 16 << 20)
    assert ops.fits_l2(0, 4096, "bfloat16", True, 0)


def test_l2_bytes_needs_a_gpu(monkeypatch):
    def cpu_mode(what):
        raise backend.GPUUnavailable(f"{what} needs a CUDA GPU (stand-in)")

    from gpu_viz import device

    monkeypatch.setattr(backend, "require_gpu", cpu_mode)
    monkeypatch.setattr(device, "_live_cache", {})
    with pytest.raises(backend.GPUUnavailable, match="GPU's attributes"):
        ops.l2_bytes(0)


@pytest.mark.parametrize("args, err, name", [((-1, 8, "float16", False, 1 << 20), ValueError, "M"),
                                             ((4, 0, "float16", False, 1 << 20), ValueError, "N"),
                                             ((4, 8, "float16", False, -1), ValueError, "l2"),
                                             ((4.0, 8, "float16", False, 1 << 20), TypeError, "M"),
                                             ((4, 8, "int8", False, 1 << 20), TypeError, "int8")])
def test_fits_l2_rejects_bad_arguments(args, err, name):
    with pytest.raises(err, match=name):
        ops.fits_l2(*args)


def test_bytes_moved():
    assert ops.bytes_moved(1024, 4096, "float16", gate=True) == 2 * (3 * 1024 * 4096 + 4096)  # the seed's formula
    assert ops.bytes_moved(10, 7, "float32") == 4 * (2 * 70 + 7)


# ---------------------------------------------------------------------------------------
# CPU: the kernel file builds for sm_75 / sm_89 / sm_90 with no spills, every kernel present

@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_75", "sm_89", "sm_90"])
def test_nvcc_build_no_spills(arch):
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    rows = [r for r in ops.kernel_report("ptxas", arches=[arch])]
    assert sorted(r["kernel"] for r in rows) == sorted(ops.kernel_names())
    spilled = [(r["kernel"], r["registers"], r["spill_stores_bytes"], r["local_bytes"]) for r in rows
               if r["spill_stores_bytes"] or r["spill_loads_bytes"] or r["local_bytes"]]
    assert not spilled, f"{arch}: kernels spill or use a stack frame: {spilled}"
    for r in rows:  # registers fit the launch bounds: the largest block must be launchable
        bound = {"warp": 128, "wide": 1024}.get(r["variant"]) or ops.BLOCK_MAX_THREADS[r["ept"]]
        assert r["registers"] * bound <= 65536, r
        if r["vec"] > 1 and r["ept"] == 8:  # __launch_bounds__(.., 2 x 1024 / 16 x 128): full occupancy
            threads_per_sm = {"sm_75": 1024, "sm_89": 1536, "sm_90": 2048}[arch]
            assert -(-r["registers"] // 8) * 8 * threads_per_sm <= 65536, r  # 8-register allocation unit
        assert r["arch"] == arch


# ---------------------------------------------------------------------------------------
# CPU: fake kernels (torch.compile's view), references, the backward formula

def test_fake_kernels_on_meta_tensors():
    x, g, w = (torch.empty(2, 3, 40, device="meta", dtype=torch.bfloat16), torch.empty(2, 3, 40, device="meta", dtype=torch.bfloat16),
               torch.empty(40, device="meta", dtype=torch.bfloat16))
    y = torch.ops.gpu_viz.rmsnorm(x, w, 1e-6)
    assert y.shape == x.shape and y.dtype == x.dtype and y.device.type == "meta"
    assert torch.ops.gpu_viz.rmsnorm_gate(x, g, w, 1e-5).shape == x.shape


def test_autograd_registration_on_meta_tensors():
    """The registered backward runs (shapes and dtypes) through the custom op, no GPU needed."""
    mk = lambda *shape: torch.empty(*shape, device="meta", dtype=torch.bfloat16, requires_grad=True)  # noqa: E731
    x, g, w = mk(2, 3, 40), mk(2, 3, 40), mk(40)
    y = torch.ops.gpu_viz.rmsnorm_gate(x, g, w, 1e-6)
    y.backward(torch.empty_like(y))
    assert (x.grad.shape, g.grad.shape, w.grad.shape) == (x.shape, g.shape, w.shape)
    assert x.grad.dtype == g.grad.dtype == w.grad.dtype == torch.bfloat16
    x, w = mk(5, 7), mk(7)
    torch.ops.gpu_viz.rmsnorm(x, w, 1e-6).sum().backward()
    assert x.grad.shape == (5, 7) and w.grad.shape == (7,)


@pytest.mark.parametrize("backend", ["graph", "aot_eager"])
def test_torch_compile_fullgraph_traces_the_ops(backend):
    """Dynamo traces the public ops into one graph (fullgraph=True: a graph break would raise
    Unsupported); the graph then runs the real op, which refuses CPU tensors at run time."""
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(x, g, w):
        return ops.rmsnorm_gate(x, g, w, 1e-5) * 2.0 + ops.rmsnorm(x, w)

    torch._dynamo.reset()
    cf = torch.compile(f, backend=capture if backend == "graph" else backend, fullgraph=True)
    x, g, w = torch.randn(4, 8), torch.randn(4, 8), torch.randn(8)
    if backend == "aot_eager":
        x.requires_grad_(True), w.requires_grad_(True)
    with pytest.raises(ValueError, match="x is on device cpu"):
        cf(x, g, w)
    if backend == "graph":
        code = graphs[0].code
        assert "torch.ops.gpu_viz.rmsnorm_gate" in code and "torch.ops.gpu_viz.rmsnorm(" in code


def test_module_wrappers():
    m = ops.FusedRMSNormGate(16, eps=1e-5, dtype=torch.bfloat16)
    assert m.weight.shape == (16,) and m.weight.dtype == torch.bfloat16 and m.eps == 1e-5
    assert "N=16" in repr(m)
    with pytest.raises(ValueError, match="x is on device cpu"):
        m(torch.randn(2, 16, dtype=torch.bfloat16), torch.randn(2, 16, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"N must be in \[1,"):
        ops.FusedRMSNorm(0)


def test_references_match_the_formula(rng):
    x = rng.standard_normal((5, 33))
    g = rng.standard_normal((5, 33))
    w = rng.standard_normal(33)
    r = 1.0 / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ops.reference_rmsnorm(x, w, 1e-5), x * w * r, rtol=1e-14)
    np.testing.assert_allclose(ops.reference_rmsnorm_gate(x, g, w, 1e-5), x * w * r * g / (1 + np.exp(-g)), rtol=1e-14)


@pytest.mark.parametrize("gate", [False, True])
@pytest.mark.parametrize("shape", [(7, 33), (2, 3, 768), (1, 1)])
def test_backward_formula_vs_float64_autograd(rng, gate, shape):
    """The fp32 composite backward (run here on CPU) against float64 autograd."""
    N = shape[-1]
    x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    w = torch.from_numpy(rng.standard_normal(N).astype(np.float32))
    g = torch.from_numpy(rng.standard_normal(shape).astype(np.float32) * 3) if gate else None
    G = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    dx, dw, dg = ops._torch_backward(G, x, w, g, 1e-6, (True, True, True))
    ref = ops.reference_grads(x, w, G, gate=g, eps=1e-6)
    atol, rtol = ops.GRAD_TOLERANCES["float32"]
    np.testing.assert_allclose(dx.numpy(), ref["x"], atol=atol, rtol=rtol)
    np.testing.assert_allclose(dw.numpy(), ref["weight"], atol=atol * math.sqrt(x.numel() / N), rtol=rtol)
    if gate:
        np.testing.assert_allclose(dg.numpy(), ref["gate"], atol=atol, rtol=rtol)
    else:
        assert dg is None


def test_backward_formula_detects_a_wrong_gradient(rng):
    """The check above can fail: a backward that forgets the rsqrt's derivative is caught."""
    x = torch.from_numpy(rng.standard_normal((4, 16)).astype(np.float32))
    w = torch.ones(16)
    G = torch.from_numpy(rng.standard_normal((4, 16)).astype(np.float32))
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    wrong = (G * w * r).numpy()
    assert not np.allclose(wrong, ops.reference_grads(x, w, G)["x"], atol=1e-4, rtol=1e-4)


def test_kernel_report_rejects_unknown_source():
    with pytest.raises(ValueError, match="source must be"):
        ops.kernel_report("nvrtc")


# =======================================================================================
# GPU tests

gpu = pytest.mark.gpu
LAYOUTS = ("contiguous", "row_stride", "offset", "lead_dims")


def _device_values(rng, shape, dtype, layout, scale=1.0):
    """A torch CUDA tensor of ``shape`` (..., N) with fresh N(0, scale^2) values in ``layout``:
    contiguous; rows of a wider buffer (x[:, :N], row stride N + 3 or + 8); one element past
    a 16-byte boundary (misaligned pointer); or 3-D with merged leading dims."""
    M, N = shape
    tdt = TORCH_DTYPE[dtype]
    vals = torch.from_numpy((rng.standard_normal((M, N)) * scale).astype(np.float32))
    if layout == "contiguous":
        t = vals.to("cuda", tdt)
    elif layout == "row_stride":
        pad = 8 if rng.integers(2) else 3
        buf = torch.full((M, N + pad), float("nan"), device="cuda", dtype=tdt)
        buf[:, :N] = vals.to("cuda", tdt)
        t = buf[:, :N]
    elif layout == "offset":
        buf = torch.full((M * N + 1,), float("nan"), device="cuda", dtype=tdt)
        t = buf[1:].view(M, N)
        t.copy_(vals.to("cuda", tdt))
    elif layout == "lead_dims":
        t = vals.to("cuda", tdt).reshape(1, M, N) if M else vals.to("cuda", tdt).reshape(0, 1, N)
    else:
        raise ValueError(layout)
    return t


def _check(got, ref, dtype, name):
    from gpu_viz.rmsnorm import check_close

    atol, rtol = ops.TOLERANCES[dtype]
    return check_close(got, ref, atol, rtol, name=name)


def _run_poisoned(x, w, g, eps=1e-6, config=None):
    """The launcher with a NaN-poisoned output: an element the kernel never writes stays NaN."""
    info = ops._validate(x, w, g, eps)
    out = torch.full((info["M"], info["N"]), float("nan"), device=x.device, dtype=x.dtype)
    return ops._launch(info, out=out, config=config)


def _forward_case(rng, M, N, dtype, gate, layout, eps=1e-6):
    x = _device_values(rng, (M, N), dtype, layout)
    g = _device_values(rng, (M, N), dtype, layout, scale=3.0) if gate else None
    w = torch.from_numpy(rng.standard_normal(N).astype(np.float32) + 1.0).to("cuda", TORCH_DTYPE[dtype])
    ref = ops.reference_rmsnorm_gate(x, g, w, eps) if gate else ops.reference_rmsnorm(x, w, eps)
    label = f"y[M={M}, N={N}, {dtype}, gate={gate}, {layout}]"
    y = ops.rmsnorm_gate(x, g, w, eps) if gate else ops.rmsnorm(x, w, eps)
    assert y.shape == x.shape and y.dtype == x.dtype and y.is_contiguous()
    yp = _run_poisoned(x, w, g, eps)
    torch.cuda.synchronize()
    _check(y, ref, dtype, label)
    _check(yp, ref, dtype, label + " poisoned")
    assert torch.equal(y.reshape(yp.shape), yp), "the public op and the launcher disagree"
    yo = torch.ops.gpu_viz.rmsnorm_gate(x, g, w, eps) if gate else torch.ops.gpu_viz.rmsnorm(x, w, eps)
    assert torch.equal(yo, y), "torch.ops.gpu_viz (the dispatcher path) and the direct path disagree"


@gpu
def test_forward_hypothesis_shapes():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
    @given(M=st.integers(0, 300),
           N=st.one_of(st.integers(1, 20000), st.sampled_from([768, 4096, 8192, 8200, 65536])),
           dtype=st.sampled_from(DTYPES), gate=st.booleans(), layout=st.sampled_from(LAYOUTS),
           seed=st.integers(0, 2**32 - 1))
    def check(M, N, dtype, gate, layout, seed):
        M = min(M, max(1, 1_000_000 // N)) if M else 0
        _forward_case(np.random.default_rng(seed), M, N, dtype, gate, layout)

    check()


FIXED = [(1024, 768), (5, 4096), (3, 8192), (7, 8200), (4, 16384), (3, 16392), (2, 65536), (2, 131072),
         (33, 1), (9, 7), (5, 8201), (6, 4095), (1, 1024), (130, 1025), (0, 4096),
         (5, 256), (5, 264), (3, 2048)]  # the 16-byte chooser's warp -> block edge, a 256-thread EPT-8 block


@gpu
@pytest.mark.parametrize("M, N", FIXED)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gate", [False, True])
def test_forward_fixed_shapes(rng, M, N, dtype, gate):
    for layout in ("contiguous", "offset"):
        _forward_case(rng, M, N, dtype, gate, layout)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_variant_at_every_block_size(rng, dtype):
    """Seed defect: the 96-thread block at N=768 lost partial sums.  Force every block variant
    at block sizes that are and are not multiples of 32 (the reduction must be right for any)."""
    vec16 = ops.DTYPES[dtype][2]
    cases = []
    for block in (96, 97, 100, 128, 500, 1000, 1024):
        cases.append(("block", 768, block, 8, 1))
    for block in (96, 100, 127):
        cases.append(("block", 768, block, 8, vec16))
    for block in (33, 65, 257, 512):
        cases.append(("block", block * 32 - 5 * vec16 if vec16 == 8 else block * 32 - 20, block, 32, vec16))
    for N in (1, 31, 256, 257, 768, 1024):
        cases.append(("warp", N, 128, 32, 1))
    for block in (1024, 96, 33):
        cases.append(("wide", 20000, block, None, 1))
    for variant, N, block, ept, vec in cases:
        for gate in (False, True):
            M = 6
            x = _device_values(rng, (M, N), dtype, "contiguous")
            g = _device_values(rng, (M, N), dtype, "contiguous", 3.0) if gate else None
            w = _device_values(rng, (1, N), dtype, "contiguous")[0]
            cfg = ops.forced_config(M, N, dtype, variant=variant, block=block, ept=ept, vec=vec, gate=gate)
            y = _run_poisoned(x, w, g, config=cfg)
            torch.cuda.synchronize()
            ref = ops.reference_rmsnorm_gate(x, g, w) if gate else ops.reference_rmsnorm(x, w)
            _check(y, ref, dtype, f"{cfg.kernel} block={block} N={N}")


@gpu
@pytest.mark.parametrize("l2", [0, 1 << 40], ids=["beyond-L2-policies", "in-L2-policies"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_both_cache_policy_paths(rng, monkeypatch, l2, dtype):
    """The kernels pick their load/store instructions by `fits_l2` (x, gate and y within L2),
    and the chooser picks rows of 8 KB and more their block by it (one vector per thread in L2).
    The other tests' problems are small, so they fit: force each side here, every variant the
    chooser reaches (warp, block EPT 8/16/32, wide; 16-byte and scalar), both ops, vs float64."""
    asked = []
    monkeypatch.setattr(ops, "l2_bytes", lambda device: asked.append(device) or l2)
    for M, N in [(6, 768), (5, 4096), (3, 8192), (4, 16384), (3, 8200), (9, 7), (5, 256), (2, 65536)]:
        for gate in (False, True):
            _forward_case(rng, M, N, dtype, gate, "contiguous")
    assert asked, "ops._launch did not consult the L2 size"


@gpu
def test_forced_config_that_does_not_fit_is_refused(rng):
    x = _device_values(rng, (3, 768), "float16", "contiguous")
    w = x[0].clone()
    cfg = ops.forced_config(3, 768, "float16", variant="block", block=64, ept=8)
    with pytest.raises(ValueError, match=r"capacity 512 < N=768"):
        _run_poisoned(x, w, None, config=cfg)
    xo = _device_values(rng, (3, 768), "float16", "offset")
    cfg = ops.forced_config(3, 768, "float16", variant="block", block=96, ept=8, vec=8)
    with pytest.raises(ValueError, match="vector loads on a misaligned problem"):
        _run_poisoned(xo, w, None, config=cfg)


@gpu
def test_leading_dims_that_do_not_merge_are_copied(rng):
    base = torch.randn(4, 5, 300, device="cuda", dtype=torch.float16)
    x = base.transpose(0, 1)  # (5, 4, 300), strides (300, 1500, 1): rows not one stride
    w = torch.randn(300, device="cuda", dtype=torch.float16)
    y = ops.rmsnorm(x, w)
    _check(y, ops.reference_rmsnorm(x, w), "float16", "y[transposed leading dims]")
    assert ops.rmsnorm(torch.empty(2, 0, 64, device="cuda"), torch.ones(64, device="cuda")).shape == (2, 0, 64)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("N", [768, 4096, 20000])
def test_nan_and_inf_stay_in_their_row(rng, dtype, N):
    x = _device_values(rng, (6, N), dtype, "contiguous")
    g = _device_values(rng, (6, N), dtype, "contiguous", 3.0)
    w = _device_values(rng, (1, N), dtype, "contiguous")[0]
    x[1, N // 2] = float("nan")
    x[3, 0] = float("inf")
    g[4, N - 1] = float("-inf")  # silu(-inf) = -inf / inf: NaN in that element only (float64 too)
    for gate in (False, True):
        y = _run_poisoned(x, w, g if gate else None)
        torch.cuda.synchronize()
        ref = ops.reference_rmsnorm_gate(x, g, w) if gate else ops.reference_rmsnorm(x, w)
        got = y.float().cpu().numpy()
        assert np.isnan(got[1]).all()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))  # NaN exactly where float64 has NaN
        finite = np.isfinite(ref)
        atol, rtol = ops.TOLERANCES[dtype]
        np.testing.assert_allclose(got[finite], ref[finite], atol=atol, rtol=rtol)
        for row in (0, 2, 5):
            assert np.isfinite(got[row]).all()


@gpu
def test_torch_current_stream_is_used(rng):
    """Seed defect: the launch went to the default stream.  On a busy non-default stream the op
    must wait for the copy that fills x (a default-stream launch would read x's zeros)."""
    src = torch.from_numpy(rng.standard_normal((512, 4096)).astype(np.float32)).cuda().half()
    w = torch.randn(4096, device="cuda", dtype=torch.float16)
    g = torch.randn(512, 4096, device="cuda", dtype=torch.float16)
    x = torch.zeros_like(src)
    ops.rmsnorm(x, w), ops.rmsnorm_gate(x, g, w)  # warm-up: NVRTC compile outside the timed window
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of spinning on s
        x.copy_(src)
        y = ops.rmsnorm(x, w)
        yg = ops.rmsnorm_gate(x, g, w)
        assert not s.query(), "stream s finished too early for the test to mean anything"
    assert torch.cuda.default_stream().query()  # nothing of ours was queued on the default stream
    s.synchronize()
    _check(y, ops.reference_rmsnorm(src, w), "float16", "y on a non-default stream")
    _check(yg, ops.reference_rmsnorm_gate(src, g, w), "float16", "y_gate on a non-default stream")


@gpu
def test_cupy_current_stream_is_used(rng):
    import cupy

    src = cupy.asarray(rng.standard_normal((256, 2048)).astype(np.float16))
    w = cupy.asarray(rng.standard_normal(2048).astype(np.float16))
    x = cupy.zeros_like(src)
    ops.rmsnorm(x, w)  # warm-up
    cupy.cuda.Device().synchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        with torch.cuda.stream(torch.cuda.ExternalStream(s.ptr)):
            torch.cuda._sleep(200_000_000)
        x[...] = src
        y = ops.rmsnorm(x, w)
        assert isinstance(y, cupy.ndarray) and y.dtype == cupy.float16
        assert not s.done
    s.synchronize()
    _check(y, ops.reference_rmsnorm(src, w), "float16", "cupy y on a non-default stream")


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("layout", ["contiguous", "row_stride", "offset"])
def test_cupy_arrays(rng, dtype, layout):
    import cupy

    for M, N in ((3, 768), (5, 4096), (2, 8201), (2, 40000), (0, 16)):
        if M == 0:
            x = g = cupy.zeros((0, N), dtype=dtype)
        else:
            x = cupy.asarray(_device_values(rng, (M, N), dtype, layout))
            g = cupy.asarray(_device_values(rng, (M, N), dtype, layout, 3.0))
        w = cupy.asarray(rng.standard_normal(N).astype(dtype))
        for gate in (False, True):
            y = ops.rmsnorm_gate(x, g, w) if gate else ops.rmsnorm(x, w)
            assert isinstance(y, cupy.ndarray) and y.shape == x.shape and y.dtype == x.dtype
            ref = ops.reference_rmsnorm_gate(x, g, w) if gate else ops.reference_rmsnorm(x, w)
            _check(y, ref, dtype, f"cupy y[{M}x{N} {dtype} {layout} gate={gate}]")


@gpu
def test_mixed_libraries_and_devices_rejected():
    import cupy

    x = torch.randn(4, 8, device="cuda")
    with pytest.raises(TypeError, match=r"weight is a cupy.ndarray but x is a torch.Tensor"):
        ops.rmsnorm(x, cupy.ones(8, dtype=cupy.float32))
    with pytest.raises(ValueError, match=r"weight is on device cpu"):
        ops.rmsnorm(x, torch.ones(8))
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match=r"weight is on cuda:1 but x is on cuda:0"):
            ops.rmsnorm(x, torch.ones(8, device="cuda:1"))


@gpu
def test_torch_compile_fullgraph(rng):
    torch._dynamo.reset()

    def f(x, g, w):
        return ops.rmsnorm_gate(x, g, w, 1e-5) * 2.0 + ops.rmsnorm(x, w)

    cf = torch.compile(f, fullgraph=True)
    x = _device_values(rng, (64, 4096), "bfloat16", "contiguous")
    g = _device_values(rng, (64, 4096), "bfloat16", "contiguous", 3.0)
    w = _device_values(rng, (1, 4096), "bfloat16", "contiguous")[0]
    got = cf(x, g, w)
    torch.testing.assert_close(got, f(x, g, w))  # inductor may fuse the epilogue: 1 bf16 ulp
    ref = 2 * ops.reference_rmsnorm_gate(x, g, w, 1e-5) + ops.reference_rmsnorm(x, w)
    _check(got, ref, "bfloat16", "compiled y")
    # and its backward
    xs, gs, ws = (t.float().requires_grad_(True) for t in (x, g, w))
    cf(xs, gs, ws).sum().backward()
    assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in (xs, gs, ws))


@gpu
def test_cuda_graph_capture_and_replay(rng):
    x = _device_values(rng, (300, 4096), "float16", "contiguous")
    g = _device_values(rng, (300, 4096), "float16", "contiguous", 3.0)
    w = _device_values(rng, (1, 4096), "float16", "contiguous")[0]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):  # warm-up outside the capture (NVRTC compile, module load)
            ops.rmsnorm(x, w), ops.rmsnorm_gate(x, g, w)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops.rmsnorm(x, w)
        yg = ops.rmsnorm_gate(x, g, w)
    new_x = _device_values(rng, (300, 4096), "float16", "contiguous")
    x.copy_(new_x)
    y.fill_(float("nan")), yg.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    _check(y, ops.reference_rmsnorm(new_x, w), "float16", "graph-replayed y")
    _check(yg, ops.reference_rmsnorm_gate(new_x, g, w), "float16", "graph-replayed y_gate")


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gate", [False, True])
@pytest.mark.parametrize("shape", [(7, 33), (2, 32, 768), (3, 8200)])
def test_gradients_vs_float64(rng, dtype, gate, shape):
    M, N = int(np.prod(shape[:-1])), shape[-1]
    x = _device_values(rng, (M, N), dtype, "contiguous").reshape(shape).requires_grad_(True)
    g = _device_values(rng, (M, N), dtype, "contiguous", 3.0).reshape(shape).requires_grad_(True) if gate else None
    w = _device_values(rng, (1, N), dtype, "contiguous")[0].requires_grad_(True)
    G = _device_values(rng, (M, N), dtype, "contiguous").reshape(shape)
    y = ops.rmsnorm_gate(x, g, w) if gate else ops.rmsnorm(x, w)
    y.backward(G)
    ref = ops.reference_grads(x, w, G, gate=g)
    atol, rtol = ops.GRAD_TOLERANCES[dtype]
    from gpu_viz.rmsnorm import check_close

    check_close(x.grad, ref["x"], atol, rtol, name=f"dx {dtype} {shape}")
    check_close(w.grad, ref["weight"], atol * math.sqrt(M), rtol, name=f"dw {dtype} {shape}")
    if gate:
        check_close(g.grad, ref["gate"], atol, rtol, name=f"dgate {dtype} {shape}")


@gpu
def test_module_wrapper_trains(rng):
    m = ops.FusedRMSNorm(768, device="cuda")
    x = _device_values(rng, (16, 768), "float32", "contiguous")
    m(x).square().sum().backward()
    ref = ops.reference_grads(x, m.weight, 2 * torch.from_numpy(ops.reference_rmsnorm(x, m.weight)).float())
    from gpu_viz.rmsnorm import check_close

    check_close(m.weight.grad, ref["weight"], 1e-3, 1e-4, name="dw of FusedRMSNorm")


@gpu
def test_kernel_report_from_the_device():
    rows = ops.kernel_report("device")
    assert sorted(r["kernel"] for r in rows) == sorted(ops.kernel_names())
    assert all(r["registers"] > 0 and r["local_bytes"] == 0 for r in rows), \
        [r for r in rows if r["local_bytes"]]


@gpu
def test_torch_library_opcheck(rng):
    """torch's own checks of a custom op: schema, fake kernel vs real, autograd registration,
    AOT dispatch with dynamic shapes."""
    x = _device_values(rng, (8, 264), "float32", "contiguous").requires_grad_(True)
    g = _device_values(rng, (8, 264), "float32", "contiguous", 3.0).requires_grad_(True)
    w = _device_values(rng, (1, 264), "float32", "contiguous")[0].requires_grad_(True)
    torch.library.opcheck(torch.ops.gpu_viz.rmsnorm.default, (x, w, 1e-6))
    torch.library.opcheck(torch.ops.gpu_viz.rmsnorm_gate.default, (x, g, w, 1e-6))


def test_reference_helpers_check_shapes():
    """The float64 references refuse shapes the op refuses (no silent broadcasting)."""
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"weight must have shape \(N,\) = \(3,\)"):
        ops.reference_rmsnorm(x, np.ones(4))
    with pytest.raises(ValueError, match="weight must have shape"):
        ops.reference_rmsnorm(x, np.ones(1))
    with pytest.raises(ValueError, match=r"gate must have x's shape \(2, 3\)"):
        ops.reference_rmsnorm_gate(x, np.ones(3), np.ones(3))
    assert ops.reference_rmsnorm(x, np.ones(3)).shape == (2, 3)


def test_forced_config_names_a_bad_variant():
    with pytest.raises(ValueError, match="variant must be one of"):
        ops.forced_config(4, 8, "float32", variant="foo", block=32)
    with pytest.raises(ValueError, match="pass ept"):
        ops.forced_config(4, 8, "float32", variant="block", block=32)


def test_launch_path_caches_are_pure():
    """dtype names and launch configs are memoised on the call path: same answers, every time."""
    import torch

    assert ops.dtype_name(torch.float16) == ops.dtype_name(torch.float16) == "float16"
    assert ops.dtype_name(np.dtype("float32")) == "float32"
    with pytest.raises(TypeError, match="not supported"):
        ops.dtype_name(torch.int32)
    with pytest.raises(TypeError, match="not supported"):
        ops.dtype_name(torch.int32)  # a failure is not cached as a success
    a = ops.choose_config(512, 4096, "float16")
    assert ops.choose_config(512, 4096, torch.float16) is a
    assert ops.choose_config(513, 4096, "float16").grid == 513
