"""The fused ops: RMSNorm / RMSNorm + SiLU gate (kernels/rmsnorm_fused.cu), public as gpu_viz.ops,
implemented in gpu_viz.rmsnorm.fused.

CPU part: argument checks, the launch-config chooser for every N in 1..70000, the nvcc build
(sm_75 / sm_89 / sm_90, no spills, the launcher's -D options), the plain and extended-output (_x)
builds and which one the host launches, the fake (meta) kernels, the float64 reference and the
fp32 backward formula, the public names of gpu_viz.ops, and that the package holds one float64
RMSNorm reference and one tolerance table.  GPU part (``-m gpu``):
hypothesis shapes, dtypes, row strides and misaligned views against float64 with NaN-poisoned
outputs, every defect of the seed write-up, streams (torch and CuPy), torch.compile(fullgraph=True),
CUDA-graph capture, gradients.  Every comparison: gpu_viz.check with the one tolerance table
(gpu_viz.rmsnorm.tolerances).
"""
from __future__ import annotations

import ast
import math
import os
from pathlib import Path

import numpy as np

import pytest

torch = pytest.importorskip("torch")

from gpu_viz import backend, check, ops  # noqa: E402
from gpu_viz.rmsnorm.fused import checks as fchecks, config as fconfig, autograd as fgrad, launch as flaunch, names as fnames, op as fop
from gpu_viz.rmsnorm import reference  # noqa: E402
from gpu_viz.rmsnorm.dtypes import torch_dtype  # noqa: E402
from gpu_viz.rmsnorm.tolerances import tolerance  # noqa: E402

DTYPES = ("float32", "float16", "bfloat16")
TORCH_DTYPE = {name: torch_dtype(name) for name in DTYPES}


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
    # a weight is x's dtype or float32 (HF's fp32 weights with bf16/fp16 x); not a third one
    with pytest.raises(TypeError, match=r"weight has dtype float16; expected x's dtype \(float32\) or float32"):
        ops.rmsnorm(x, w.half())
    with pytest.raises(TypeError, match=r"weight has dtype bfloat16; expected x's dtype \(float16\) or float32"):
        ops.rmsnorm(x.half(), w.bfloat16())
    with pytest.raises(TypeError, match=r"gate has dtype bfloat16 but x has float32"):
        ops.rmsnorm_gate(x, x.bfloat16(), w)
    with pytest.raises(TypeError, match=r"residual has dtype float16 but x has float32"):
        ops.rmsnorm_add(x, x.half(), w)


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
                                      (float("inf"), ValueError), (1e39, ValueError), (True, TypeError),
                                      ("1e-6", TypeError), (None, TypeError)])
def test_eps_checked(eps, err):
    """Every op (and the float64 references) refuses an eps its float32 kernel argument cannot hold:
    1e39 is finite in float64 but inf in float32, where y would come out all zeros."""
    x, w = _xw()
    for call in (lambda: ops.rmsnorm(x, w, eps), lambda: ops.rmsnorm_gate(x, x, w, eps),
                 lambda: ops.reference_rmsnorm(x, w, eps)):
        with pytest.raises(err, match="eps must be"):
            call()


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


def _one_vector_block(N: int, vec: int) -> bool:
    """Whether a block of one 16-byte vector per thread holds a row of N."""
    return vec in fnames.EPT_CHOICES and _threads(N, vec, vec) <= min(fnames.BLOCK_TARGET_THREADS,
                                                                      fnames.BLOCK_MAX_THREADS[vec])


def _assert_warp(cfg: ops.LaunchConfig, M: int, N: int):
    """A warp per row: the row fits the warp's registers, whole blocks of rows cover M."""
    assert N <= (fnames.WARP_ROW_MAX_N_VECTOR if cfg.vec > 1 else fnames.WARP_ROW_MAX_N)
    assert cfg.block == 32 * fnames.WARP_ROWS_PER_BLOCK
    assert cfg.capacity == 32 * cfg.ept >= N
    assert cfg.grid * cfg.rows_per_block >= M > (cfg.grid - 1) * cfg.rows_per_block or M == cfg.grid == 0


