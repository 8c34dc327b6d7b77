"""The cluster path for wide rows (kernels/rmsnorm_wide.cu, gpu_viz.rmsnorm.wide).

CPU part: the policy (supported / config depend only on N, dtype, op, weight dtype and the GPU;
every configuration holds its rows; the tables are the record they name), every mode's shared
memory, launch bound and reduction order, the nvcc build for sm_75 / sm_80 / sm_89 / sm_90 (sm_90:
no spills at the launcher's -D options), the weight's loads and the gate's read in the SASS,
argument errors naming the argument.  GPU part (``-m gpu``): both ops, every dtype, fp32 weights
and weight_offset against float64 on fresh random data with NaN-poisoned outputs, rstd against
float64, bitwise batch invariance (rows of forward(x[:m]) equal the same rows of forward(x), m in
1, 3, 64 against 1000), every mode's bits equal to mode 1's at the same shape, streams, CuPy
arrays, M = 0, misaligned operands refused.  Tolerances: gpu_viz.rmsnorm.tolerances.
"""
from __future__ import annotations

import dataclasses
import functools

import pytest

torch = pytest.importorskip("torch")

from gpu_viz import kernels  # noqa: E402
from gpu_viz.rmsnorm import wide  # noqa: E402
from gpu_viz.measure import records  # noqa: E402
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
    for op in wide.OPS:
        for size, table in wide.POLICY[op].items():
            assert sorted(table) == list(WIDE_NS)
            assert all(c * t * e == n for n, (c, t, e, _) in table.items()), (op, size)


def test_policy_tables_are_the_record_they_name():
    """POLICY, POLICY_LOADS, POLICY_HYBRID and POLICY_GATE_LATE are the tables of the committed
    record wide.POLICY_RECORD names (benchmarks/explore/scripts/wide_policy.py composes that record
    from the H200 runs and checks them), each table's comment names it, and the launcher passes
    no shape: what runs is the policy's."""
    import inspect
    import json

    from gpu_viz.rmsnorm.fused import launch

    rec = records.load_records(wide.POLICY_RECORD)
    assert len(rec) == 1 and rec[0]["gpu"] == "NVIDIA H200" and rec[0]["sm"] == "sm_90"
    tables = {"policy": wide.POLICY, "policy_loads": wide.POLICY_LOADS, "policy_hybrid": wide.POLICY_HYBRID,
              "policy_gate_late": wide.POLICY_GATE_LATE}
    for key, table in tables.items():
        assert json.loads(json.dumps(table)) == rec[0][key], key
    src = inspect.getsource(wide)
    assert src.count(f"#: Source: the record {wide.POLICY_RECORD}") == 4
    modes = {sh[3] for op in wide.OPS for t in wide.POLICY[op].values() for sh in t.values()}
    assert modes == set(wide.MODES), "every mode the kernel builds is one the policy uses"
    call = inspect.getsource(launch._launch_wide)
    assert "forward(" in call and "shape" not in call


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
    """SMEM and MBAR keep x (and the gate) in shared memory, never the weight; REGISTERS none."""
    cfg = wide.config(65536, "float16", H100, gate=True, shape=(8, 256, 32, wide.SMEM), weight_dtype="float32")
    assert cfg.smem_bytes == 256 * 32 * (2 + 2)  # x, gate
    assert wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.MBAR)).smem_bytes == 256 * 32 * 2
    assert wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.REGISTERS)).smem_bytes == 0
    for c in wide.configs_in_use():
        assert c.smem_bytes <= wide.MAX_CTA_SHARED, c
        assert c.min_blocks * (c.smem_bytes + wide.CTA_RESERVED_SHARED) <= wide.SM_SHARED or not c.smem_bytes, c


def test_launch_grid_is_a_cluster_per_row():
    cfg = wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.SMEM))
    assert wide.launch_grid(cfg, 0) == 0 and wide.launch_grid(cfg, 1000) == 8000
    with pytest.raises(ValueError, match=r"M must be >= 0, got -1"):
        wide.launch_grid(cfg, -1)
    with pytest.raises(TypeError, match=r"M"):
        wide.launch_grid(cfg, 2.5)
    with pytest.raises(ValueError, match=r"exceeds gridDim.x"):
        wide.launch_grid(cfg, 2**28)
    with pytest.raises(ValueError, match=r"mode one of \(0, 1, 5, 9\)"):
        wide.config(65536, "float16", H100, shape=(8, 256, 32, 2))


