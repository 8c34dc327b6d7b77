"""The cluster path for wide rows (kernels/rmsnorm_wide.cu, gpu_viz.rmsnorm.wide).

CPU part: the policy (supported / config depend only on N, dtype, op, weight dtype and the GPU;
every configuration holds its rows), the nvcc build for sm_75 / sm_80 / sm_89 / sm_90 (sm_90:
no spills at the launcher's -D options), argument errors naming the argument.  GPU part
(``-m gpu``): both ops, every dtype, fp32 weights and weight_offset against float64 on fresh
random data with NaN-poisoned outputs, rstd against float64, bitwise batch invariance (rows of
forward(x[:m]) equal the same rows of forward(x), m in 1, 3, 64 against 1000), streams, CuPy
arrays, M = 0, misaligned operands refused.  Tolerances: gpu_viz.rmsnorm.tolerances.
Modes 3-5 (PERSIST, PERSIST_1, MBAR; in the policy where they measured fastest): CPU -- the
policy equals the recorded run's proposal, shared memory and grid arithmetic at every wide N, dtype and op, the reduction order, a model
of the persistent exchange's slot reuse, the build; GPU -- float64, mode 1's bits, invariance
at m in 1, 3, 64, 1000, persistent grids of 1 .. M + 27 clusters.
"""
from __future__ import annotations

import dataclasses
import functools

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
                c, t, e, _ = wide.POLICY[op][size][n]  # measured: test_policy_is_the_recorded_runs_proposal
                assert c * t * e == n, (op, size, n)
                assert all(c * t * e == n for c, t, e, _ in wide.NEW_CANDIDATES[op][size][n]), (op, size, n)
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


#: Where the dynamic shared memory of kernels/rmsnorm_wide.cu must start (WIDE_SMEM_ALIGN): a
#: multiple of 128 bytes.  16 bytes off (its old place after 112 or 176 bytes of static arrays),
#: each warp's 512 bytes of cp.async copies cost 20 sectors instead of 16 (benchmarks/NOTES.md,
#: "twelfth session").
SMEM_ALIGN = 128