def _assert_block_threads(cfg: ops.LaunchConfig, M: int, N: int):
    """A block per row: every vector of the row has a thread, and no whole warp idles (or, with
    several vectors a thread, a power-of-two count of warps: the one-vector block's sum order)."""
    assert 32 <= cfg.block <= fnames.BLOCK_MAX_THREADS[cfg.ept] and cfg.block % 32 == 0
    chunks = cfg.ept // cfg.vec
    assert cfg.block * chunks * cfg.vec >= N
    if chunks > 1 and _one_vector_block(N, cfg.vec):
        nwarps = cfg.block // 32
        assert nwarps & (nwarps - 1) == 0 and (cfg.block // 2) * chunks * cfg.vec < N
    else:
        assert (cfg.block - 32) * chunks * cfg.vec < N
    assert cfg.grid == M


def _assert_block_ept(cfg: ops.LaunchConfig, N: int, fits_l2: bool):
    """The elements a thread of a block per row holds: the scalar path's set; one 16-byte vector
    for short rows or in L2 where such a block exists; else >= 32 bytes in flight per thread in
    <= 512 threads, the smallest such EPT."""
    if cfg.vec == 1:
        assert cfg.ept in fnames.SCALAR_BLOCK_EPT
        return
    size = ops.DTYPES[cfg.dtype][1]
    inputs = 2 if cfg.op == "rmsnorm_gate" else 1  # x (and gate) bytes in flight per thread
    if N * size < fnames.MULTI_VECTOR_ROW_BYTES:
        assert cfg.ept == 8 and cfg.block <= 1024
    elif fits_l2 and _one_vector_block(N, cfg.vec):
        assert cfg.ept == cfg.vec and cfg.block == _threads(N, cfg.vec, cfg.vec)
    else:
        assert cfg.ept * size * inputs >= fnames.MULTI_VECTOR_BYTES_PER_THREAD or N > 512 * cfg.ept
        if N <= 512 * 32:
            assert cfg.block <= fnames.MULTI_VECTOR_TARGET_THREADS
        smaller = [e for e in fnames.EPT_CHOICES
                   if e < cfg.ept and e * size * inputs >= fnames.MULTI_VECTOR_BYTES_PER_THREAD]
        assert all(-(-N // e) > fnames.MULTI_VECTOR_TARGET_THREADS for e in smaller)


def _assert_valid(cfg: ops.LaunchConfig, M: int, N: int, fits_l2: bool = False):
    assert cfg.kernel in _NAMES
    d = _NAMES[cfg.kernel]
    assert (d["variant"], d["vec"], d["ept"]) == (cfg.variant, cfg.vec, cfg.ept)
    assert N % cfg.vec == 0
    if cfg.variant == fnames.WARP:
        _assert_warp(cfg, M, N)
    elif cfg.variant == fnames.BLOCK:
        _assert_block_threads(cfg, M, N)
        _assert_block_ept(cfg, N, fits_l2)
    else:
        assert cfg.variant == fnames.WIDE and cfg.block == fnames.WIDE_THREADS and cfg.grid == M
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
    assert variants == {(v, vec) for v in (fnames.WARP, fnames.BLOCK, fnames.WIDE) for vec in (True, False)}


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
    monkeypatch.setattr(flaunch, "l2_bytes", lambda device: 60 << 20)
    monkeypatch.setattr(fconfig, "fits_current_device", lambda M, N, dtype, gate: fconfig.fits_l2(M, N, dtype, gate, 60 << 20))
    with pytest.raises(ValueError, match=rf"M must be in \[0, {fnames.MAX_GRID_X * fnames.WARP_ROWS_PER_BLOCK}\]"):
        ops.launch_config(-1, 4096, "float16")
    with pytest.raises(ValueError, match=r"N must be in \[1,"):
        ops.launch_config(4, 0, "float16")
    assert ops.launch_config(512, 4096, "float16", gate=True)["ept"] == 8  # fits in 60 MiB


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, gate", [(512, 4096, True), (512, 4096, False), (1024, 8192, True),
                                        (16384, 4096, True), (4, 16384, False)])
def test_launch_config_follows_this_gpus_l2(M, N, gate):
    """launch_config's default is what the op launches here: fits_l2 for this device's L2."""
    l2 = flaunch.l2_bytes(torch.cuda.current_device())
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
        flaunch.l2_bytes(0)


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
        bound = {"warp": 128, "wide": 1024}.get(r["variant"]) or fnames.BLOCK_MAX_THREADS[r["ept"]]
        assert r["registers"] * bound <= 65536, r
        # __launch_bounds__(.., 2 x 1024 / 16 x 128): full occupancy -- not for the misaligned
        # twins (no such bound) nor the fp32-weight builds (8 more floats of weight per chunk;
        # 48 registers on sm_89, 1024 of its 1536 threads per SM)
        if r["vec"] > 1 and r["ept"] == 8 and r["aligned"] and r["weight_dtype"] is None:
            threads_per_sm = {"sm_75": 1024, "sm_89": 1536, "sm_90": 2048}[arch]
            assert -(-r["registers"] // 8) * 8 * threads_per_sm <= 65536, r  # 8-register allocation unit
        assert r["arch"] == arch


# ---------------------------------------------------------------------------------------
# CPU: the output build -- plain kernels hold only T(x * w * r); weight_offset and the llama
# cast run the extended-output twins (_x, -DRMSNORM_OUT_EXT=1), and the host picks them

def _cubin_text_bytes(cubin: bytes) -> dict:
    """SASS bytes of each kernel in an ELF64 cubin (its section ``.text.<kernel>``; 16 bytes an
    instruction from sm_70 on)."""
    import struct

    assert cubin[:4] == b"\x7fELF" and cubin[4] == 2, "not an ELF64 cubin"
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    # section header: name, type, flags, addr, offset, size, link, info, addralign, entsize
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = secs[shstrndx][4]

    def name(off):
        return cubin[names + off:cubin.index(b"\0", names + off)].decode()

    return {name(sec[0])[len(".text."):]: sec[5] for sec in secs if name(sec[0]).startswith(".text.")}


def _nvcc_cubin_and_ptx(arch: str, options, tmp: Path):
    """(cubin bytes, PTX text) of kernels/rmsnorm_fused.cu for ``arch`` with ``options``, from one nvcc."""
    import subprocess

    from gpu_viz import kernels

    tmp.mkdir()
    cmd = [kernels.find_tool("nvcc"), f"-arch={arch}", "-cubin", "-std=c++17", f"-I{kernels.KERNEL_DIR}", *options,
           "-keep", f"-keep-dir={tmp}", "-o", str(tmp / "out.cubin"), str(kernels.kernel_path(fnames.FILE))]
    subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=tmp)
    return (tmp / "out.cubin").read_bytes(), (tmp / "rmsnorm_fused.ptx").read_text()


@pytest.mark.slow
def test_plain_kernels_compile_only_the_plain_output_loop(tmp_path):
    """Bug class: the offset and llama output loops compiled into every kernel (three copies
    behind a uniform branch: 552 sm_90 instructions for rmsnorm_block_f16_v8_e8 against the
    plain path's 360, 2-6 % of kernel time at small in-L2 shapes).  The fp16 module (every op and
    variant) and its _x twin for sm_90: no plain kernel reads its weight_offset argument (the
    branch on it is gone; every _x kernel reads it), and every plain kernel is shorter than its
    twin, the module by at least a fifth."""
    import re
    from concurrent.futures import ThreadPoolExecutor

    from gpu_viz import kernels

    if kernels.find_tool("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    with ThreadPoolExecutor(2) as pool:
        (plain_bin, plain_ptx), (x_bin, x_ptx) = pool.map(
            lambda ext: _nvcc_cubin_and_ptx("sm_90", fnames.compile_options("float16", False, ext),
                                            tmp_path / ("x" if ext else "plain")), (False, True))
    plain_names = [n for n in fnames.kernel_names() if "_f16_" in n and not fnames.describe_kernel(n)["out_ext"]
                   and fnames.describe_kernel(n)["weight_dtype"] is None]
    plain, ext = _cubin_text_bytes(plain_bin), _cubin_text_bytes(x_bin)
    assert sorted(plain) == sorted(plain_names) and sorted(ext) == sorted(n + "_x" for n in plain_names)

    def reads_offset(ptx):  # the kernels whose PTX loads parameter 10, w_offset
        return set(re.findall(r"ld\.param\.f32\s+%f\d+, \[(\w+)_param_10\]", ptx))

    assert reads_offset(plain_ptx) == set(), "plain kernels branch on (or read) weight_offset"
    assert reads_offset(x_ptx) == set(ext), "the _x kernels must read weight_offset (else this check proves nothing)"
    longer = [(n, plain[n] // 16, ext[n + "_x"] // 16) for n in plain_names if plain[n] >= ext[n + "_x"]]
    assert not longer, f"plain kernels as long as their _x twin (instructions): {longer}"
    assert sum(plain.values()) <= 0.8 * sum(ext.values()), (sum(plain.values()) // 16, sum(ext.values()) // 16)


def _cpu_launch_stubs(monkeypatch):
    """Let flaunch.launch / flaunch.plan_for run on CPU torch tensors: a device that says CUDA, an
    sm_89 (no wide-row module), 50 MiB of L2, and a get_kernel / launch that record the kernel
    chosen instead of compiling and launching it.  Returns the list of kernel names asked for."""
    asked = []

    class RK:  # what get_kernel returns: .kernel.ptr is the CUfunction the C++ launcher gets
        def __init__(self, name):
            self.name = name
            self.kernel = type("F", (), {"ptr": fnames.kernel_names().index(name) + 1})

    def get_kernel(name, dtype, device=0):
        asked.append(name)
        return RK(name)

    monkeypatch.setattr(fchecks.Operand, "device", property(lambda o: torch.device("cuda", 0)))
    monkeypatch.setattr(backend, "require_gpu", lambda what: None)
    monkeypatch.setattr(flaunch, "_compute_capability", lambda device: (8, 9))
    monkeypatch.setattr(flaunch, "l2_bytes", lambda device: 50 << 20)
    monkeypatch.setattr(flaunch, "get_kernel", get_kernel)
    monkeypatch.setattr(flaunch, "launch_kernel", lambda kernel, grid, block, args, fw, device: None)
    return asked


#: (weight_offset, cast, whether the call needs the _x kernels).  -0.0 and 1e-50 are 0 as the
#: kernel's float32 argument: the plain output is the same bits.  (A tuple, not a dict keyed by
#: (offset, cast): -0.0 == 0.0, so a dict would keep one of the two and never run the other.)
_OUT_CASES = ((0.0, "fp32", False), (-0.0, "fp32", False), (1e-50, "fp32", False), (1.0, "fp32", True),
              (-2.5, "fp32", True), (0.0, "llama", True), (1.0, "llama", True))


def test_the_out_cases_hold_both_zeros():
    """-0.0 and 0.0 are separate cases: the sign bit of the offset is what the first one checks."""
    zeros = [math.copysign(1.0, o) for o, cast, _ in _OUT_CASES if o == 0.0 and cast == "fp32"]
    assert sorted(zeros) == [-1.0, 1.0]


@pytest.mark.parametrize("path", ["launch", "plan"])
def test_the_host_picks_the_x_kernels_exactly_for_an_offset_or_the_llama_cast(monkeypatch, path):
    """Every op, dtype, variant (warp / block / wide, 16-byte, scalar and misaligned twins) and
    weight dtype, through flaunch.launch (CuPy and the launcher's fallback) and through the
    per-call plan (flaunch.plan_for: its kernel is what the C++ launcher launches): the _x twin
    of the same launch exactly when weight_offset != 0 or cast == "llama", else the plain one."""
    asked = _cpu_launch_stubs(monkeypatch)
    seen = set()
    for dt in DTYPES:
        vec16 = ops.DTYPES[dt][2]
        for op in fnames.KERNEL_OPS:
            for N in (7, 256, 2050, 4096, 20000, 20001):
                for misaligned in (False, True):
                    for wdt in ((dt,) if dt == "float32" else (dt, "float32")):
                        x = torch.zeros(3 * N + 1, dtype=TORCH_DTYPE[dt])[int(misaligned):][:3 * N].view(3, N)
                        x2 = torch.zeros(3, N, dtype=TORCH_DTYPE[dt]) if op != "rmsnorm" else None
                        w = torch.ones(N, dtype=TORCH_DTYPE[wdt])
                        for offset, cast, want_ext in _OUT_CASES:
                            info = fchecks.validate(op, x, x2, w, 1e-6, offset, cast)
                            del asked[:]
                            if path == "launch":
                                flaunch.launch(info)
                                (name,) = asked
                            else:
                                plan = flaunch.plan_for(info)
                                (name,) = asked
                                assert plan.fields[0] == fnames.kernel_names().index(name) + 1
                            d = fnames.describe_kernel(name)
                            assert d["out_ext"] == want_ext, (name, offset, cast)
                            aligned = N % vec16 == 0 and not misaligned
                            plain = fconfig.config_for(3, N, dt, op != "rmsnorm", N % vec16 == 0, True, op,
                                                         aligned, wdt if wdt != dt else None)
                            assert name == plain.kernel + (fnames.OUT_EXT_SUFFIX if want_ext else ""), (name, plain)
                            seen.add((d["variant"], d["vec"] > 1, d["aligned"], d["weight_dtype"], d["out_ext"]))
    assert {(v, vec, al, wdt, ext) for v in ("warp", "block", "wide") for vec in (False, True)
            for al in ((True, False) if vec else (True,)) for wdt in (None, "float32")
            for ext in (False, True)} <= seen


def test_forced_config_names_the_build_its_call_needs():
    for offset, cast, want_ext in _OUT_CASES:
        for weight_dtype in (None, "float32"):
            cfg = ops.forced_config(3, 768, "bfloat16", variant="block", block=96, ept=8, vec=8, op="rmsnorm_add",
                                    weight_dtype=weight_dtype, weight_offset=offset, cast=cast)
            want = "rmsnorm_add_block_bf16_v8_e8" + ("_w32" if weight_dtype else "") + ("_x" if want_ext else "")
            assert cfg.kernel == want and cfg.kernel in fnames.kernel_names()
    with pytest.raises(ValueError, match="cast must be one of"):
        ops.forced_config(3, 768, "float16", variant="block", block=96, ept=8, cast="gemma")
    with pytest.raises(ValueError, match="weight_offset must be finite"):
        ops.forced_config(3, 768, "float16", variant="block", block=96, ept=8, weight_offset=float("nan"))


def test_check_forced_refuses_the_wrong_output_build(monkeypatch):
    """A plain kernel forced on a call with a weight_offset or the llama cast would silently
    compute T(x * w * r); an _x kernel on a plain call is not what the host launches.  Both are
    refused with the fix named, and nothing is launched."""
    plain = ops.forced_config(3, 768, "float16", variant="block", block=96, ept=8, vec=8)
    ext = ops.forced_config(3, 768, "float16", variant="block", block=96, ept=8, vec=8, weight_offset=1.0)
    assert ext.kernel == plain.kernel + "_x"
    fconfig.check_forced(plain, 3, 768, "float16", False, True)
    fconfig.check_forced(ext, 3, 768, "float16", False, True, out_ext=True)
    with pytest.raises(ValueError, match=r"needs the extended-output kernel rmsnorm_block_f16_v8_e8_x .*"
                                         r"computes only T\(x \* w \* r\)"):
        fconfig.check_forced(plain, 3, 768, "float16", False, True, out_ext=True)
    with pytest.raises(ValueError, match=r"rmsnorm_block_f16_v8_e8_x is the extended-output build.*"
                                         r"its plain twin rmsnorm_block_f16_v8_e8"):
        fconfig.check_forced(ext, 3, 768, "float16", False, True)
    asked = _cpu_launch_stubs(monkeypatch)
    x, w = torch.zeros(3, 768, dtype=torch.float16), torch.ones(768, dtype=torch.float16)
    for kw in ({"weight_offset": 1.0}, {"cast": "llama"}):
        with pytest.raises(ValueError, match="needs the extended-output kernel"):
            flaunch.launch(fchecks.validate("rmsnorm", x, None, w, 1e-6, **kw), config=plain)
    with pytest.raises(ValueError, match="is the extended-output build"):
        flaunch.launch(fchecks.validate("rmsnorm", x, None, w, 1e-6), config=ext)
    assert asked == []
    flaunch.launch(fchecks.validate("rmsnorm", x, None, w, 1e-6, cast="llama"), config=ext)
    assert asked == [ext.kernel]


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
    dx, dw, dg = fgrad.torch_backward(G, x, w, g, 1e-6, (True, True, True))
    ref = ops.reference_grads(x, w, G, gate=g, eps=1e-6)
    atol, rtol = tolerance("float32", grad=True)
    check.assert_close("dx", dx, ref["x"], atol=atol, rtol=rtol)
    check.assert_close("dw", dw, ref["weight"], atol=atol * math.sqrt(x.numel() / N), rtol=rtol)
    if gate:
        check.assert_close("dgate", dg, ref["gate"], atol=atol, rtol=rtol)
    else:
        assert dg is None


def test_backward_formula_detects_a_wrong_gradient(rng):
    """The check above can fail: a backward that forgets the rsqrt's derivative is caught."""
    x = torch.from_numpy(rng.standard_normal((4, 16)).astype(np.float32))
    w = torch.ones(16)
    G = torch.from_numpy(rng.standard_normal((4, 16)).astype(np.float32))
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    wrong = (G * w * r).numpy()
    atol, rtol = tolerance("float32", grad=True)
    assert not check.compare("dx", wrong, ops.reference_grads(x, w, G)["x"], atol=atol, rtol=rtol).ok


def test_kernel_report_rejects_unknown_source():
    with pytest.raises(ValueError, match="source must be"):
        ops.kernel_report("nvrtc")


def test_nvrtc_and_ptxas_build_with_the_launchers_options(monkeypatch):
    """The live build (NVRTC) and the register report (nvcc -Xptxas -v) compile the kernel file
    with the same -D options: one dtype bit each, then the launch shapes (LAUNCH_DEFINES; that
    those equal the .cu's #ifndef defaults is tests/test_kernels.py's), then the fp32-weight and
    the extended-output switches of those modules."""
    from gpu_viz import kernels

    nvcc, nvrtc = set(), set()
    monkeypatch.setattr(kernels, "nvcc_compile",
                        lambda name, arch, options=(), traced=False: nvcc.add((name, arch, tuple(options))) or [])
    monkeypatch.setattr(kernels, "function",
                        lambda name, kernel, options=(), *a, **k: nvrtc.add((name, kernel, tuple(options))))
    fop._ptxas_rows.cache_clear()  # memoised per arch: drop any real report, and the stand-in's after
    try:
        assert fop.kernel_report("ptxas", arches=["sm_90"]) == []
    finally:
        fop._ptxas_rows.cache_clear()
    for name in fnames.kernel_names():
        flaunch.get_kernel(name, fnames.describe_kernel(name)["dtype"])
    want = {(dt, w32, ext): (f"-DRMSNORM_DTYPES={ops.DTYPES[dt][3]}",) + fnames.LAUNCH_DEFINES
            + (("-DRMSNORM_WEIGHT_F32=1",) if w32 else ()) + (("-DRMSNORM_OUT_EXT=1",) if ext else ())
            for dt in DTYPES for w32 in ((False,) if dt == "float32" else (False, True)) for ext in (False, True)}
    assert {fnames.compile_options(*k) for k in want} == set(want.values())
    assert sorted(ops.DTYPES[dt][3] for dt in DTYPES) == [1, 2, 4]
    assert nvcc == {(fnames.FILE, "sm_90", o) for o in want.values()}
    module = lambda d: (d["dtype"], d["weight_dtype"] is not None, d["out_ext"])  # noqa: E731
    assert nvrtc == {(fnames.FILE, n, want[module(fnames.describe_kernel(n))]) for n in fnames.kernel_names()}
    assert fnames.compile_options(torch.float16) == fnames.compile_options("half") == want["float16", False, False]


#: The public names of gpu_viz.ops: the notebooks, the benchmarks and callers use them.
OPS_PUBLIC_NAMES = (
    "rmsnorm", "rmsnorm_gate", "FusedRMSNorm", "FusedRMSNormGate", "launch_config", "choose_config",
    "LaunchConfig", "forced_config", "fits_l2", "l2_bytes", "kernel_report", "kernel_name", "kernel_names",
    "describe_kernel", "get_kernel", "bytes_moved", "dtype_name", "DTYPES", "OPS", "TOLERANCES",
    "GRAD_TOLERANCES", "reference_rmsnorm", "reference_rmsnorm_gate", "reference_grads", "WARP", "BLOCK",
    "WIDE", "WARP_ROW_MAX_N", "WARP_ROW_MAX_N_VECTOR", "WARP_ROWS_PER_BLOCK", "EPT_CHOICES",
    "SCALAR_BLOCK_EPT", "BLOCK_TARGET_THREADS", "MULTI_VECTOR_ROW_BYTES", "MULTI_VECTOR_BYTES_PER_THREAD",
    "MULTI_VECTOR_TARGET_THREADS", "BLOCK_MAX_THREADS", "WIDE_THREADS", "MAX_GRID_X", "MAX_N")


def test_ops_keeps_its_public_names():
    """gpu_viz.ops is the public face of gpu_viz.rmsnorm: every public name, each the
    implementation's own object (no second copy of a function, constant or table)."""
    from gpu_viz.rmsnorm import dtypes, tolerances

    missing = [n for n in OPS_PUBLIC_NAMES if not hasattr(ops, n)]
    assert not missing, missing
    assert set(OPS_PUBLIC_NAMES) <= set(ops.__all__) and all(hasattr(ops, n) for n in ops.__all__)
    for n in OPS_PUBLIC_NAMES:
        home = next(m for m in (fnames, fconfig, flaunch, fop, dtypes, tolerances, ops) if hasattr(m, n))
        assert getattr(ops, n) is getattr(home, n), n
    assert ops.TOLERANCES is tolerances.TOLERANCES and ops.GRAD_TOLERANCES is tolerances.GRAD_TOLERANCES


def test_ops_references_are_the_one_reference(monkeypatch, rng):
    """ops.reference_* hand the work to gpu_viz.rmsnorm.reference (and return numpy float64)."""
    calls = []

    def stand_in(x, weight, eps=1e-6, gate=None, weight_offset=0.0):
        calls.append(("rmsnorm", eps, gate is not None))
        return torch.full(tuple(np.shape(x)), 7.0, dtype=torch.float64)

    monkeypatch.setattr(reference, "rmsnorm", stand_in)
    monkeypatch.setattr(reference, "grads", lambda *a, **k: calls.append(("grads",)) or {"x": "sentinel"})
    x, w = rng.standard_normal((3, 5)), rng.standard_normal(5)
    y = ops.reference_rmsnorm(x, w, 1e-3)
    assert isinstance(y, np.ndarray) and y.dtype == np.float64 and (y == 7.0).all()
    assert (ops.reference_rmsnorm_gate(x, x, w, 1e-4) == 7.0).all()
    assert ops.reference_grads(x, w, x) == {"x": "sentinel"}
    assert calls == [("rmsnorm", 1e-3, False), ("rmsnorm", 1e-4, True), ("grads",)]


def test_reference_follows_x_when_the_operands_are_of_mixed_kinds(rng):
    """numpy x with torch weight / gate: numpy out; torch x with numpy weight / gate: torch out
    (on x's device) -- the same float64 values either way."""
    x, w, g = rng.standard_normal((4, 9)), rng.standard_normal(9), 3 * rng.standard_normal((4, 9))
    want = reference.rmsnorm(x, w, 1e-5, g)
    tx, tw, tg = (torch.from_numpy(a) for a in (x, w, g))
    for args in ((x, tw, g), (x, w, tg), (x, tw, tg)):
        got = reference.rmsnorm(args[0], args[1], 1e-5, args[2])
        assert isinstance(got, np.ndarray) and got.dtype == np.float64
        np.testing.assert_array_equal(got, want)
    for args in ((tx, w, g), (tx, tw, g), (tx, w, tg)):
        got = reference.rmsnorm(args[0], args[1], 1e-5, args[2])
        assert isinstance(got, torch.Tensor) and got.dtype == torch.float64 and got.device == tx.device
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-14, atol=0)  # torch's mean: its own order


@pytest.mark.parametrize("x,w,err,words", [
    ("abc", np.ones(3), TypeError, r"^x must be an array"),
    (np.ones((2, 3)) + 1j, np.ones(3), TypeError, r"^x must hold real numbers"),
    (np.ones((2, 3)), np.ones(3) + 1j, TypeError, r"^weight must hold real numbers"),
    (np.float64(2.0), np.ones(()), ValueError, r"^x must have shape \(\.\.\., N\) with N >= 1, got \(\)"),
    (np.ones((2, 0)), np.ones(0), ValueError, r"^x must have shape \(\.\.\., N\) with N >= 1, got \(2, 0\)"),
    (np.ones((2, 3)), np.ones(4), ValueError, r"^weight must have shape \(N,\) = \(3,\)"),
])
def test_reference_names_bad_input(x, w, err, words):
    """Bug class: the float64 reference meeting input it cannot judge (a string, complex values
    whose imaginary part float64 would drop, a 0-d or empty row) must say which argument, not
    answer wrong or fail deep inside numpy."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning / mean-of-empty RuntimeWarning on the way
        with pytest.raises(err, match=words):
            reference.rmsnorm(x, w)


def test_reference_is_a_constant_and_grads_differentiate_it(rng):
    """rmsnorm() of tensors that require grad is outside the graph (a value to compare with);
    grads() differentiates the same formula (torch autograd, float64) -- checked here against
    central differences."""
    x = torch.from_numpy(rng.standard_normal((2, 5))).requires_grad_(True)
    w = torch.from_numpy(rng.standard_normal(5)).requires_grad_(True)
    y = reference.rmsnorm(x, w, 1e-6)
    assert not y.requires_grad and y.grad_fn is None
    x0, w0, g0 = rng.standard_normal((2, 5)), rng.standard_normal(5), rng.standard_normal((2, 5))
    G = rng.standard_normal((2, 5))
    got = reference.grads(x0, w0, G, gate=g0, eps=1e-6)
    h = 1e-6
    for name, arr in (("x", x0), ("weight", w0), ("gate", g0)):
        num = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            hi, lo = arr.copy(), arr.copy()
            hi[i] += h
            lo[i] -= h
            args = {"x": x0, "weight": w0, "gate": g0}
            f = [np.sum(reference.rmsnorm(**dict(args, **{name: a}), eps=1e-6) * G) for a in (hi, lo)]
            num[i] = (f[0] - f[1]) / (2 * h)
        np.testing.assert_allclose(got[name], num, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------------------
# CPU: the package holds ONE float64 RMSNorm reference and ONE tolerance table

PACKAGE = Path(ops.__file__).resolve().parent
_FLOAT64 = ("float64", "f64", "np64", "numpy64", "double")


def _own_nodes(fn):
    """The nodes of ``fn``'s body, not those of functions or classes defined inside it."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def _called(node) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _const(node, *values) -> bool:
    return isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value in values


def _rmsnorm_in_float64(fn) -> bool:
    """``fn`` computes an RMSNorm in float64 itself: a square, a mean (or sum) of it, a square
    root (sqrt, rsqrt, ** +-0.5) and a float64 conversion, all in its own body."""
    square = root = mean = f64 = False
    for n in _own_nodes(fn):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) and ast.dump(n.left) == ast.dump(n.right):
            square = True
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow):
            square |= _const(n.right, 2)
            root |= _const(n.right, 0.5, -0.5) or (isinstance(n.right, ast.UnaryOp) and _const(n.right.operand, 0.5))
        if isinstance(n, ast.Call):
            name = _called(n)
            square |= name == "square" or (name == "pow" and any(_const(a, 2) for a in n.args))
            root |= name in ("sqrt", "rsqrt") or (name == "pow" and any(_const(a, 0.5, -0.5) for a in n.args))
            mean |= name in ("mean", "sum")
        text = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else \
            n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else ""
        f64 |= any(k in text.lower() for k in _FLOAT64)
    return square and root and mean and f64


def _dtype_tables(tree):
    """(name, line) of every dict literal keyed by dtype names with (atol, rtol)-like values:
    at least two of float32 / float16 / bfloat16, every value a pair of numbers."""
    names = {"float32", "float16", "bfloat16", "fp32", "fp16", "bf16", "half", "float"}
    found = []
    for node in ast.walk(tree):
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(value, ast.Dict):
            continue
        keys = [k.value for k in value.keys if isinstance(k, ast.Constant)]
        pairs = all(isinstance(v, ast.Tuple) and len(v.elts) == 2 and all(
            isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) for e in v.elts) for v in value.values)
        if len(set(keys) & names) >= 2 and pairs:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            found.append((ast.unparse(target), node.lineno))
    return found


def _package_trees():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path))