def test_reduction_order_depends_on_the_shape_not_the_mode():
    """A row's summation order is (N, vec, cluster, threads, ept): the same for every mode at a
    shape (so every mode must give mode 1's bits: the GPU tests check it), and no function that
    decides it takes M."""
    import inspect

    assert [p for p in inspect.signature(wide.reduction_order).parameters] == ["cfg", "n"]
    for dt in DTS:
        for gate in (False, True):
            for n in WIDE_NS + (40000,):
                pol = wide.config(n, dt, H100, gate=gate)
                shape = (pol.cluster, pol.threads, pol.ept)
                for mode in wide.MODES:
                    try:
                        cfg = wide.config(n, dt, H100, gate=gate, shape=shape + (mode,))
                    except ValueError:  # shared memory beyond one CTA's
                        continue
                    assert wide.reduction_order(cfg, n) == wide.reduction_order(pol, n)
                    assert wide.reduction_order(cfg, n)[1] == n
    a = wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.MBAR))
    b = wide.config(65536, "float16", H100, shape=(4, 256, 64, wide.MBAR))
    assert wide.reduction_order(a, 65536) != wide.reduction_order(b, 65536)  # another tree
    with pytest.raises(ValueError, match=r"n=70000 does not fit"):
        wide.reduction_order(a, 70000)


# ---------------------------------------------------------------------------------------
# CPU: the build

def _need_nvcc():
    if kernels.find_tool("nvcc") is None:
        pytest.skip("nvcc not on PATH")


#: Where the dynamic shared memory of kernels/rmsnorm_wide.cu must start (WIDE_SMEM_ALIGN): a
#: multiple of 128 bytes.  16 bytes off (after 112 or 176 bytes of static arrays), each warp's
#: 512 bytes of cp.async copies cost 20 sectors instead of 16 (the kernel file's comment).
SMEM_ALIGN = 128


