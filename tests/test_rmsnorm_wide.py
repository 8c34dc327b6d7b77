"""The cluster path for wide rows (kernels/rmsnorm_wide.cu, gpu_viz.rmsnorm.wide).

CPU part: the policy (supported / config depend only on N, dtype, op, weight dtype and the GPU;
every configuration holds its rows), the nvcc build for sm_75 / sm_80 / sm_89 / sm_90 (sm_90:
no spills at the launcher's -D options), argument errors naming the argument.  GPU part
(``-m gpu``): both ops, every dtype, fp32 weights and weight_offset against float64 on fresh
random data with NaN-poisoned outputs, rstd against float64, bitwise batch invariance (rows of
forward(x[:m]) equal the same rows of forward(x), m in 1, 3, 64 against 1000), streams, CuPy
arrays, M = 0, misaligned operands refused.  Tolerances: gpu_viz.rmsnorm.tolerances.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gpu_viz import kernels  # noqa: E402
from gpu_viz.rmsnorm import wide  # noqa: E402
from gpu_viz.rmsnorm.bench import check_rows  # noqa: E402
from gpu_viz.rmsnorm.dtypes import DTYPES, torch_dtype  # noqa: E402

DTS = ("float32", "float16", "bfloat16")
H100 = (9, 0)
WIDE_NS = (32768, 65536, 131072, 262144)


# ---------------------------------------------------------------------------------------
# CPU: the policy

@pytest.mark.parametrize("dt", DTS)
def test_supported_by_n_dtype_and_cc_only(dt):
    vec = DTYPES[dt][2]
    for n in WIDE_NS + (wide.MIN_N - 1 + vec, 40000, wide.MAX_N):
        assert wide.supported(n, dt, H100), n
        for cc in ((7, 5), (8, 0), (8, 9), (10, 0), (12, 0)):  # no clusters / not measured
            assert not wide.supported(n, dt, cc), (n, cc)
    for n in (1, 4096, 16384, wide.MAX_N + vec, 2 * wide.MAX_N):
        assert not wide.supported(n, dt, H100), n
    assert not wide.supported(65536 + 2, dt, H100)  # not a whole number of 16-byte vectors


def test_config_is_a_function_of_n_dtype_and_gpu():
    """No M anywhere in the signature, and the same arguments give the same configuration: the
    summation order (fixed by the configuration) cannot depend on the batch."""
    import inspect

    for f in (wide.supported, wide.config):
        assert "m" not in [p.lower() for p in inspect.signature(f).parameters]
    for dt in DTS:
        for n in range(wide.MIN_N - 1 + DTYPES[dt][2], wide.MAX_N + 1, 4088):
            if not wide.supported(n, dt, H100):
                continue
            for gate in (False, True):
                a = wide.config(n, dt, H100, gate=gate)
                assert a == wide.config(n, dt, H100, gate=gate)
                assert a.capacity >= n and a.capacity // 2 < n or n <= 32768, (n, a)
                assert 1 <= a.cluster <= wide.MAX_CLUSTER and a.threads % 32 == 0 and a.ept % a.vec == 0


@pytest.mark.parametrize("dt", DTS)
def test_policy_buckets_fill_the_configuration(dt):
    """At the measured row lengths every thread holds exactly EPT elements (no idle threads)."""
    for n in WIDE_NS:
        for cfg in (wide.config(n, dt, H100), wide.config(n, dt, H100, gate=True)):
            assert cfg.capacity == n, cfg
    for size, table in wide.CANDIDATES.items():
        for n, shapes in table.items():
            for op in wide.OPS:
                assert wide.POLICY[op][size][n] in shapes, (op, size, n)
            assert all(c * t * e == n for c, t, e, _ in shapes), (size, n)


def test_config_refuses_what_it_cannot_run():
    with pytest.raises(ValueError, match=r"compute capability >= 9.0.*got 8.9"):
        wide.config(65536, "float16", (8, 9))
    with pytest.raises(ValueError, match=r"measured on Hopper \(9.x\) only, got compute capability 10.0"):
        wide.config(65536, "float16", (10, 0))
    with pytest.raises(ValueError, match=r"16385 <= N <= 262144, got N=8192"):
        wide.config(8192, "float16", H100)
    with pytest.raises(ValueError, match=r"N % 8 == 0 for float16.*N=65538"):
        wide.config(65538, "float16", H100)
    with pytest.raises(ValueError, match=r"weight must be x's dtype or float32"):
        wide.config(65536, "float16", H100, weight_dtype="bfloat16")
    with pytest.raises(ValueError, match=r"does not fit n=65536"):
        wide.config(65536, "float16", H100, shape=(4, 256, 32, wide.SMEM))
    with pytest.raises(TypeError, match=r"cc must be a \(major, minor\)"):
        wide.supported(65536, "float16", 9.0)
    with pytest.raises(TypeError):
        wide.supported(65536, "float64", H100)


def test_min_blocks_follows_the_register_need():
    # rmsnorm fp16, 32 elements: 16 + 16 data registers + overhead -> 4 blocks of 256 (64 regs)
    assert wide.min_blocks("rmsnorm", 2, 2, 256, 32) == 4
    # the gate with an fp32 weight keeps 32 fp32 values and 32 weights: fewer blocks
    assert wide.min_blocks("rmsnorm_gate", 2, 4, 256, 32) < wide.min_blocks("rmsnorm_gate", 2, 2, 256, 32)
    assert wide.min_blocks("rmsnorm", 4, 4, 1024, 64) == 1
    # shared-memory modes: bounded by shared memory (here 13 CTAs) and 40 registers a thread (6)
    assert wide.min_blocks("rmsnorm", 2, 2, 256, 32, wide.SMEM, 16384) == 6
    assert wide.min_blocks("rmsnorm", 4, 4, 512, 32, wide.SMEM, 65536) == 3  # 3 x 65 KiB of 228


def test_shared_memory_per_cta():
    cfg = wide.config(65536, "float16", H100, gate=True, shape=(8, 256, 32, wide.SMEM_W), weight_dtype="float32")
    assert cfg.smem_bytes == 256 * 32 * (2 + 2 + 4)  # x, gate, fp32 weight
    assert wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.REGISTERS)).smem_bytes == 0
    for c in wide.configs_in_use(candidates=True):
        assert c.smem_bytes <= wide.MAX_CTA_SHARED, c


# ---------------------------------------------------------------------------------------
# CPU: the build

def _need_nvcc():
    if kernels.find_tool("nvcc") is None:
        pytest.skip("nvcc not on PATH")


def test_sm90_builds_every_configuration_without_spills():
    _need_nvcc()
    rows = wide.kernel_report(("sm_90",))
    cfgs = wide.configs_in_use()
    assert {r["kernel"] for r in rows} == {c.kernel for c in cfgs}
    for r in rows:
        assert r["spill_stores_bytes"] == 0 and r["spill_loads_bytes"] == 0 and r["local_bytes"] == 0, r
        assert r["registers"] <= wide.SM_REGISTERS // (r["threads"] * r["min_blocks"]), r
        assert r["shared_bytes"] <= 4 * (r["threads"] // 32 + r["cluster"]), r  # two small float arrays


@pytest.mark.parametrize("arch", ("sm_75", "sm_80", "sm_89"))
def test_older_archs_build_the_trap(arch):
    """Before sm_90 the same source compiles (the kernels trap: supported() is False there)."""
    _need_nvcc()
    for cfg in (wide.config(65536, "float16", H100), wide.config(262144, "float32", H100, gate=True),
                wide.config(131072, "bfloat16", H100, weight_dtype="float32")):
        (u,) = kernels.nvcc_compile(wide.FILE, arch, cfg.options)
        assert u.kernel == cfg.kernel and u.spill_stores_bytes == 0


def test_bare_build_is_a_policy_configuration():
    """The .cu file's #ifndef defaults (a bare nvcc build, as tests/test_kernels.py compiles every
    kernel file) are the -D options of one configuration the launcher uses."""
    import re

    src = kernels.read_source(wide.FILE)
    defaults = dict(re.findall(r"#ifndef (WIDE_\w+)\n#define \1 (\S+)", src))
    want = dict(o[2:].split("=") for o in wide.config(65536, "float16", H100).options)
    assert defaults == want
    assert "tests/test_rmsnorm_wide.py" in src and "gpu_viz/rmsnorm/wide.py" in src


# ---------------------------------------------------------------------------------------
# CPU: argument errors

def _cpu_args(M=2, N=65536, dt=torch.float16):
    return torch.randn(M, N).to(dt), torch.randn(N).to(dt), torch.empty(M, N, dtype=dt)


def test_bad_arguments_name_the_argument():
    x, w, out = _cpu_args()
    with pytest.raises(TypeError, match=r"x2d must be a torch CUDA tensor or a CuPy array"):
        wide.forward(x.numpy(), w, 1e-6, out)
    with pytest.raises(ValueError, match=r"x2d must be 2-D"):
        wide.forward(x.reshape(2, 2, -1), w, 1e-6, out)
    with pytest.raises(ValueError, match=r"weight must have shape \(65536,\)"):
        wide.forward(x, w[:100], 1e-6, out)
    with pytest.raises(ValueError, match=r"out must have shape \(2, 65536\)"):
        wide.forward(x, w, 1e-6, out[:1])
    with pytest.raises(ValueError, match=r"gate must have shape"):
        wide.forward(x, w, 1e-6, out, gate=x[:1])
    with pytest.raises(TypeError, match=r"weight has dtype bfloat16 but x2d has float16"):
        wide.forward(x, w.to(torch.bfloat16), 1e-6, out)
    with pytest.raises(TypeError, match=r"out has dtype float32 but x2d has float16"):
        wide.forward(x, w, 1e-6, out.float())
    with pytest.raises(TypeError, match=r"x2d has dtype torch.float64"):
        wide.forward(x.double(), w, 1e-6, out)
    with pytest.raises(ValueError, match=r"x2d must be contiguous"):
        wide.forward(torch.randn(65536, 2).to(torch.float16).t(), w, 1e-6, out)
    with pytest.raises(TypeError, match=r"out must be an array, got None"):
        wide.forward(x, w, 1e-6, None)
    with pytest.raises(ValueError, match=r"x2d is on device cpu: the cluster path needs CUDA tensors"):
        wide.forward(x, w, 1e-6, out)


# ---------------------------------------------------------------------------------------
# GPU

def _cc():
    return torch.cuda.get_device_capability()


def _needs_clusters():
    if not wide.supported(65536, "float16", _cc()):
        pytest.skip(f"the cluster path needs sm_90+; this GPU is sm_{''.join(map(str, _cc()))}")


def _inputs(M, N, dt, gen, gate, wdt=None):
    t = torch_dtype(dt)
    x = torch.randn(M, N, device="cuda", generator=gen).to(t)
    g = (2 * torch.randn(M, N, device="cuda", generator=gen)).to(t) if gate else None
    w = (1 + 0.5 * torch.randn(N, device="cuda", generator=gen)).to(torch_dtype(wdt or dt))
    return x, g, w


def _run(x, w, g, eps=1e-6, offset=0.0, shape=None):
    out = torch.full_like(x, float("nan"))  # poisoned: every element must be written
    rstd = wide.forward(x, w, eps, out, gate=g, weight_offset=offset, shape=shape)
    return out, rstd


def _check(out, rstd, x, w, g, eps, offset, seed):
    op = "rmsnorm_gate" if g is not None else "rmsnorm"
    ok, msg = check_rows(op, out, x, w.float() + offset, g, eps, str(x.dtype).replace("torch.", ""), seed=seed)
    assert ok, msg
    want = torch.rsqrt(x.double().pow(2).mean(-1) + eps)
    assert rstd.dtype == torch.float32 and rstd.shape == (x.shape[0],)
    assert torch.allclose(rstd.double(), want, rtol=2e-5, atol=0), (rstd[:4], want[:4])


def _same_bits(a, b):
    return torch.equal(a.view(torch.int16 if a.element_size() == 2 else torch.int32),
                       b.view(torch.int16 if b.element_size() == 2 else torch.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("N", WIDE_NS + (40000,))
@pytest.mark.parametrize("gate", (False, True), ids=("rmsnorm", "gate"))
@pytest.mark.parametrize("dt", DTS)
def test_against_float64_and_batch_invariant(dt, gate, N, seed):
    _needs_clusters()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    M = 1000 if N <= 65536 else 200
    x, g, w = _inputs(M, N, dt, gen, gate)
    out, rstd = _run(x, w, g)
    torch.cuda.synchronize()
    _check(out, rstd, x, w, g, 1e-6, 0.0, seed)
    for m in (1, 3, 64):
        part, prstd = _run(x[:m].contiguous(), w, g[:m].contiguous() if gate else None)
        assert _same_bits(part, out[:m]), f"rows of forward(x[:{m}]) differ from forward(x)'s"
        assert torch.equal(prstd, rstd[:m])
    # a row's bits do not depend on its position either: row 0 moved to the end
    perm = torch.roll(torch.arange(M, device="cuda"), -1)
    moved, _ = _run(x[perm].contiguous(), w, g[perm].contiguous() if gate else None)
    assert _same_bits(moved[-1], out[0])


@pytest.mark.gpu
@pytest.mark.parametrize("gate", (False, True), ids=("rmsnorm", "gate"))
@pytest.mark.parametrize("dt", ("float16", "bfloat16"))
def test_fp32_weight_and_offset(dt, gate, seed):
    _needs_clusters()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    for N in (65536, 262144):
        x, g, w = _inputs(3, N, dt, gen, gate, wdt="float32")
        for offset in (0.0, 1.0):
            out, rstd = _run(x, w, g, offset=offset)
            torch.cuda.synchronize()
            _check(out, rstd, x, w, g, 1e-6, offset, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", DTS)
def test_candidates_agree_with_float64(dt, seed):
    """The measured alternatives (other cluster sizes) are correct too."""
    _needs_clusters()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    size = DTYPES[dt][1]
    for N, shapes in wide.CANDIDATES[size].items():
        x, g, w = _inputs(5, N, dt, gen, True)
        for shape in shapes:
            for gg in (None, g):
                out, rstd = _run(x, w, gg, shape=shape)
                torch.cuda.synchronize()
                _check(out, rstd, x, w, gg, 1e-6, 0.0, seed)


@pytest.mark.gpu
def test_streams_cupy_empty_and_misaligned(seed):
    _needs_clusters()
    cupy = pytest.importorskip("cupy")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x, g, w = _inputs(64, 65536, "bfloat16", gen, False)
    # a side stream: x is written there after a spin; launched elsewhere it would read NaN
    src = x.clone()
    x.fill_(float("nan"))
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    out = torch.full_like(x, float("nan"))
    with torch.cuda.stream(s):
        torch.cuda._sleep(5_000_000)
        x.copy_(src)
    rstd = wide.forward(x, w, 1e-6, out, stream=s)
    s.synchronize()
    _check(out, rstd, src, w, None, 1e-6, 0.0, seed)
    # CuPy arrays (fp16) on CuPy's current stream, rstd a CuPy array, the same bits as torch's
    xh, wh = src.to(torch.float16), w.to(torch.float16)
    oh = torch.full_like(xh, float("nan"))
    wide.forward(xh, wh, 1e-6, oh)
    xc, wc = cupy.asarray(xh), cupy.asarray(wh)
    oc = cupy.full(xc.shape, cupy.nan, dtype=xc.dtype)
    rc = wide.forward(xc, wc, 1e-6, oc)
    assert isinstance(rc, cupy.ndarray)
    cupy.cuda.get_current_stream().synchronize()
    torch.cuda.synchronize()
    assert _same_bits(torch.as_tensor(oc, device="cuda"), oh)
    # M = 0: nothing launched, an empty rstd
    e = torch.empty(0, 65536, device="cuda", dtype=torch.bfloat16)
    assert wide.forward(e, w, 1e-6, torch.empty_like(e)).shape == (0,)
    # misaligned: a view one element in
    buf = torch.randn(64 * 65536 + 8, device="cuda").to(torch.bfloat16)
    with pytest.raises(ValueError, match=r"x2d must start on a 16-byte boundary"):
        wide.forward(buf[1:1 + 64 * 65536].view(64, 65536), w, 1e-6, out)
    assert not wide.aligned(buf[1:]) and wide.aligned(x, w, None)
    with pytest.raises(ValueError, match=r"eps"):
        wide.forward(x, w, -1.0, out)