def test_one_float64_rmsnorm_reference_in_the_package():
    found = [(rel, fn.name) for rel, tree in _package_trees() for fn in ast.walk(tree)
             if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and _rmsnorm_in_float64(fn)]
    assert found == [("rmsnorm/reference.py", "_rmsnorm")], found  # reference.rmsnorm and .grads


def test_one_tolerance_table_in_the_package():
    tables = [(rel, name) for rel, tree in _package_trees() for name, _ in _dtype_tables(tree)]
    # the one other table is a whole decoder layer's (matmuls, attention, three norms), not RMSNorm's
    tables = [t for t in tables if t != ("claims/decoder.py", "LAYER_TOLERANCES")]
    assert sorted(tables) == [("rmsnorm/tolerances.py", "GRAD_TOLERANCES"), ("rmsnorm/tolerances.py", "TOLERANCES")]
    named = [(rel, t.id) for rel, tree in _package_trees() for node in ast.walk(tree)
             if isinstance(node, (ast.Assign, ast.AnnAssign))
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
             if isinstance(t, ast.Name) and t.id.endswith("TOLERANCES") and t.id != "LAYER_TOLERANCES"]
    assert sorted(named) == sorted(tables), named


def test_the_scans_find_what_they_look_for():
    """The two scans above on code that does what they forbid: a second reference (numpy and
    torch spellings) and a second table are found."""
    src = """
import numpy as np
TOL = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-4)}
DTYPES = {"float32": ("f32", 4, 4, 1), "float16": ("f16", 2, 8, 2)}
def ref_np(x, w, eps):
    x64 = np.asarray(x, dtype=np.float64)
    return x64 * w / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps)
def ref_torch(x, w, eps):
    x64 = x.double()
    return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w.double()
def fp32_eager(x, w, eps):
    return w * x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
def sum_of_squares(x):
    x64 = np.asarray(x, np.float64)
    return float(np.sum(x64 * x64))
"""
    tree = ast.parse(src)
    flagged = [fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and _rmsnorm_in_float64(fn)]
    assert flagged == ["ref_np", "ref_torch"]
    assert [name for name, _ in _dtype_tables(tree)] == ["TOL"]


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
    atol, rtol = tolerance(dtype)
    return check.assert_close(name, got, ref, atol=atol, rtol=rtol)