def _window_start(static_bytes: int) -> int:
    """Where a kernel with ``static_bytes`` of static shared memory starts its dynamic window."""
    return -(-static_bytes // SMEM_ALIGN) * SMEM_ALIGN


@functools.lru_cache(maxsize=None)
def _sm90_report():
    """ptxas' report of every configuration in use, sm_90 (built once for the tests below)."""
    return tuple(wide.kernel_report(("sm_90",)))


@pytest.mark.slow
def test_sm90_builds_every_configuration_without_spills():
    _need_nvcc()
    rows = _sm90_report()
    cfgs = wide.configs_in_use()
    assert {r["kernel"] for r in rows} == {c.kernel for c in cfgs}
    for r in rows:
        assert r["spill_stores_bytes"] == 0 and r["spill_loads_bytes"] == 0 and r["local_bytes"] == 0, r
        assert r["registers"] <= wide.SM_REGISTERS // (r["threads"] * r["min_blocks"]), r
        # static shared memory: the warp and CTA sums (one mbarrier in MBAR and HYBRID), 8-byte
        # aligned
        bars = 1 if r["mode"] in (wide.MBAR, wide.HYBRID) else 0
        static = 4 * (r["threads"] // 32 + r["cluster"]) + 16 * bars  # then up to the dynamic window
        assert r["shared_bytes"] <= (_window_start(static) if r["smem_bytes"] else static), r


@pytest.mark.slow
def test_dynamic_shared_memory_starts_on_128_bytes():
    """ptxas counts the static shared memory up to where the dynamic window starts: for every
    configuration in use with a dynamic window that is a multiple of 128 bytes -- whatever its
    warps, cluster or mbarriers add up to."""
    _need_nvcc()
    rows = [r for r in _sm90_report() if r["smem_bytes"]]
    assert len(rows) > 20
    odd = [(r["kernel"], r["shared_bytes"]) for r in rows if r["shared_bytes"] % SMEM_ALIGN]
    assert not odd, odd
    # the check can fail: the old alignment leaves the 8-CTA fp32 kernel's window at 112 bytes
    cfg = wide.config(262144, "float32", (9, 0), shape=(8, 512, 64, wide.HYBRID), hreg=6, wdist=2, blocks=2)
    (u,) = kernels.nvcc_compile(wide.FILE, "sm_90", cfg.options + ("-DWIDE_SMEM_ALIGN=16",))
    assert u.shared_bytes % SMEM_ALIGN == 112


@pytest.mark.slow
@pytest.mark.parametrize("arch", ("sm_75", "sm_80", "sm_89"))
def test_older_archs_build_the_trap(arch):
    """Before sm_90 the same source compiles (the kernels trap: supported() is False there)."""
    _need_nvcc()
    for cfg in (wide.config(65536, "float16", H100), wide.config(262144, "float32", H100, gate=True),
                wide.config(131072, "bfloat16", H100, weight_dtype="float32")):
        (u,) = kernels.nvcc_compile(wide.FILE, arch, cfg.options)
        assert u.kernel == cfg.kernel and u.spill_stores_bytes == 0


def test_bare_build_is_a_policy_configuration():
    """The .cu file's defaults (a bare nvcc build, as tests/test_kernels.py compiles every kernel
    file) are the -D options of one configuration the launcher uses."""
    import re

    src = kernels.read_source(wide.FILE)
    block = re.search(r"#ifndef WIDE_MODE\n((?:#define WIDE_\w+ \S+\n)+)#endif", src).group(1)
    defaults = dict(re.findall(r"#define (WIDE_\w+) (\S+)", block))
    want = dict(o[2:].split("=") for o in wide.config(131072, "float16", H100).options)
    assert defaults == want
    # HYBRID's knobs (its mode's only), the gate's read and the dynamic window keep defaults of their own
    own = dict(re.findall(r"#ifndef (WIDE_\w+)[^\n]*\n#define \1 (\S+)", src))
    assert own == {"WIDE_HREG": "0", "WIDE_GLATE": "0", "WIDE_SMEM_ALIGN": str(SMEM_ALIGN)}, own
    assert "#define WIDE_WDIST 1" in src
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


def _run(x, w, g, eps=1e-6, offset=0.0, shape=None, **kw):
    out = torch.full_like(x, float("nan"))  # poisoned: every element must be written
    rstd = wide.forward(x, w, eps, out, gate=g, weight_offset=offset, shape=shape, **kw)
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
def test_every_mode_gives_mode_1s_bits(dt, seed):
    """At each bucket's policy shape, every mode whose shared memory fits is correct against
    float64 and gives mode 1's bits (mode 0's where mode 1's does not fit): the same order of
    sums, the same expression for y."""
    _needs_clusters()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    for N in WIDE_NS:
        x, g, w = _inputs(5, N, dt, gen, True)
        for gg in (None, g):
            pol = wide.config(N, dt, H100, gate=gg is not None)
            shape = (pol.cluster, pol.threads, pol.ept)
            outs = {}
            for mode in wide.MODES:
                try:
                    wide.config(N, dt, H100, gate=gg is not None, shape=shape + (mode,))
                except ValueError:
                    continue
                out, rstd = _run(x, w, gg, shape=shape + (mode,))
                torch.cuda.synchronize()
                _check(out, rstd, x, w, gg, 1e-6, 0.0, seed)
                outs[mode] = (out, rstd)
            ref = outs.get(wide.SMEM) or outs[wide.REGISTERS]
            for mode, (out, rstd) in outs.items():
                assert _same_bits(out, ref[0]) and torch.equal(rstd, ref[1]), (dt, N, mode)


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
    with pytest.raises(TypeError, match=r"gate_late must be a bool or None \(the policy's\), got str"):  # refused before M == 0
        wide.forward(e, w, 1e-6, torch.empty_like(e), gate=e, gate_late="yes")
    # misaligned: a view one element in
    buf = torch.randn(64 * 65536 + 8, device="cuda").to(torch.bfloat16)
    with pytest.raises(ValueError, match=r"x2d must start on a 16-byte boundary"):
        wide.forward(buf[1:1 + 64 * 65536].view(64, 65536), w, 1e-6, out)
    assert not wide.aligned(buf[1:]) and wide.aligned(x, w, None)
    with pytest.raises(ValueError, match=r"eps"):
        wide.forward(x, w, -1.0, out)


def test_sanitizer_cases_are_launchable():
    """scripts/sanitize/rmsnorm_wide.py's cases (every configuration the policy dispatches, every
    mode, HYBRID's knobs) are configurations forward() accepts."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "sanitize" / "rmsnorm_wide.py"
    spec = importlib.util.spec_from_file_location("sanitize_rmsnorm_wide", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    hybrid = mod.hybrid_cases(wide)
    assert all(c in mod.cases(wide) for c in hybrid)
    late = [c for c in hybrid if c[5].get("gate_late")]  # the gate read in the last step, 16-bit and fp32
    assert {dt for dt, *_ in late} == {"float16", "bfloat16", "float32"}
    assert any(wdt != dt for dt, wdt, *_ in late)
    seen, modes = set(), set()
    for dt, wdt, N, M, shape, kw in mod.cases(wide):
        for gate in (False, True):
            cfg = wide.config(N, dt, H100, gate=gate, weight_dtype=wdt, shape=shape, **mod.case_options(kw, gate))
            if "gate_late" in kw:
                assert cfg.gate_late == (gate and kw["gate_late"])
            seen.add(cfg.kernel)
            modes.add(cfg.mode)
    assert modes == set(wide.MODES)
    policy = {c.kernel for c in wide.configs_in_use(dtypes=("float16", "float32")) if c.weight_dtype == c.dtype}
    assert policy <= seen, sorted(policy - seen)


# ---------------------------------------------------------------------------------------
# HYBRID (mode 9: a thread's first chunks in registers, the rest in shared memory).  CPU:
# configuration, shared memory, names, refusals, the build.  GPU: float64, mode 1's (or 0's) bits
# at the same shape, batch invariance, rows shorter than the configuration.

def test_hybrid_configuration():
    H = wide.HYBRID
    h = wide.config(262144, "float16", H100, shape=(4, 512, 128, H))
    assert (h.hreg, h.wdist) == (8, 1)  # half of 16 chunks
    assert h.smem_bytes == 512 * 64 * 2 and h.min_blocks == 2 and h.kernel.endswith("_m9_h8_d1")
    h = wide.config(131072, "float32", H100, gate=True, shape=(4, 512, 64, H), hreg=4, wdist=4)
    assert h.smem_bytes == 512 * (64 - 16) * 4 * 2 and ("-DWIDE_HREG=4", "-DWIDE_WDIST=4") == h.options[-2:]
    # the policy's entries carry their split
    f = wide.config(262144, "float32", H100, gate=True)
    assert f.mode == H and f.gate_late and (f.hreg, f.wdist, f.min_blocks) == wide.POLICY_HYBRID["rmsnorm_gate"][4][262144]
    assert f.smem_bytes == 512 * (64 - 16) * 4 and "-DWIDE_GLATE=1" in f.options
    pol = wide.config(131072, "float32", H100)
    assert (pol.hreg, pol.wdist, pol.min_blocks) == wide.POLICY_HYBRID["rmsnorm"][4][131072]
    # a launch bound of the policy's own (two CTAs of 1024 threads an SM: 32 registers a thread),
    # above min_blocks' estimate; another shape or an explicit bound overrides it
    g = wide.config(131072, "bfloat16", H100, gate=True)
    assert (g.cluster, g.threads, g.ept, g.mode, g.hreg, g.min_blocks) == (8, 1024, 16, H, 1, 2)
    assert "-DWIDE_MIN_BLOCKS=2" in g.options
    assert wide.min_blocks("rmsnorm_gate", 2, 2, 1024, 16, H, g.smem_bytes, 1, 1) == 1
    assert wide.config(131072, "bfloat16", H100, gate=True, blocks=1).min_blocks == 1
    assert wide.config(131072, "bfloat16", H100, gate=True, shape=(8, 1024, 16, H), hreg=1).min_blocks == 1
    # the bound belongs to the entry's own split: another hreg or wdist takes the estimate (at the
    # policy's 32 registers those spill in ptxas), as does an fp32 weight of a 16-bit x
    for kw in (dict(hreg=7), dict(wdist=8), dict(hreg=2, wdist=2)):
        o = wide.config(131072, "float32", H100, **kw)
        assert o.min_blocks == wide.min_blocks("rmsnorm", 4, 4, 1024, 32, H, o.smem_bytes, o.hreg, o.wdist) == 1, kw
    assert wide.config(131072, "float32", H100, hreg=2, wdist=1).min_blocks == 2  # the entry's own
    assert wide.config(65536, "float16", H100, weight_dtype="float32").min_blocks == 1
    f16, f32 = (65536, "float16", H100), (262144, "float32", H100)
    for args, kw, exc, msg in (
            (f16, dict(shape=(8, 256, 32, H), hreg=4), ValueError,
             r"hreg=4: a HYBRID thread keeps 1 to 3 of its 4 chunks"),
            (f16, dict(shape=(8, 256, 32, H), wdist=5), ValueError, r"wdist=5: the weight's loads run 1 to 4 chunks ahead"),
            (f16, dict(shape=(8, 256, 32, wide.SMEM), wdist=2), ValueError,
             r"wdist=2 with mode 1: hreg and wdist are HYBRID \(9\)'s only"),
            (f16, dict(shape=(8, 256, 32, H), hreg=2.0), TypeError, r"hreg must be an int"),
            (f16, dict(shape=(8, 256, 32, wide.SMEM), wdist="2"), TypeError, r"wdist must be an int"),
            ((32768, "float16", H100), dict(shape=(4, 1024, 8, H), hreg=1), ValueError, r"HYBRID needs at least 2 chunks"),
            ((131072, "float16", H100), dict(gate=True, hreg=2), ValueError,
             r"hreg=2: a HYBRID thread keeps exactly 1 of its 2 chunks in registers"),
            (f32, dict(gate=True, shape=(8, 1024, 32, wide.MBAR)), ValueError, r"262144 bytes of shared memory per CTA")):
        with pytest.raises(exc, match=msg):
            wide.config(*args, **kw)
    # registers: the launch bound the estimate gives (ptxas checks the real count: the build test)
    assert wide.min_blocks("rmsnorm", 2, 2, 512, 128, H, 65536, hreg=8, wdist=1) == 2  # 32 + 32 a thread
    assert wide.min_blocks("rmsnorm", 4, 4, 512, 64, H, 98304, hreg=4, wdist=4) == 2  # 16 + 12 + 32
    assert wide.min_blocks("rmsnorm", 2, 2, 512, 128, H, 65536, hreg=8, wdist=2) == 1  # a second weight pack
    assert wide.min_blocks("rmsnorm_gate", 4, 4, 256, 64, H, 16384, hreg=12, wdist=16) == 1  # x, g packs: 96


def test_hybrid_gate_late_configuration():
    """gate_late: a HYBRID gate kernel that reads g in its last step keeps x alone on chip (half the
    gate op's shared memory), is named and built apart, takes min_blocks' estimate of its own, and
    is refused for rmsnorm, other modes and non-bools (forward's refusal: the GPU test of streams
    and empty problems)."""
    H = wide.HYBRID
    e = wide.config(262144, "float16", H100, gate=True, shape=(4, 1024, 64, H), hreg=2)
    late = wide.config(262144, "float16", H100, gate=True, shape=(4, 1024, 64, H), hreg=2, gate_late=True)
    assert not e.gate_late and late.gate_late
    assert late.smem_bytes == 1024 * 6 * 16 == e.smem_bytes // 2  # six chunks of x in shared memory
    assert late.kernel == "rmsnorm_gate_cluster_f16_wf16_c4_t1024_e64_m9_h2_d1_g" and e.kernel == late.kernel[:-2]
    assert "-DWIDE_GLATE=1" in late.options and not any("GLATE" in o for o in e.options)
    assert wide.sm_holds(1024, late.smem_bytes) == 2 and wide.sm_holds(1024, e.smem_bytes) == 1
    # min_blocks' registers at 128 threads without shared memory (the registers decide): x packed
    # (2 chunks: 8) and one g pack in flight (4), against 16 of x * silu(g) in fp32 without gate_late
    assert wide.min_blocks("rmsnorm_gate", 2, 2, 128, 64, H, 0, 2, 1, gate_late=True) == 65536 // (128 * 44) == 11
    assert wide.min_blocks("rmsnorm_gate", 2, 2, 128, 64, H, 0, 2, 1) == 65536 // (128 * 48) == 10
    assert wide.min_blocks("rmsnorm_gate", 2, 2, 1024, 64, H, late.smem_bytes, 2, 1, gate_late=True) == 1
    f = wide.config(262144, "float32", H100, gate=True, shape=(8, 1024, 32, H), hreg=1, gate_late=True, blocks=2)
    assert f.smem_bytes == 1024 * 7 * 16 and f.min_blocks == 2 and f.kernel.endswith("_m9_h1_d1_g")
    # the policy's own choice where the caller says nothing
    for size, dt in ((2, "bfloat16"), (4, "float32")):
        for n in wide.POLICY["rmsnorm_gate"][size]:
            cfg = wide.config(n, dt, H100, gate=True)
            assert cfg.gate_late == (n in wide.POLICY_GATE_LATE[size]), (n, dt)
            assert not wide.config(n, dt, H100).gate_late
    # an explicit False on the policy's late entry keeps g with x: twice the shared memory, so not
    # the entry's launch bound of 2 (an SM holds one such CTA) but min_blocks' estimate
    e = wide.config(262144, "float32", H100, gate=True, gate_late=False)
    assert not e.gate_late and e.smem_bytes == 512 * 48 * 4 * 2 == 196608 and e.min_blocks == 1
    # gate_late reaches min_blocks' estimate: x packed (16) and two g packs (8), a weight pack (4)
    o = wide.config(262144, "float32", H100, gate=True, shape=(8, 512, 64, H), hreg=4, wdist=2, gate_late=True)
    assert o.min_blocks == 65536 // (512 * (16 + 8 + 4 + 32)) == 2
    for kw, exc, msg in ((dict(gate_late=True), ValueError,
                          r"gate_late=True for rmsnorm: it says when the gate op reads its gate g; pass gate=True"),
                         (dict(gate=True, shape=(4, 1024, 64, wide.MBAR), gate_late=True), ValueError,
                          r"gate_late=True with rmsnorm_gate mode 5: reading g in the last step is the gate op's "
                          r"HYBRID \(9\) only; pass shape=\(cluster, threads, ept, 9\) with it"),
                         (dict(gate=True, gate_late=1), TypeError, r"gate_late must be a bool or None \(the policy's\), got int")):
        with pytest.raises(exc, match=msg):
            wide.config(262144, "float16", H100, **({"shape": (4, 1024, 64, H)} | kw))


@pytest.mark.slow
def test_hybrid_builds_on_every_arch():
    """The policy's HYBRID kernels and a spread of splits: sm_90 without spills and within the
    launch bound's registers; before sm_90 the trap."""
    _need_nvcc()
    cfgs = [c for c in wide.configs_in_use() if c.mode == wide.HYBRID]
    assert cfgs and any(c.gate_late for c in cfgs)
    cfgs += [wide.config(131072, "bfloat16", H100, gate=True, shape=(4, 512, 64, wide.HYBRID), hreg=2, wdist=4),
             # the gate read in the last step, at two CTAs of 1024 threads an SM (32 registers)
             wide.config(262144, "float16", H100, gate=True, shape=(4, 1024, 64, wide.HYBRID), hreg=1, gate_late=True,
                         blocks=2),
             wide.config(262144, "float32", H100, gate=True, shape=(8, 1024, 32, wide.HYBRID), hreg=1, gate_late=True,
                         blocks=2),
             wide.config(262144, "bfloat16", H100, gate=True, shape=(4, 512, 128, wide.HYBRID), hreg=8, gate_late=True)]
    for cfg in cfgs:
        (u,) = kernels.nvcc_compile(wide.FILE, "sm_90", cfg.options)
        assert u.kernel == cfg.kernel and u.spill_stores_bytes == 0 and u.spill_loads_bytes == 0, u
        assert u.registers <= wide.SM_REGISTERS // (cfg.threads * cfg.min_blocks), u
    for arch in ("sm_75", "sm_80", "sm_89"):
        (u,) = kernels.nvcc_compile(wide.FILE, arch, cfgs[-1].options)
        assert u.kernel == cfgs[-1].kernel


_HYBRID_CASES = (("float16", False, 262144, None, None), ("bfloat16", False, 200000, None, None),
               ("float32", False, 131072, None, None), ("float32", True, 262144, None, None),
               ("float32", True, 200000, None, None),
               ("float16", True, 131072, (4, 512, 64, wide.HYBRID), dict(hreg=2, wdist=3)),
               ("bfloat16", True, 131072, (4, 512, 64, wide.HYBRID), dict(hreg=3, wdist=1)),
               # the policy's HYBRID kernels at their own launch bound (two CTAs of 1024 threads an
               # SM), N below the bucket, and with an fp32 weight (min_blocks' bound)
               ("float16", False, 65536, None, None), ("bfloat16", False, 40000, None, None),
               ("bfloat16", True, 131072, None, None), ("float16", True, 100000, None, None),
               ("bfloat16", True, 131072, None, dict(wdt="float32", offset=1.0)),
               ("float16", False, 65536, None, dict(wdt="float32")),
               # the gate read in the last step: 16-bit on 4-CTA clusters of 1024 threads, N below the
               # bucket, an fp32 weight; fp32 on 8-CTA clusters, the gate two chunks ahead
               ("float16", True, 262144, (4, 1024, 64, wide.HYBRID), dict(hreg=2, gate_late=True, blocks=2)),
               ("bfloat16", True, 200000, (4, 1024, 64, wide.HYBRID),
                dict(hreg=1, gate_late=True, blocks=2, wdt="float32", offset=1.0)),
               ("float32", True, 262144, (8, 1024, 32, wide.HYBRID), dict(hreg=1, wdist=2, gate_late=True, blocks=2)),
               # the 16-bit gate's policy at 262144 (HYBRID, two CTAs of 1024 threads an SM), N below it
               ("bfloat16", True, 262144, None, None), ("float16", True, 150000, None, None))


@pytest.mark.gpu
@pytest.mark.parametrize("case", _HYBRID_CASES, ids=lambda c: f"{c[0]}-{'gate' if c[1] else 'rms'}-{c[2]}"
                         f"-{'policy' if c[3] is None else c[3][3]}" + ("-wf32" if (c[4] or {}).get("wdt") else "")
                         + ("-late" if (c[4] or {}).get("gate_late") else ""))
def test_hybrid_against_float64_and_batch_invariant(case, seed):
    """float64 on fresh data with NaN-poisoned output (N below the bucket included: vectors past
    N idle), mode 1's bits (mode 0's where mode 1's shared memory does not fit) at the same
    (cluster, threads, ept), rows of op(x[:m]) bit-identical to op(x)'s."""
    _needs_clusters()
    dt, gate, N, shape, kw = case
    kw = dict(kw or {})
    wdt, offset = kw.pop("wdt", None), kw.pop("offset", 0.0)
    cfg = wide.config(N, dt, H100, gate=gate, shape=shape, weight_dtype=wdt, **kw)
    assert cfg.mode == wide.HYBRID
    shape = (cfg.cluster, cfg.threads, cfg.ept, cfg.mode)
    kw = dict(blocks=cfg.min_blocks, hreg=cfg.hreg, wdist=cfg.wdist, gate_late=cfg.gate_late)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    M = 41
    x, g, w = _inputs(M, N, dt, gen, gate, wdt=wdt)
    out, rstd = _run(x, w, g, offset=offset, shape=shape, **kw)
    torch.cuda.synchronize()
    _check(out, rstd, x, w, g, 1e-6, offset, seed)
    try:
        ref_shape = shape[:3] + (wide.SMEM,)
        wide.config(N, dt, H100, gate=gate, shape=ref_shape, weight_dtype=wdt)
    except ValueError:
        ref_shape = shape[:3] + (wide.REGISTERS,)
    ref, ref_rstd = _run(x, w, g, offset=offset, shape=ref_shape)
    assert _same_bits(out, ref) and torch.equal(rstd, ref_rstd), f"{cfg.kernel} differs from {ref_shape}'s bits"
    for m in (1, 3, 40):
        part, prstd = _run(x[:m].contiguous(), w, g[:m].contiguous() if gate else None, offset=offset, shape=shape,
                           **kw)
        assert _same_bits(part, out[:m]) and torch.equal(prstd, rstd[:m]), f"op(x[:{m}]) differs ({cfg.kernel})"


# ---------------------------------------------------------------------------------------
# The weight's loads in the store step (WIDE_WLOAD) and the launch bound the policy names with
# them (POLICY_LOADS).  CPU: configuration and refusals,
# the SASS order of the loads.  GPU: every such policy kernel gives the chunked kernel's bits.

def test_weight_loads_configuration():
    pol = wide.config(131072, "float16", H100)
    assert (pol.wload, pol.min_blocks) == (wide.WLOAD_EARLY, 2)
    assert pol.kernel.endswith("_m5_we") and "-DWIDE_WLOAD=2" in pol.options and "-DWIDE_MIN_BLOCKS=2" in pol.options
    # an fp32 weight of a 16-bit x would hold 128 bytes a thread: a chunk at a time, the same bound
    w32 = wide.config(131072, "float16", H100, weight_dtype="float32")
    assert (w32.wload, w32.min_blocks) == (wide.WLOAD_CHUNK, 2) and w32.kernel.endswith("_m5")
    assert wide.config(65536, "float32", H100, gate=True).kernel.endswith("_m1_wb")
    # an explicit shape: a chunk at a time and the computed bound unless asked
    shp = wide.POLICY["rmsnorm"][2][131072]
    assert wide.config(131072, "float16", H100, shape=shp).wload == wide.WLOAD_CHUNK
    assert wide.config(131072, "float16", H100, shape=shp, wload=1, blocks=2).kernel.endswith("_wb")
    with pytest.raises(ValueError, match=r"wload=2 with mode 9: .* SMEM \(1\) and MBAR \(5\) only"):
        wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.HYBRID), wload=2)
    with pytest.raises(ValueError, match=r"wload=7: the weight loads are WLOAD_CHUNK \(0"):
        wide.config(65536, "float16", H100, wload=7)
    for bad in (True, 1.0, "1"):  # an int, not a bool / float / string (-DWIDE_WLOAD=True would not build)
        with pytest.raises(TypeError, match=r"wload must be an int"):
            wide.config(65536, "float16", H100, wload=bad)
    with pytest.raises(ValueError, match=r"shape must be \(cluster, threads, ept, mode\), 4 ints"):
        wide.config(65536, "float16", H100, shape=(8, 256, 32))
    with pytest.raises(ValueError, match=r"blocks=2 .* an SM holds only 1 of its CTAs"):
        wide.config(262144, "float32", H100, shape=(8, 1024, 32, wide.SMEM), blocks=2)

    with pytest.raises(ValueError, match=r"blocks=3 .* an SM holds 1 to 2 of its CTAs"):
        wide.config(131072, "float16", H100, blocks=3)
    with pytest.raises(TypeError, match=r"blocks"):
        wide.config(131072, "float16", H100, blocks=1.5)


def _sass(cfg):
    """sm_90 SASS instructions of ``cfg``'s kernel, built by the local nvcc."""
    import tempfile
    from pathlib import Path

    from gpu_viz import disasm

    if None in (kernels.find_tool("nvcc"), kernels.find_tool("cuobjdump"), kernels.find_tool("nvdisasm")):
        if __import__("os").environ.get("CI"):
            pytest.fail("CI needs nvcc, cuobjdump and nvdisasm (make setup installs them)")
        pytest.skip("needs nvcc, cuobjdump and nvdisasm")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        kernels.nvcc_compile(wide.FILE, "sm_90", cfg.options, cubin=cubin)
        text, label = disasm.sass_of_cubin(cubin, cfg.kernel)
    assert text, label
    return [row.split("*/", 1)[-1].strip() for row in text.splitlines()]


@pytest.mark.slow
def test_weight_loads_in_the_sass():
    """sm_90 SASS of the policy's MBAR kernel at 131072 (fp16): with WLOAD_EARLY every weight
    load (LDG.E.128.CONSTANT) is issued before the exchange's mbarrier wait; a chunk at a time,
    the loads alternate with the stores of y (STG.E.128) after it."""
    pol = wide.config(131072, "float16", H100)
    early = _sass(pol)
    chunk = _sass(dataclasses.replace(pol, wload=wide.WLOAD_CHUNK))
    batch = _sass(dataclasses.replace(pol, wload=wide.WLOAD_BATCH))

    def order(code):
        return [("L" if "LDG.E.128.CONSTANT" in i else "S" if "STG.E.128" in i else "W")
                for i in code if "LDG.E.128.CONSTANT" in i or "STG.E.128" in i or "SYNCS.PHASECHK" in i]
    chunks = pol.ept // pol.vec
    e, c, b = "".join(order(early)), "".join(order(chunk)), "".join(order(batch))
    assert e.index("W") > e.rindex("L") and e.count("L") == chunks, e  # all loads before the wait
    first_store = c.index("S")
    assert c[first_store:].count("L") >= chunks - 2, c  # a chunk at a time: loads between the stores
    assert b.index("S") > b.rindex("L"), b  # batched: every load before the first store


@pytest.mark.slow
def test_gate_late_reads_g_after_the_exchange_in_the_sass():
    """sm_90 SASS of the policy's fp32 gate kernel at 262144 (HYBRID, g read late): before the
    exchange's mbarrier wait only x is loaded -- one cp.async (LDGSTS) per shared-memory chunk and
    one direct load (LDG, not the weight's .CONSTANT) per register chunk -- and every chunk's g
    load comes after it; the same shape without gate_late loads x and g before the wait and
    nothing after it but the weight.  (A kernel ignoring WIDE_GLATE would copy g into shared
    memory the launcher has halved.)"""
    late = wide.config(262144, "float32", H100, gate=True)
    assert late.gate_late and late.mode == wide.HYBRID
    early = dataclasses.replace(late, gate_late=False, min_blocks=1)
    chunks, rc = late.ept // late.vec, late.hreg

    def counts(cfg):
        seq = "".join("C" if "LDGSTS" in i else "W" if "SYNCS.PHASECHK" in i else
                      "G" if "LDG.E" in i and "CONSTANT" not in i else "" for i in _sass(cfg))
        wait = seq.index("W")
        return seq.count("C"), seq[:wait].count("G"), seq[wait:].count("G")

    assert counts(late) == (chunks - rc, rc, chunks), counts(late)
    assert counts(early) == (2 * (chunks - rc), 2 * rc, 0), counts(early)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", DTS)
def test_policy_weight_loads_give_the_chunked_bits(dt, seed):
    """Every policy kernel with POLICY_LOADS' weight loads or launch bound, both ops, against
    float64 and bit for bit against the same shape loading a chunk at a time at the computed
    bound (the weight's timing and the register cap change no arithmetic)."""
    _needs_clusters()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    size = DTYPES[dt][1]
    for op, table in wide.POLICY_LOADS.items():
        for n in table.get(size, {}):
            gate = op == "rmsnorm_gate"
            for wdt in dict.fromkeys((dt, "float32")):
                x, g, w = _inputs(7, n, dt, gen, gate, wdt=wdt)
                out, rstd = _run(x, w, g)
                torch.cuda.synchronize()
                _check(out, rstd, x, w, g, 1e-6, 0.0, seed)
                ref = torch.full_like(x, float("nan"))
                r2 = wide.forward(x, w, 1e-6, ref, gate=g, shape=wide.POLICY[op][size][n], wload=wide.WLOAD_CHUNK)
                torch.cuda.synchronize()
                assert _same_bits(out, ref) and torch.equal(rstd, r2), (op, n, dt, wdt)