def _window_start(static_bytes: int) -> int:
    """Where a kernel with ``static_bytes`` of static shared memory starts its dynamic window."""
    return -(-static_bytes // SMEM_ALIGN) * SMEM_ALIGN


@functools.lru_cache(maxsize=None)
def _sm90_report():
    """ptxas' report of every configuration in use, sm_90 (built once for the tests below)."""
    return tuple(wide.kernel_report(("sm_90",)))


def test_sm90_builds_every_configuration_without_spills():
    _need_nvcc()
    rows = _sm90_report()
    cfgs = wide.configs_in_use()
    assert {r["kernel"] for r in rows} == {c.kernel for c in cfgs}
    for r in rows:
        assert r["spill_stores_bytes"] == 0 and r["spill_loads_bytes"] == 0 and r["local_bytes"] == 0, r
        assert r["registers"] <= wide.SM_REGISTERS // (r["threads"] * r["min_blocks"]), r
        # static shared memory: the warp and CTA sums (two sets and two mbarriers in the
        # persistent modes, one mbarrier in MBAR and HYBRID), 8-byte aligned
        sets, bars = {wide.PERSIST: (2, 2), wide.PERSIST_1: (2, 2), wide.MBAR: (1, 1), wide.RING: (2, 2),
                      wide.RING_L2: (2, 2), wide.HYBRID: (1, 1)}.get(r["mode"], (1, 0))
        sums = 4 * sets * (r["threads"] // 32 + r["cluster"])
        static = sums + 16 * bars  # an 8-byte mbarrier, aligned; then up to the dynamic window
        assert r["shared_bytes"] <= (_window_start(static) if r["smem_bytes"] else static), r


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
    want = dict(o[2:].split("=") for o in wide.config(131072, "float16", H100).options)
    # the RING / HYBRID options (their modes' only) keep a default of their own, the
    # explorations' phase stamps are off, and the dynamic shared memory starts on 128 bytes
    own = {"WIDE_RING": "4", "WIDE_HREG": "0", "WIDE_WDIST": "1", "WIDE_GLATE": "0", "WIDE_PHASES": "0",
           "WIDE_PHASE_CTAS": "65536", "WIDE_SMEM_ALIGN": str(SMEM_ALIGN)}
    assert {k: defaults.pop(k) for k in own} == own
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
    with pytest.raises(TypeError, match=r"gate_late must be a bool or None \(the policy's\), got str"):  # refused before M == 0
        wide.forward(e, w, 1e-6, torch.empty_like(e), gate=e, gate_late="yes")
    # misaligned: a view one element in
    buf = torch.randn(64 * 65536 + 8, device="cuda").to(torch.bfloat16)
    with pytest.raises(ValueError, match=r"x2d must start on a 16-byte boundary"):
        wide.forward(buf[1:1 + 64 * 65536].view(64, 65536), w, 1e-6, out)
    assert not wide.aligned(buf[1:]) and wide.aligned(x, w, None)
    with pytest.raises(ValueError, match=r"eps"):
        wide.forward(x, w, -1.0, out)


# ---------------------------------------------------------------------------------------
# the unmeasured modes (2026-12-02): PERSIST, PERSIST_1 (persistent clusters), MBAR (QuACK's
# exchange).  CPU: not in the policy, their launch arithmetic, the reduction order, a model of
# the persistent exchange's slot reuse, the build.  GPU: float64, invariance, grid sizes.

NEW_MODES = (wide.PERSIST, wide.PERSIST_1, wide.MBAR)


def _new_configs(n, dt, gate, wdt=None, modes=NEW_MODES):
    """The NEW_CANDIDATES configurations of n's bucket for (dt, op, weight dtype) in ``modes``."""
    size = DTYPES[dt][1]
    op = "rmsnorm_gate" if gate else "rmsnorm"
    bucket = min(b for b in wide.NEW_CANDIDATES[op][size] if b >= n)
    return [wide.config(n, dt, H100, gate=gate, weight_dtype=wdt, shape=sh)
            for sh in wide.NEW_CANDIDATES[op][size][bucket] if sh[3] in modes]


RECORDS = (("benchmarks", "explore", "2026-12-02-wide-persistent", "run1", "persist-record.json"),
           ("benchmarks", "explore", "2026-12-03-wide-bigger-ctas", "run1", "persist-record.json"))


def test_policy_is_the_recorded_runs_proposal():
    """POLICY is the proposal of the committed H200 run that timed every CANDIDATES and
    NEW_CANDIDATES shape (least summed median, checked against mode 1's bits first), updated by
    the later run that timed bigger CTAs beside POLICY's shapes at the points under 90 %; so a
    shape is dispatched only where it measured fastest; a run timed every shape the policy uses;
    and fused.py passes no shape (what runs is the policy's)."""
    import inspect
    import json
    from pathlib import Path

    from gpu_viz.rmsnorm import fused

    proposed, timed = {}, set()
    for path in RECORDS:
        rec = json.loads(Path(__file__).resolve().parents[1].joinpath(*path).read_text())
        assert rec["gpu"].startswith("NVIDIA H") and rec["sm"] == "sm_90" and not rec["failures"] and rec["complete"]
        for op, by in rec["proposed_policy"].items():
            for size, t in by.items():
                for n, sh in t.items():
                    proposed.setdefault(op, {}).setdefault(int(size), {})[int(n)] = tuple(sh)
        timed |= {(r["op"], r["dtype"], r["N"], r["impl"]) for r in rec["rows"]}
    ring_prop, ring_timed = _ring_proposals()
    ring = {op: {2: {}, 4: {}} for op in wide.OPS}
    hybrid = {op: {2: {}, 4: {}} for op in wide.OPS}
    late = {2: set(), 4: set()}
    for (op, size, n), (shape, param) in ring_prop.items():
        proposed[op][size][n] = shape
        if shape[3] in wide.RING_MODES:
            ring[op][size][n] = param
        else:
            hybrid[op][size][n] = param[:3]
            if param[3]:
                late[size].add(n)
    assert proposed == wide.POLICY
    assert ring == wide.POLICY_RING and hybrid == wide.POLICY_HYBRID
    assert late == {size: set(ns) for size, ns in wide.POLICY_GATE_LATE.items()}
    impl_name = _explore_script().impl_name  # the runs' row names
    for cfg in wide.configs_in_use(dtypes=DTS):
        if cfg.weight_dtype == cfg.dtype:
            if cfg.mode in wide.RING_MODES + (wide.HYBRID,):
                assert any((cfg.op, cfg.dtype, cfg.capacity, i) in ring_timed for i in _ring_impls(cfg)), cfg
                continue
            impl = impl_name((cfg.cluster, cfg.threads, cfg.ept, cfg.mode))
            assert (cfg.op, cfg.dtype, cfg.capacity, impl) in timed, cfg
    modes = {sh[3] for op in wide.OPS for t in wide.POLICY[op].values() for sh in t.values()}
    assert modes - {wide.REGISTERS, wide.SMEM, wide.SMEM_W}, "the policy uses modes 3-5 where they won"
    src = inspect.getsource(fused._launch_wide)
    assert "forward(" in src and "shape" not in src and "clusters" not in src


#: The ring runs, then the occupancy runs (their HYBRID rows name the launch bound), then the
#: late-gate run (the gate read in the last step), then the 262144 rows' run after the dynamic
#: shared memory moved onto 128 bytes, in order.
RING_RUNS = tuple(("benchmarks", "explore", "2026-12-02-wide-ring", f"run{i}", "ring-record.json") for i in (1, 2, 3)) + \
    tuple(("benchmarks", "explore", "2026-12-02-wide-occupancy", f"run{i}", "ring-record.json") for i in (1, 2)) + \
    (("benchmarks", "explore", "2026-12-02-wide-late-gate", "run1", "ring-record.json"),
     ("benchmarks", "explore", "2026-12-03-wide-split2", "run2", "ring-record.json"),
     ("benchmarks", "explore", "2026-12-03-wide-gate16", "run1", "ring-record.json"))


def _ring_impls(cfg):
    """The names a ring or occupancy run gives ``cfg``'s row (ring_bench.py's ``name_of``, tag
    "ring"): a HYBRID row's with and without its launch bound."""
    name = f"ring:{cfg.cluster}x{cfg.threads}x{cfg.ept}m{cfg.mode}" + (
        f"r{cfg.ring}" if cfg.mode in wide.RING_MODES else f"h{cfg.hreg}d{cfg.wdist}" + ("g" if cfg.gate_late else ""))
    return {name, name + f"b{cfg.min_blocks}"} if cfg.mode == wide.HYBRID else {name}


def _parse_ring_impl(impl, op, size, n, configs):
    """(shape, ring depth or (hreg, wdist, launch bound, gate read late)) of a ring run's row name.
    run2's HYBRID rows predate hreg / wdist in the name (half the chunks in registers, the weight
    one chunk ahead), the ring runs' the bound in it: theirs is the one the record's ``configs``
    holds for that row (the same in every dtype of the size); a "g" after the weight's distance
    names the gate read in the last step (the late-gate run)."""
    import re

    m = re.fullmatch(r"ring:(\d+)x(\d+)x(\d+)m(\d+)(?:r(\d+)|h(\d+)d(\d+)(g?)(?:b(\d+))?)?", impl)
    c, t, e, mode = (int(v) for v in m.group(1, 2, 3, 4))
    if mode in wide.RING_MODES:
        return (c, t, e, mode), int(m.group(5))
    chunks = e // (16 // size)
    hreg, wdist = (int(m.group(6)), int(m.group(7))) if m.group(6) else (chunks // 2, 1)
    late = m.group(8) == "g"
    if m.group(9):
        return (c, t, e, mode), (hreg, wdist, int(m.group(9)), late)
    bounds = {configs[f"{impl} {op} {dt} {n}"]["min_blocks"] for dt in DTS if DTYPES[dt][1] == size}
    assert len(bounds) == 1, (impl, bounds)
    return (c, t, e, mode), (hreg, wdist, bounds.pop(), late)


def _ring_proposals():
    """What the ring runs (explore/2026-12-02-wide-ring run1-3), then the occupancy runs
    (explore/2026-12-02-wide-occupancy run1-2) and the late-gate run (explore/2026-12-02-wide-late-gate
    run1) propose, in that order: per (op, element size, N),
    the candidate with the least median summed over the dtypes of that size (timed in every one of
    them) where it beat the policy's kernel timed in the same run; a later run's proposal replaces
    an earlier one's.  Also every (op, dtype, N, impl) timed."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    prop, timed = {}, set()
    for path in RING_RUNS:
        rec = json.loads(root.joinpath(*path).read_text())
        assert rec["gpu"].startswith("NVIDIA H") and rec["sm"] == "sm_90" and not rec["failures"]
        assert not rec["skipped"]
        sums = {}
        for r in rec["rows"]:
            timed.add((r["op"], r["dtype"], r["N"], r["impl"]))
            size = DTYPES[r["dtype"]][1]
            sums.setdefault((r["op"], size, r["N"]), {}).setdefault(r["impl"], []).append(r["median_us"])
        for (op, size, n), by in sums.items():
            ndt = len([d for d in DTS if DTYPES[d][1] == size])
            full = {impl: sum(v) for impl, v in by.items() if len(v) == ndt}
            cands = {impl: v for impl, v in full.items() if impl.startswith("ring:")}
            if not cands:
                continue
            best = min(cands, key=cands.get)
            policy = next(v for impl, v in full.items() if impl.startswith("policy:"))
            if cands[best] < policy:
                prop[(op, size, n)] = _parse_ring_impl(best, op, size, n, rec["configs"])
    return prop, timed


def test_new_candidates_fit_one_cta():
    """Every NEW_CANDIDATES shape builds a configuration for every dtype and weight dtype of its
    element size: capacity n, shared memory within the 227 KiB opt-in, at least one CTA per SM;
    PERSIST is left out exactly where its two row buffers do not fit (the fp32 gate at 262144)."""
    seen = 0
    for op in wide.OPS:
        for size, table in wide.NEW_CANDIDATES[op].items():
            dts = [d for d in DTS if DTYPES[d][1] == size]
            for n, shapes in table.items():
                assert {sh[3] for sh in shapes} >= {wide.PERSIST_1, wide.MBAR}, (op, size, n)
                for sh in shapes:
                    for dt in dts:
                        for wdt in dict.fromkeys((dt, "float32")):
                            cfg = wide.config(n, dt, H100, gate=op == "rmsnorm_gate", weight_dtype=wdt, shape=sh)
                            assert cfg.capacity == n and cfg.mode == sh[3], cfg
                            assert 0 < cfg.smem_bytes <= wide.MAX_CTA_SHARED, cfg
                            assert cfg.min_blocks * (cfg.smem_bytes + wide.CTA_RESERVED_SHARED) <= wide.SM_SHARED, cfg
                            assert cfg.persistent == (sh[3] in wide.PERSISTENT_MODES)
                            seen += 1
    assert seen > 150
    assert all(sh[3] != wide.PERSIST for sh in wide.NEW_CANDIDATES["rmsnorm_gate"][4][262144])
    with pytest.raises(ValueError, match=r"327680 bytes of shared memory per CTA.*at most 232448"):
        wide.config(262144, "float32", H100, gate=True, shape=(16, 512, 32, wide.PERSIST))


@pytest.mark.parametrize("n", WIDE_NS + (40000,))
def test_new_modes_launch_arithmetic(n):
    """Shared memory per CTA by mode, for all four wide N (and 40000, which fills 61 % of its
    65536 bucket), three dtypes, both ops; the grid of each mode."""
    for dt in DTS:
        size = DTYPES[dt][1]
        for gate in (False, True):
            rows = size * (2 if gate else 1)
            for cfg in _new_configs(n, dt, gate) + _new_configs(n, dt, gate, "float32"):
                te = cfg.threads * cfg.ept
                wsize = DTYPES[cfg.weight_dtype][1]
                want = {wide.PERSIST: te * (2 * rows + wsize), wide.PERSIST_1: te * (rows + wsize),
                        wide.MBAR: te * rows}[cfg.mode]
                assert cfg.smem_bytes == want <= wide.MAX_CTA_SHARED, cfg
                assert cfg.capacity >= n and (n != 40000 or cfg.capacity == 65536)
                if cfg.persistent:
                    act = wide.estimate_active_clusters(cfg)
                    assert act == (wide.H100_SMS * cfg.min_blocks) // cfg.cluster >= 1
                    for M in (1, 3, 64, act - 1, act, act + 1, 1000):
                        if M >= 1:
                            assert wide.launch_grid(cfg, M, act) == min(M, act) * cfg.cluster
                else:
                    assert wide.launch_grid(cfg, 1000) == 1000 * cfg.cluster
    # one worked example: fp16 gate, fp32 weight, (8, 256, 32): 8192 elements a CTA
    cfg = wide.config(65536, "float16", H100, gate=True, weight_dtype="float32", shape=(8, 256, 32, wide.PERSIST))
    assert cfg.smem_bytes == 8192 * (2 * 2 * 2 + 4) == 98304 and cfg.min_blocks == 2


def test_launch_grid_refuses_what_it_cannot_launch():
    p = wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.PERSIST))
    m1 = wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.SMEM))
    assert wide.launch_grid(p, 0, 40) == 0 and wide.launch_grid(p, 0, clusters=5) == 0
    assert wide.launch_grid(p, 3, clusters=7) == 7 * 8  # more clusters than rows, exactly as asked
    assert wide.launch_grid(p, 100, 40, clusters=3) == 3 * 8  # clusters wins over active_clusters
    with pytest.raises(ValueError, match=r"needs active_clusters \(cuOccupancyMaxActiveClusters\) or clusters"):
        wide.launch_grid(p, 10)
    with pytest.raises(ValueError, match=r"active_clusters must be >= 1"):
        wide.launch_grid(p, 10, 0)
    with pytest.raises(ValueError, match=r"clusters must be >= 1 for the persistent grid, got 0"):
        wide.launch_grid(p, 10, clusters=0)
    with pytest.raises(ValueError, match=r"clusters=4 is for the persistent modes"):
        wide.launch_grid(m1, 10, clusters=4)
    with pytest.raises(ValueError, match=r"M must be >= 0, got -1"):
        wide.launch_grid(m1, -1)
    with pytest.raises(TypeError, match=r"M"):
        wide.launch_grid(m1, 2.5)
    with pytest.raises(ValueError, match=r"exceeds gridDim.x"):
        wide.launch_grid(m1, 2**28)
    with pytest.raises(ValueError, match=r"mode one of \(0, 1, 2, 3, 4, 5, 7, 8, 9\)"):
        wide.config(65536, "float16", H100, shape=(8, 256, 32, 6))


def test_persistent_rows_each_once():
    """The persistent loop (row = k; row < M; row += G) gives every row to exactly one cluster,
    for M a multiple of G or not, and M below G (idle clusters)."""
    for M in (0, 1, 3, 7, 64, 1000, 1001):
        for G in (1, 2, 3, 7, 33, 132, 2000):
            rows = [r for k in range(G) for r in wide.rows_of_cluster(k, M, G)]
            assert sorted(rows) == list(range(M)), (M, G)
            if M < G:
                assert not list(wide.rows_of_cluster(M, M, G))


def test_reduction_order_depends_on_the_shape_not_the_mode_or_grid():
    """A row's summation order is (N, vec, cluster, threads, ept): the same for every mode at a
    shape (so PERSIST / PERSIST_1 / MBAR must give mode 1's bits: the GPU test checks it), and
    no function that decides it takes M or the grid."""
    import inspect

    assert [p for p in inspect.signature(wide.reduction_order).parameters] == ["cfg", "n"]
    for dt in DTS:
        for gate in (False, True):
            for n in WIDE_NS + (40000,):
                for cfg in _new_configs(n, dt, gate):
                    twin = wide.config(n, dt, H100, gate=gate, shape=(cfg.cluster, cfg.threads, cfg.ept, wide.SMEM))
                    assert wide.reduction_order(cfg, n) == wide.reduction_order(twin, n)
                    assert wide.reduction_order(cfg, n)[1] == n
    a = wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.PERSIST))
    b = wide.config(65536, "float16", H100, shape=(4, 256, 64, wide.PERSIST))
    assert wide.reduction_order(a, 65536) != wide.reduction_order(b, 65536)  # another tree
    with pytest.raises(ValueError, match=r"n=70000 does not fit"):
        wide.reduction_order(a, 70000)


def _exchange_hazards(sets, cluster=4, rows=5, trials=400, seed=0):
    """A model of the persistent exchange (kernels/rmsnorm_wide.cu, cluster_rows_persistent): each
    CTA, per row iteration i, sends its sum to slot set i % sets of every CTA (st.async: lands
    later, in any order), waits until all `cluster` sums of iteration i have landed in it, reads
    them, and goes on to i + 1.  Random interleavings; returns how many sends landed in a slot
    set its CTA had not yet read for an earlier iteration (the overwrite the kernel must not
    allow; it also means a phase completed early)."""
    import random

    rng = random.Random(seed)
    hazards = 0
    for _ in range(trials):
        it = [0] * cluster
        step = ["send"] * cluster
        landed = {}  # (cta, iteration) -> sums landed
        flying = []  # (dst, iteration)
        while True:
            moves = [("deliver", k) for k in range(len(flying))]
            for c in range(cluster):
                if it[c] >= rows:
                    continue
                if step[c] == "send" or (step[c] == "wait" and landed.get((c, it[c]), 0) == cluster):
                    moves.append((step[c], c))
            if not moves:
                break
            kind, a = rng.choice(moves)
            if kind == "deliver":
                dst, i = flying.pop(a)
                if any(j % sets == i % sets and j >= it[dst] for j in range(i)):  # an unread earlier use
                    hazards += 1
                landed[(dst, i)] = landed.get((dst, i), 0) + 1
            elif kind == "send":
                flying += [(d, it[a]) for d in range(cluster)]
                step[a] = "wait"
            else:  # the wait returned: read the slots, next row
                it[a] += 1
                step[a] = "send"
        assert all(i == rows for i in it), "the model deadlocked"
    return hazards


def test_two_slot_sets_make_the_persistent_exchange_safe():
    """The kernel's two slot sets (and mbarriers): no interleaving lets a sum land in a set that
    is still unread.  One set is not enough, and the model finds that (so it can fail)."""
    assert _exchange_hazards(sets=2) == 0
    assert _exchange_hazards(sets=2, cluster=16, rows=4, trials=100, seed=1) == 0
    assert _exchange_hazards(sets=1) > 0


def test_new_modes_build_on_every_arch():
    """sm_90: no spills, registers within the __launch_bounds__ cap, static shared memory only the
    small arrays (warp totals, two slot sets, mbarriers) up to the dynamic window's 128 bytes;
    before sm_90 the same options compile to the trap.  (The full list: benchmarks/explore/2026-12-02-wide-persistent/ptxas-sm90-new-modes.txt.)"""
    _need_nvcc()
    cfgs = []
    for mode in NEW_MODES:
        for dt, gate, n, wdt in (("float16", True, 65536, "float32"), ("float32", True, 262144, None),
                                 ("bfloat16", False, 131072, None), ("float32", False, 32768, None)):
            cfgs += _new_configs(n, dt, gate, wdt, modes=(mode,))[:1]
    assert {c.mode for c in cfgs} == set(NEW_MODES) and len(cfgs) >= 10
    for cfg in cfgs:
        (u,) = kernels.nvcc_compile(wide.FILE, "sm_90", cfg.options)
        assert u.kernel == cfg.kernel and u.spill_stores_bytes == 0 and u.spill_loads_bytes == 0, u
        assert u.stack_frame_bytes == 0 and u.registers <= wide.SM_REGISTERS // (cfg.threads * cfg.min_blocks), u
        static = 4 * 2 * (cfg.threads // 32 + cfg.cluster) + 16
        assert u.shared_bytes <= _window_start(static) and u.shared_bytes % SMEM_ALIGN == 0, u
    for arch in ("sm_75", "sm_80", "sm_89"):
        for cfg in cfgs[::4]:
            (u,) = kernels.nvcc_compile(wide.FILE, arch, cfg.options)
            assert u.kernel == cfg.kernel and u.spill_stores_bytes == 0


@pytest.mark.gpu
@pytest.mark.parametrize("mode", NEW_MODES, ids=("persist", "persist1", "mbar"))
@pytest.mark.parametrize("N", WIDE_NS + (40000,))
@pytest.mark.parametrize("gate", (False, True), ids=("rmsnorm", "gate"))
@pytest.mark.parametrize("dt", DTS)
def test_new_modes_against_float64_and_batch_invariant(dt, gate, N, mode, seed):
    """At the (cluster, threads, ept) NEW_CANDIDATES are built around (the policy's before the ring
    runs) in the new mode: float64 on fresh data with NaN-poisoned output, mode 1's bits at the
    same shape, rows of op(x[:m]) bit-identical to op(x)'s at m in 1, 3, 64, 1000 (M = 1003: not a
    multiple of any cluster count the GPU holds)."""
    _needs_clusters()
    op, size = ("rmsnorm_gate" if gate else "rmsnorm"), DTYPES[dt][1]
    base = wide._PERSIST_RUN_SHAPES[op][size][min(b for b in wide._PERSIST_RUN_SHAPES[op][size] if b >= N)]
    cfgs = [c for c in _new_configs(N, dt, gate, modes=(mode,)) if (c.cluster, c.threads, c.ept) == base]
    if not cfgs:
        pytest.skip(f"no {mode} candidate for {dt} {'gate' if gate else 'rmsnorm'} N={N} (shared memory)")
    cfg = cfgs[0]
    shape = (cfg.cluster, cfg.threads, cfg.ept, cfg.mode)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    M = 1003
    x, g, w = _inputs(M, N, dt, gen, gate)
    out, rstd = _run(x, w, g, shape=shape)
    torch.cuda.synchronize()
    _check(out, rstd, x, w, g, 1e-6, 0.0, seed)
    ref, ref_rstd = _run(x, w, g, shape=shape[:3] + (wide.SMEM,))
    assert _same_bits(out, ref) and torch.equal(rstd, ref_rstd), f"{cfg.kernel} differs from mode 1's bits"
    for m in (1, 3, 64, 1000):
        part, prstd = _run(x[:m].contiguous(), w, g[:m].contiguous() if gate else None, shape=shape)
        assert _same_bits(part, out[:m]), f"rows of forward(x[:{m}]) differ from forward(x)'s ({cfg.kernel})"
        assert torch.equal(prstd, rstd[:m])


@pytest.mark.gpu
@pytest.mark.parametrize("case", (("float16", False, 65536, wide.PERSIST, None),
                                  ("float32", True, 262144, wide.PERSIST_1, None),
                                  ("bfloat16", True, 131072, wide.PERSIST, "float32"),
                                  ("float32", False, 40000, wide.PERSIST_1, None)),
                         ids=("f16-persist", "f32-gate-persist1", "bf16-w32-gate-persist", "f32-40000-persist1"))
def test_persistent_grid_sizes(case, seed):
    """The persistent grid at several cluster counts -- 1 (one cluster does every row: both slot
    sets reused many times), M not a multiple of it, M - 1, M, more clusters than rows (idle
    clusters) and the driver's count: the same bits everywhere, float64 on fresh data."""
    _needs_clusters()
    dt, gate, N, mode, wdt = case
    cfg = _new_configs(N, dt, gate, wdt, modes=(mode,))[0]
    shape = (cfg.cluster, cfg.threads, cfg.ept, cfg.mode)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    M = 37
    x, g, w = _inputs(M, N, dt, gen, gate, wdt=wdt)
    out, rstd = _run(x, w, g, shape=shape)  # the driver's cluster count
    torch.cuda.synchronize()
    _check(out, rstd, x, w, g, 1e-6, 0.0, seed)
    assert wide.max_active_clusters(cfg) >= 1
    for G in (1, 2, 5, M - 1, M, M + 27):
        o = torch.full_like(x, float("nan"))
        r = wide.forward(x, w, 1e-6, o, gate=g, shape=shape, clusters=G)
        torch.cuda.synchronize()
        assert _same_bits(o, out) and torch.equal(r, rstd), f"{cfg.kernel} with {G} clusters differs"


@pytest.mark.gpu
@pytest.mark.parametrize("dt", DTS)
def test_new_candidates_agree_with_float64(dt, seed):
    """Every NEW_CANDIDATES shape (QuACK's included), both ops, on 5 rows."""
    _needs_clusters()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    size = DTYPES[dt][1]
    for N in WIDE_NS:
        x, g, w = _inputs(5, N, dt, gen, True)
        for op, gg in (("rmsnorm", None), ("rmsnorm_gate", g)):
            for shape in wide.NEW_CANDIDATES[op][size][N]:
                out, rstd = _run(x, w, gg, shape=shape)
                torch.cuda.synchronize()
                _check(out, rstd, x, w, gg, 1e-6, 0.0, seed)


def test_sanitizer_cases_are_launchable():
    """scripts/sanitize/rmsnorm_wide.py's cases (every configuration the policy dispatches, and
    --new's: every mode 3-5, a persistent grid smaller and larger than M) are configurations
    forward() accepts."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "sanitize" / "rmsnorm_wide.py"
    spec = importlib.util.spec_from_file_location("sanitize_rmsnorm_wide", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    new = mod.new_cases(wide)
    assert {sh[3] for *_, sh, _, _ in new} == set(NEW_MODES + RING_AND_HYBRID)
    assert any(cl is not None and cl < M for _, _, _, M, _, cl, _ in new)  # clusters loop over rows
    assert any(cl is not None and cl > M for _, _, _, M, _, cl, _ in new)  # idle clusters
    assert {kw.get("ring") for *_, kw in new} >= {1, 3, 4, 8}  # ring depths around a row's chunks
    assert any(sh[3] == wide.RING and wdt != dt for dt, wdt, _, _, sh, _, _ in new)  # mode 7, an fp32 weight
    assert all(c in mod.cases(wide) for c in new)
    late = [c for c in new if c[6].get("gate_late")]  # the gate read in the last step, 16-bit and fp32
    assert {dt for dt, *_ in late} == {"float16", "bfloat16", "float32"}
    assert any(wdt != dt for dt, wdt, *_ in late)
    seen = set()
    for dt, wdt, N, M, shape, clusters, kw in mod.cases(wide):
        for gate in (False, True):
            cfg = wide.config(N, dt, H100, gate=gate, weight_dtype=wdt, shape=shape, **mod.case_options(kw, gate))
            if "gate_late" in kw:
                assert cfg.gate_late == (gate and kw["gate_late"])
            seen.add(cfg.kernel)
            if cfg.persistent:
                assert wide.launch_grid(cfg, M, wide.estimate_active_clusters(cfg), clusters) >= cfg.cluster
    policy = {c.kernel for c in wide.configs_in_use(dtypes=("float16", "float32")) if c.weight_dtype == c.dtype}
    assert policy <= seen, sorted(policy - seen)


def _explore_script():
    import importlib.util
    from pathlib import Path

    path = (Path(__file__).resolve().parents[1] / "benchmarks" / "explore" / "2026-12-02-wide-persistent"
            / "persist_bench.py")
    spec = importlib.util.spec_from_file_location("persist_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_explore_plan_covers_every_mode_within_one_device_call(capsys):
    """benchmarks/explore/2026-12-02-wide-persistent: every mode 0-5 at every wide N, dtype and op
    (PERSIST only where it fits), every configuration valid, and the estimate (its stated
    assumptions) plus the sanitizer's 70 s within the 240 s of one device call."""
    pb = _explore_script()
    p = pb.plan()
    assert len(p) == 4 * 3 * 2 + 2
    for M, N, dt, op, shapes in p:
        modes = {sh[3] for sh in shapes}
        policy_mode = wide.POLICY[op][DTYPES[dt][1]][65536][3]  # 40000: the policy's shape, then 3-5
        want = set(wide.MODES[:6]) if N != 40000 else {policy_mode, wide.PERSIST, wide.PERSIST_1, wide.MBAR}
        if (op, dt, N) == ("rmsnorm_gate", "float32", 262144):
            want -= {wide.PERSIST}
        assert modes == want, (op, dt, N, modes)
        assert pb.fewest_bytes(op, M, N, dt) > 10 * 60 * 2**20  # ten H200 L2s: a bandwidth, not an L2 claim
    cfgs = pb.configs(p)
    assert len(cfgs) == len({c.kernel for c in cfgs}) > 200
    est = pb.estimate(p, reps=25)
    assert est["configurations"] == sum(len(s) for *_, s in p)
    assert est["total_s"] + 30 + 40 + 10 <= 240, est
    assert pb.main(["--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "estimated bench time" in printed and "c16_t512_e32_m4" in printed
    with pytest.raises(SystemExit):
        pb.main(["--dry-run", "--reps", "5"])


def test_explore_policy_proposal_takes_the_least_summed_median():
    pb = _explore_script()
    rows = [dict(op="rmsnorm", impl="wide_c8_t256_e32_m1", N=65536, dtype="float16", median_us=600.0),
            dict(op="rmsnorm", impl="wide_c8_t256_e32_m1", N=65536, dtype="bfloat16", median_us=600.0),
            dict(op="rmsnorm", impl="wide_c8_t256_e32_m3", N=65536, dtype="float16", median_us=550.0),
            dict(op="rmsnorm", impl="wide_c8_t256_e32_m3", N=65536, dtype="bfloat16", median_us=560.0),
            dict(op="rmsnorm", impl="wide_c4_t256_e64_m5", N=65536, dtype="float16", median_us=500.0),  # bf16 missing
            dict(op="rmsnorm", impl="wide_c8_t256_e32_m3", N=40000, dtype="float16", median_us=1.0)]
    assert pb.propose_policy(rows) == {"rmsnorm": {2: {65536: [8, 256, 32, 3]}}}
    failed = [dict(op="rmsnorm", impl="wide_c8_t256_e32_m3", N=65536, dtype="bfloat16", reason="x")]
    assert pb.propose_policy(rows, failed) == {"rmsnorm": {2: {65536: [8, 256, 32, 1]}}}


# ---------------------------------------------------------------------------------------
# RING / RING_L2 (modes 7, 8: persistent, the row in registers, a ring of copies in flight) and
# HYBRID (mode 9: half the chunks in registers, half in shared memory).  CPU: configuration,
# shared memory, names, refusals, the build.  GPU: float64, mode 1's (or 0's) bits at the same
# shape, batch invariance, persistent grids, rows shorter than the configuration.

RING_AND_HYBRID = (wide.RING, wide.RING_L2, wide.HYBRID)


def test_ring_and_hybrid_configuration(monkeypatch):
    R, RL, H = RING_AND_HYBRID
    c = wide.config(262144, "float32", H100, gate=True, shape=(8, 1024, 32, R), ring=3)
    assert c.persistent and c.kernel == "rmsnorm_gate_cluster_f32_wf32_c8_t1024_e32_m7_r3"
    assert c.smem_bytes == 3 * 1024 * 16 * 2 + 1024 * 32 * 4 == 229376 and c.min_blocks == 1
    assert "-DWIDE_RING=3" in c.options
    c = wide.config(65536, "bfloat16", H100, weight_dtype="float32", shape=(4, 512, 32, RL), ring=5)
    assert c.smem_bytes == 5 * 512 * 16 and c.kernel.endswith("_wf32_c4_t512_e32_m8_r5") and c.min_blocks == 2
    h = wide.config(262144, "float16", H100, shape=(4, 512, 128, H))
    assert (h.hreg, h.wdist) == (8, 1) and not h.persistent  # half of 16 chunks
    assert h.smem_bytes == 512 * 64 * 2 and h.min_blocks == 2 and h.kernel.endswith("_m9_h8_d1")
    h = wide.config(131072, "float32", H100, gate=True, shape=(4, 512, 64, H), hreg=4, wdist=4)
    assert h.smem_bytes == 512 * (64 - 16) * 4 * 2 and ("-DWIDE_HREG=4", "-DWIDE_WDIST=4") == h.options[-2:]
    # the policy's entries carry their depth / split (no POLICY entry is RING since the late-gate
    # run: an entry put there carries its depth)
    f = wide.config(262144, "float32", H100, gate=True)
    assert f.mode == H and f.gate_late and (f.hreg, f.wdist, f.min_blocks) == wide.POLICY_HYBRID["rmsnorm_gate"][4][262144]
    assert f.smem_bytes == 512 * (64 - 16) * 4 and "-DWIDE_GLATE=1" in f.options
    monkeypatch.setitem(wide.POLICY["rmsnorm_gate"][4], 262144, (8, 1024, 32, R))
    monkeypatch.setitem(wide.POLICY_RING["rmsnorm_gate"][4], 262144, 3)
    monkeypatch.setitem(wide.POLICY_GATE_LATE, 4, ())
    monkeypatch.delitem(wide.POLICY_HYBRID["rmsnorm_gate"][4], 262144)
    assert wide.config(262144, "float32", H100, gate=True).ring == 3
    monkeypatch.undo()
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
            (f16, dict(shape=(8, 256, 32, R)), ValueError, r"mode 7 \(RING / RING_L2\) needs ring"),
            (f16, dict(shape=(8, 256, 32, R), ring=17), ValueError, r"ring=17: the ring takes 1 to 16"),
            (f16, dict(shape=(8, 256, 32, wide.MBAR), ring=2), ValueError, r"ring=2 with mode 5"),
            (f16, dict(shape=(8, 256, 32, R), ring=2.0), TypeError, r"ring must be an int"),
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
            (f32, dict(gate=True, shape=(8, 1024, 32, R), ring=4), ValueError, r"bytes of shared memory per CTA")):
        with pytest.raises(exc, match=msg):
            wide.config(*args, **kw)
    with pytest.raises(ValueError, match=r"needs ring >= 1 chunk slots, got 0"):
        wide.smem_bytes_of("rmsnorm", 2, 2, (8, 256, 32, R))
    # registers: the launch bound the estimate gives (ptxas checks the real count: the build test)
    assert wide.min_blocks("rmsnorm", 2, 2, 512, 128, H, 65536, hreg=8, wdist=1) == 2  # 32 + 32 a thread
    assert wide.min_blocks("rmsnorm", 4, 4, 512, 64, H, 98304, hreg=4, wdist=4) == 2  # 16 + 12 + 32
    assert wide.min_blocks("rmsnorm", 2, 2, 512, 128, H, 65536, hreg=8, wdist=2) == 1  # a second weight pack
    assert wide.min_blocks("rmsnorm_gate", 4, 4, 256, 64, H, 16384, hreg=12, wdist=16) == 1  # x, g packs: 96
    assert wide.min_blocks("rmsnorm_gate", 4, 4, 1024, 32, R, 229376) == 1
    assert wide.min_blocks("rmsnorm", 2, 2, 256, 32, R, 28672) == 5  # 16 + 32 a thread, 256 threads
    assert wide.reduction_order(c, 65536) == wide.reduction_order(
        wide.config(65536, "bfloat16", H100, shape=(4, 512, 32, wide.SMEM)), 65536)


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


def test_ring_and_hybrid_build_on_every_arch():
    """The policy's RING / HYBRID kernels and a spread of depths: sm_90 without spills and within
    the launch bound's registers; before sm_90 the trap."""
    _need_nvcc()
    cfgs = [c for c in wide.configs_in_use() if c.mode in RING_AND_HYBRID]
    assert {c.mode for c in cfgs} >= {wide.HYBRID} and any(c.gate_late for c in cfgs)
    cfgs += [wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.RING_L2), ring=8),
             wide.config(262144, "float32", H100, gate=True, shape=(8, 1024, 32, wide.RING), ring=3),
             wide.config(131072, "bfloat16", H100, gate=True, shape=(4, 512, 64, wide.HYBRID), hreg=2, wdist=4),
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


def test_ring_runs_propose_what_the_policy_took():
    """The three ring runs, the two occupancy runs, the late-gate run, the 262144 run after the
    128-byte shared-memory window and the 16-bit gate's run after it timed every candidate after
    checking it (no failures); their proposals are the points the policy moved to RING / HYBRID,
    and no other: the late-gate run's replace the ring run's RING for the fp32 gate at 262144 (now
    HYBRID reading g in the last step), the split2 run's (8, 1024, 32) for rmsnorm at 262144 (every
    dtype) the occupancy runs' 16-bit and the ring runs' fp32 shapes (its SPLIT rows, modes 10-12,
    since removed, lost), and the gate16 run's (8, 1024, 32) for the 16-bit gate at 262144 the
    policy's SMEM kernel (which the late-gate run had kept)."""
    prop, _ = _ring_proposals()
    H = wide.HYBRID
    assert set(prop) == {("rmsnorm", 2, 65536), ("rmsnorm", 2, 262144), ("rmsnorm", 4, 131072),
                         ("rmsnorm", 4, 262144), ("rmsnorm_gate", 2, 131072), ("rmsnorm_gate", 2, 262144),
                         ("rmsnorm_gate", 4, 262144)}
    assert prop[("rmsnorm_gate", 4, 262144)] == ((8, 512, 64, H), (4, 2, 2, True))
    assert prop[("rmsnorm", 2, 262144)] == ((8, 1024, 32, H), (2, 1, 2, False))
    assert prop[("rmsnorm", 4, 262144)] == ((8, 1024, 32, H), (2, 1, 2, False))
    assert prop[("rmsnorm_gate", 2, 131072)] == ((8, 1024, 16, H), (1, 1, 2, False))
    # the 16-bit gate at 262144: reading g late ran fastest in fp16 (93.3 % of copy) but spills in
    # bf16, so it is not a candidate of both dtypes; g read with x, one chunk in registers, wins summed
    assert prop[("rmsnorm_gate", 2, 262144)] == ((8, 1024, 32, H), (1, 1, 2, False))


_RING_CASES = (("bfloat16", False, 65536, (8, 256, 32, wide.RING), dict(ring=4, wdt="float32", offset=1.0)),
               ("float16", True, 65536, (4, 512, 32, wide.RING_L2), dict(ring=2, wdt="float32", offset=1.0)),
               ("float16", False, 262144, None, None), ("bfloat16", False, 200000, None, None),
               ("float32", False, 131072, None, None), ("float32", True, 262144, None, None),
               ("float32", True, 200000, None, None), ("float16", True, 65536, (8, 256, 32, wide.RING), dict(ring=3)),
               ("bfloat16", False, 40000, (8, 256, 32, wide.RING_L2), dict(ring=8)),
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
@pytest.mark.parametrize("case", _RING_CASES, ids=lambda c: f"{c[0]}-{'gate' if c[1] else 'rms'}-{c[2]}"
                         f"-{'policy' if c[3] is None else c[3][3]}" + ("-wf32" if (c[4] or {}).get("wdt") else "")
                         + ("-late" if (c[4] or {}).get("gate_late") else ""))
def test_ring_and_hybrid_against_float64_and_batch_invariant(case, seed):
    """float64 on fresh data with NaN-poisoned output (N below the bucket included: vectors past
    N idle), mode 1's bits (mode 0's where mode 1's shared memory does not fit) at the same
    (cluster, threads, ept), rows of op(x[:m]) bit-identical to op(x)'s, and for the persistent
    RING every cluster count (1, 5, M, M + 9) the same bits."""
    _needs_clusters()
    dt, gate, N, shape, kw = case
    kw = dict(kw or {})
    wdt, offset = kw.pop("wdt", None), kw.pop("offset", 0.0)
    cfg = wide.config(N, dt, H100, gate=gate, shape=shape, weight_dtype=wdt, **kw)
    assert cfg.mode in RING_AND_HYBRID
    shape = (cfg.cluster, cfg.threads, cfg.ept, cfg.mode)
    kw = dict(blocks=cfg.min_blocks, **(dict(ring=cfg.ring) if cfg.mode in wide.RING_MODES else dict(
        hreg=cfg.hreg, wdist=cfg.wdist, gate_late=cfg.gate_late)))
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
    if cfg.persistent:
        for G in (1, 5, M, M + 9):
            o = torch.full_like(x, float("nan"))
            r = wide.forward(x, w, 1e-6, o, gate=g, weight_offset=offset, shape=shape, clusters=G, **kw)
            torch.cuda.synchronize()
            assert _same_bits(o, out) and torch.equal(r, rstd), f"{cfg.kernel} with {G} clusters differs"


@pytest.mark.gpu
@pytest.mark.parametrize("dt,gate,N", [("float16", False, 65536), ("float32", False, 262144),
                                       ("float32", True, 262144)])
def test_phase_stamps_are_each_ctas_own_and_change_no_bit(dt, gate, N, seed):
    """The explorations' WIDE_PHASES build of a HYBRID policy kernel (benchmarks/explore/
    2026-12-02-wide-wsmem/phases.py reads it): every CTA of the grid stamps its start, CTA sum,
    rstd and last store in that order, on both clocks, from an SM the GPU has; the CTAs of one
    cluster share the row's exchange (none leaves it before the last one reached it); and y and
    rstd keep the launcher's kernel's bits."""
    import numpy as np

    cupy = pytest.importorskip("cupy")
    _needs_clusters()
    cfg = wide.config(N, dt, H100, gate=gate)
    assert cfg.mode == wide.HYBRID
    gen = torch.Generator(device="cuda").manual_seed(seed)
    M = 37
    x, g, w = _inputs(M, N, dt, gen, gate)
    ref, ref_rstd = _run(x, w, g)
    phases = ("-DWIDE_PHASES=1",)
    dev = torch.cuda.current_device()
    k = wide._kernel(cfg, dev, phases)
    log = cupy.ndarray((M * cfg.cluster, 10), cupy.uint64,
                       kernels.load(wide.FILE, cfg.options + phases).get_global("wide_phase_log"))
    log.fill(0)
    cupy.cuda.Device().synchronize()
    out, rstd = torch.full_like(x, float("nan")), torch.full((M,), float("nan"), device="cuda")
    ptr = lambda a: np.uint64(a.data_ptr() if a is not None else 0)  # noqa: E731
    wide._launch(k, wide.launch_grid(cfg, M), cfg, (ptr(out), ptr(rstd), ptr(x), ptr(g), ptr(w), np.int32(N),
                                                   np.float32(1e-6), np.float32(0.0), np.int64(M)), "torch", dev)
    torch.cuda.synchronize()
    assert _same_bits(out, ref) and torch.equal(rstd, ref_rstd), "the stamps changed the result"
    L = cupy.asnumpy(log).astype(np.int64)
    gt, clk, sm = L[:, 0:4], L[:, 4:8], L[:, 8]
    assert (gt[:, 0] > 0).all() and (np.diff(gt, axis=1) >= 0).all(), "globaltimer stamps out of order"
    assert (np.diff(clk, axis=1) >= 0).all(), "clock64 stamps out of order"
    assert sm.max() < torch.cuda.get_device_properties(0).multi_processor_count
    rows = gt.reshape(M, cfg.cluster, 4)
    assert (rows[:, :, 2].min(1) >= rows[:, :, 1].max(1)).all(), "a CTA had its rstd before the cluster's sums"


# ---------------------------------------------------------------------------------------
# The weight's loads in the store step (WIDE_WLOAD) and the launch bound the policy names with
# them (POLICY_LOADS).  CPU: the table is the recorded run's choice, configuration and refusals,
# the SASS order of the loads.  GPU: every such policy kernel gives the chunked kernel's bits.

def _weight_run():
    import json
    from pathlib import Path

    path = (Path(__file__).resolve().parents[1] / "benchmarks" / "explore" / "2026-12-02-wide-weight" / "run1"
            / "weight-record.json")
    return json.loads(path.read_text())


def test_policy_loads_are_the_recorded_runs_choice():
    """For every POLICY entry of mode SMEM or MBAR: the variant of its shape with the least summed
    median over the dtypes of its element size (a = a chunk at a time, b = batched, c = with x,
    c2 = c at the threads' launch bound) in explore/2026-12-02-wide-weight/run1, as POLICY_LOADS
    has it; every variant there was checked (no failures) before it was timed."""
    rec = _weight_run()
    assert not rec["failures"] and not rec["skipped"]
    want = {}
    for op in wide.OPS:
        for size, table in wide.POLICY[op].items():
            for n, shape in table.items():
                if shape[3] not in wide.WLOAD_MODES:
                    continue
                dts = [d for d in DTS if DTYPES[d][1] == size]
                tag_shape = f"{shape[0]}x{shape[1]}x{shape[2]}m{shape[3]}"
                sums = {}
                for r in rec["rows"]:
                    tag, _, sh = r["impl"].partition(":")
                    if r["op"] == op and r["N"] == n and r["dtype"] in dts and sh == tag_shape and tag != "policy":
                        sums.setdefault(tag, []).append(r["median_us"])
                sums = {t: sum(v) for t, v in sums.items() if len(v) == len(dts)}
                assert set(sums) >= {"a", "b", "c"}, (op, size, n, sums)
                best = min(sums, key=sums.get)
                most = wide.sm_holds(shape[1], wide.smem_bytes_of(op, size, size, shape))
                choice = {"a": None, "b": (wide.WLOAD_BATCH, None), "c": (wide.WLOAD_EARLY, None),
                          "c2": (wide.WLOAD_EARLY, most)}[best]
                if choice is not None:
                    want.setdefault(op, {}).setdefault(size, {})[n] = choice
    assert wide.POLICY_LOADS == want


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
    with pytest.raises(ValueError, match=r"wload=2 with mode 3: .* SMEM \(1\) and MBAR \(5\) only"):
        wide.config(65536, "float16", H100, shape=(8, 256, 32, wide.PERSIST), wload=2)
    with pytest.raises(ValueError, match=r"wload=7: the weight loads are WLOAD_CHUNK \(0"):
        wide.config(65536, "float16", H100, wload=7)
    for bad in (True, 1.0, "1"):  # an int, not a bool / float / string (-DWIDE_WLOAD=True would not build)
        with pytest.raises(TypeError, match=r"wload must be an int"):
            wide.config(65536, "float16", H100, wload=bad)
    with pytest.raises(ValueError, match=r"shape must be \(cluster, threads, ept, mode\), 4 ints"):
        wide.config(65536, "float16", H100, shape=(8, 256, 32))
    with pytest.raises(ValueError, match=r"blocks=2 .* an SM holds only 1 of its CTAs"):
        wide.config(262144, "float32", H100, shape=(16, 512, 32, wide.PERSIST), blocks=2)

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