def _run_poisoned(x, w, g, eps=1e-6, config=None):
    """The launcher with a NaN-poisoned output: an element the kernel never writes stays NaN."""
    call = fchecks.validate("rmsnorm_gate" if g is not None else "rmsnorm", x, g, w, eps)
    out = torch.full((call.M, call.N), float("nan"), device=x.device, dtype=x.dtype)
    return flaunch.launch(call, out=out, config=config)


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
    monkeypatch.setattr(flaunch, "l2_bytes", lambda device: asked.append(device) or l2)
    for M, N in [(6, 768), (5, 4096), (3, 8192), (4, 16384), (3, 8200), (9, 7), (5, 256), (2, 65536)]:
        for gate in (False, True):
            _forward_case(rng, M, N, dtype, gate, "contiguous")
    assert asked, "flaunch.launch did not consult the L2 size"


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
        # finite elements within the tolerance, and NaN / inf exactly as in float64
        _check(got, ref, dtype, f"y[NaN/inf rows, N={N}, {dtype}, gate={gate}]")
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
    atol, rtol = tolerance(dtype, grad=True)
    check.assert_close(f"dx {dtype} {shape}", x.grad, ref["x"], atol=atol, rtol=rtol)
    check.assert_close(f"dw {dtype} {shape}", w.grad, ref["weight"], atol=atol * math.sqrt(M), rtol=rtol)
    if gate:
        check.assert_close(f"dgate {dtype} {shape}", g.grad, ref["gate"], atol=atol, rtol=rtol)


@gpu
def test_module_wrapper_trains(rng):
    m = ops.FusedRMSNorm(768, device="cuda")
    x = _device_values(rng, (16, 768), "float32", "contiguous")
    m(x).square().sum().backward()
    ref = ops.reference_grads(x, m.weight, 2 * torch.from_numpy(ops.reference_rmsnorm(x, m.weight)).float())
    check.assert_close("dw of FusedRMSNorm", m.weight.grad, ref["weight"], atol=1e-3, rtol=1e-4)


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
