"""Notebook 03: the vector-add trace, the divergence masks, PTX/SASS, frames.  CPU + GPU tests."""
import shutil

import numpy as np
import pytest

from gpu_viz import kernels, simt
from gpu_viz.frames_simt import divergence_animation, divergence_groups, vector_add_animation
from gpu_viz.model import vector_add as model

FILES = ("vector_add.cu", "divergence.cu")


# -- CPU: the model ---------------------------------------------------------------------------

@pytest.mark.parametrize("n,block", [(64, 64), (64, 32), (1, 1), (70, 64), (100, 96), (33, 1024), (3000, 256)])
def test_vector_add_model_indices_and_values(n, block, rng):
    A = rng.standard_normal(n).astype(np.float32)
    B = rng.standard_normal(n).astype(np.float32)
    tr = model.vector_add(A, B, block)
    T = -(-n // block) * block
    for name in model.VECTOR_ADD_FIELDS:
        assert tr[name].shape == (T,) and tr[name].dtype == np.int32, name
    assert np.array_equal(tr["index"], tr["block"] * block + tr["thread"])
    assert np.array_equal(tr["warp"], tr["thread"] // 32)
    assert np.array_equal(tr["lane"], tr["thread"] % 32)
    ok = tr["index"] < n
    assert np.isnan(tr["c"][~ok]).all()
    assert np.array_equal(tr["c"][ok], (A + B)[tr["index"][ok]])
    np.testing.assert_allclose(tr["c"][ok], A.astype(np.float64) + B.astype(np.float64), rtol=2 ** -24)
    assert set(tr.simulated) == {"smid", "hw_warpid"}
    assert (tr["smid"] < 58).all()


def test_deck_claim_two_warps_six_instructions():
    tr = simt.vector_add_trace(n=64, block=64, seed=1)
    assert tr.params["warps"] == 2
    assert len(np.unique(tr["warp"])) == 2
    assert len(tr.steps) == 1 + 6 * 2
    lines = [s.line for s in tr.steps[1:]]
    assert lines[0::2] == simt.step_lines() and len(set(simt.step_lines())) == 6


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="block must be 1..1024"):
        simt.vector_add_trace(n=64, block=2048)
    with pytest.raises(ValueError, match="n must be >= 1"):
        simt.vector_add_trace(n=0)
    with pytest.raises(TypeError, match="A must be a 1-D float32"):
        model.vector_add(np.zeros(4), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="kernel must be one of"):
        simt.divergence_trace(kernel="nope")


@pytest.mark.parametrize("n,block", [(64, 64), (64, 32), (70, 64), (45, 45), (1, 1), (200, 96)])
def test_divergence_model_masks(n, block, rng):
    x = rng.standard_normal(n).astype(np.float32)
    d = model.divergence(x, block, iters=3, kernel="divergent_branch")
    lane = (np.arange(n) % block) % 32
    assert np.array_equal(d["branch"], lane & 1)
    for i in range(n):  # brute force: lanes of my hardware warp, alive, same branch
        blk, w = i // block, (i % block) // 32
        mates = [j for j in range(n) if j // block == blk and (j % block) // 32 == w and d["branch"][j] == d["branch"][i]]
        assert d["active"][i] == sum(1 << int(lane[j]) for j in mates)
    full = (np.arange(n) % block) // 32 < (block // 32)  # lanes of full warps of full blocks
    full &= np.arange(n) < (n // block) * block
    assert set(d["active"][full & (lane % 2 == 0)].tolist()) <= {0x55555555}
    assert set(d["active"][full & (lane % 2 == 1)].tolist()) <= {0xAAAAAAAA}
    u = model.divergence(x, block, iters=3, kernel="uniform_branch")
    if block % 32 == 0 and n % 32 == 0:
        assert set(u["active"].tolist()) == {0xFFFFFFFF}


def test_divergence_paths_float32_exact():
    x = np.array([1.5, -2.25], np.float32)
    y = model.run_paths(x, np.array([0, 1]), iters=2)
    a = np.float32(1.5)
    for _ in range(2):
        a = np.float32(np.float32(a * np.float32(1.0001)) + np.float32(0.5))
    assert y[0] == a
    np.testing.assert_allclose(y, simt._f64_paths(x, np.array([0, 1]), 2), rtol=1e-6)


def test_frames_render(rng):
    tr = simt.vector_add_trace(seed=2)
    src = kernels.snippet("vector_add.cu", "vector_add").text
    an = vector_add_animation(tr, src)
    assert len(an) == 13 and all(f.png.startswith(b"\x89PNG") for f in an.frames)
    assert "CPU model" in an.static_html() or "measured on" in an.static_html()
    d = simt.divergence_trace(seed=3)
    groups = divergence_groups(d)
    assert len(groups) == 4  # 2 warps x 2 paths
    sn = kernels.snippet("divergence.cu", "divergent")
    an2 = divergence_animation(d, sn.text, sn.line_of("path_a(v"), sn.line_of("path_b(v"))
    assert len(an2) == 5


def test_mask_bits():
    assert simt.mask_bits(0x55555555) == "01" * 16


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", kernels.ARCHES)
@pytest.mark.parametrize("name", FILES)
def test_nvcc_compiles_without_spills(name, arch):
    rows = kernels.nvcc_compile(name, arch)
    assert rows, f"no kernels reported for {name}"
    for r in rows:
        assert r.spill_stores_bytes == 0 and r.spill_loads_bytes == 0, r
        assert r.registers <= 32, r


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_ptx_has_one_add_and_two_loads():
    text, label = simt.ptx()
    assert text is not None, label
    assert text.count("ld.global") == 2 and text.count("add.rn.f32") == 1 and text.count("st.global") == 1


def test_sass_parsing_or_reason():
    text, label = simt.sass()
    if text is None:
        assert "SASS not shown" in label
    else:
        ops = simt.sass_instructions(text)
        assert ops.count("FADD") == 1 and ops.count("LDG") == 2 and ops.count("STG") == 1


# -- GPU: model == silicon ---------------------------------------------------------------------

DETERMINISTIC_VA = ("block", "thread", "index", "warp", "lane", "a", "b", "c", "A", "B")


@pytest.mark.gpu
@pytest.mark.parametrize("n,block", [(64, 64), (64, 32), (70, 64), (1, 1), (1000, 96), (5000, 1024)])
def test_vector_add_model_equals_silicon(n, block, rng):
    from gpu_viz import device

    A = rng.standard_normal(n).astype(np.float32)
    B = rng.standard_normal(n).astype(np.float32)
    gpu = simt.vector_add_gpu(A, B, block)
    cpu = model.vector_add(A, B, block, region_lines=simt.step_lines())
    cpu.assert_equal(gpu, names=DETERMINISTIC_VA)
    assert gpu.source == "gpu" and gpu.simulated == ()
    sms = device.current().sm_count
    assert (gpu["smid"] >= 0).all() and (gpu["smid"] < sms).all()
    assert (gpu["hw_warpid"] >= 0).all() and (gpu["hw_warpid"] < 64).all()
    # every thread of one block reports one SM
    for b in np.unique(gpu["block"]):
        assert len(np.unique(gpu["smid"][gpu["block"] == b])) == 1
    assert [s.label for s in cpu.steps] == [s.label for s in gpu.steps]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", model.DIVERGENCE_KERNELS)
@pytest.mark.parametrize("n,block,iters", [(64, 64, 8), (64, 32, 0), (70, 64, 5), (200, 96, 3), (4096, 256, 16)])
def test_divergence_model_equals_silicon(kernel, n, block, iters, rng):
    x = rng.standard_normal(n).astype(np.float32)
    gpu = simt.divergence_gpu(x, block, iters, kernel)
    cpu = model.divergence(x, block, iters, kernel)
    cpu.assert_equal(gpu, names=("x", "y", "branch", "active", "lane", "warp", "block"))


@pytest.mark.gpu
def test_divergence_costs_more_than_uniform():
    out = simt.divergence_cost(n=1 << 20, block=256, iters=256, reps=20)
    assert out["divergent_branch"].timing == "kernel"
    assert out["ratio"] > 1.3, out


@pytest.mark.gpu
@pytest.mark.skipif(simt.find_tool("cuobjdump") is None, reason="cuobjdump not installed")
def test_sass_of_nvrtc_cubin_on_gpu():
    text, label = simt.sass()
    # NVRTC's own cubin, or -- where the installed cuobjdump is older than NVRTC -- nvcc's, saying why
    assert text is not None, label
    assert "NVRTC cubin" in label or ("nvcc cubin" in label and "could not read NVRTC" in label), label
    ops = simt.sass_instructions(text)
    assert ops.count("FADD") == 1 and ops.count("STG") == 1


@pytest.mark.gpu
def test_ptx_from_nvrtc_on_gpu():
    text, label = simt.ptx()
    assert text is not None and "add.rn.f32" in text, label


def test_sanitize_script_imports_and_says_no_gpu():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, GPU_VIZ_FORCE_CPU="1")
    proc = subprocess.run([sys.executable, str(root / "scripts" / "sanitize" / "traced.py")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "no GPU" in proc.stderr, proc.stderr


# -- CPU: the GPU producers' plumbing, on a fake device ---------------------------------------
# The kernels are emulated in numpy (from the models) so that the producers' Python -- buffer
# poisoning, argument order, read-back, reshapes, dtypes, the checks -- runs here.  This proves
# nothing about silicon (the gpu-marked tests do); it catches plumbing bugs before the GPU run.

class _DevArray(np.ndarray):
    def get(self):
        return np.array(self)


def _fake_cupy():
    import types

    cp = types.ModuleType("cupy")
    dev = lambda a: np.array(a).view(_DevArray)  # noqa: E731
    cp.asarray = dev
    cp.full = lambda n, v, dtype=np.float32: dev(np.full(n, v, dtype))
    cp.zeros = lambda n, dtype=np.float32: dev(np.zeros(n, dtype))
    cp.full_like = lambda a, v: dev(np.full_like(np.asarray(a), v))
    cp.ndarray = _DevArray
    for name in ("float32", "int32", "uint32", "int64", "uint64"):
        setattr(cp, name, getattr(np, name))
    stream = types.SimpleNamespace(synchronize=lambda: None)
    cp.cuda = types.SimpleNamespace(get_current_stream=lambda: stream,
                                    driver=types.SimpleNamespace(occupancyMaxActiveBlocksPerMultiprocessor=None))
    return cp


def _emulated_kernel(file, name):
    from gpu_viz.model import grid_stride as gs
    from gpu_viz.model import scheduling as sc

    def launch(grid, block, args):
        g, b = grid[0], block[0]
        T = g * b
        if name == "vector_add_traced":
            A, B, C, n, rec, vals = args
            tr = model.vector_add(np.asarray(A), np.asarray(B), b)
            r = np.asarray(rec).reshape(T, 7)
            for k, f in enumerate(model.VECTOR_ADD_FIELDS):
                r[:, k] = tr[f]
            ok = tr["index"] < n
            v = np.asarray(vals).reshape(T, 3)
            for k, f in enumerate("abc"):
                v[ok, k] = tr[f][ok]
            C[:] = tr["c"][:n]
        elif name in model.DIVERGENCE_KERNELS:
            x, y, n, iters, record, branch, active = args
            tr = model.divergence(np.asarray(x)[:n], b, int(iters), name)
            y[:] = tr["y"]
            if record:
                branch[:] = tr["branch"]
                active[:] = tr["active"]
        elif name == "scale_grid_stride_traced":
            x, y, alpha, n, blk, thr, pss, visits = args
            tr = gs.grid_stride(np.asarray(x)[:n], float(alpha), g, b)
            for dst, f in ((y, "y"), (blk, "block"), (thr, "thread"), (pss, "pass"), (visits, "visits")):
                dst[:n] = tr[f]
        elif name == "scheduled_block":
            spin, fma, smid, t0, t1, c0, c1, sink = args
            tr = sc.scheduling(g, b, int(spin), int(fma))
            for dst, f in ((smid, "smid"), (t0, "t_start"), (t1, "t_end"), (c0, "clk_start"), (c1, "clk_end")):
                dst[:g] = tr[f] + (1000 if f == "t_start" or f == "t_end" else 0)
        else:
            raise AssertionError(f"no emulation for {name}")

    launch.num_regs, launch.shared_size_bytes = 10, 0
    return launch


def test_gpu_producers_plumbing_with_a_fake_device(monkeypatch, rng):
    import sys

    from gpu_viz import backend, gridstride, scheduling
    from gpu_viz.model import grid_stride as gs
    from gpu_viz.traced import check_equal

    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(backend, "require_gpu", lambda what: None)
    monkeypatch.setattr(backend, "live_label", lambda: "fake device (plumbing test)")
    monkeypatch.setattr(kernels, "function", _emulated_kernel)

    A, B = rng.standard_normal(70).astype(np.float32), rng.standard_normal(70).astype(np.float32)
    gpu = simt.vector_add_gpu(A, B, 64)
    model.vector_add(A, B, 64).assert_equal(gpu, names=DETERMINISTIC_VA + ("smid", "hw_warpid"))
    assert gpu.source == "gpu" and gpu.simulated == () and len(gpu.steps) == 1 + 6 * 4

    for kernel in model.DIVERGENCE_KERNELS:
        x = rng.standard_normal(100).astype(np.float32)
        model.divergence(x, 64, 5, kernel).assert_equal(simt.divergence_gpu(x, 64, 5, kernel))

    for n, g, b in [(2500, 1, 1024), (0, 2, 64), (5, 2, 4)]:
        x = rng.standard_normal(n).astype(np.float32)
        gs.grid_stride(x, 1.5, g, b).assert_equal(gridstride.grid_stride_gpu(x, 1.5, g, b),
                                                  names=("x", "y", "block", "thread", "pass", "visits"))

    tr = scheduling.scheduling_gpu(300, 256, 5000)
    assert tr["t_start"].min() == 0 and tr.source == "gpu"
    s = scheduling.scheduling_summary(tr)
    assert s["blocks"] == 300 and s["resident_blocks_per_sm"] == 6 and s["source"] == "gpu"
    check_equal("smid", tr["smid"], np.arange(300) % 58)
