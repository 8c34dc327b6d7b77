"""Occupancy: the CPU calculator (hand-checked values, invariants), launch validation, and on a GPU
the calculator == cuOccupancyMaxActiveBlocksPerMultiprocessor for every block size."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_viz import device
from gpu_viz import occupancy as O

H100, L4, T4, A100 = (device.spec_sheet(k) for k in ("H100", "L4", "T4", "A100"))


# -- hand-computed values (cuda_occupancy.h rules) ----------------------------------------------

@pytest.mark.parametrize("info, block, regs, smem, blocks, limiter", [
    # few registers: threads (warp slots) or the per-SM block cap bind
    (H100, 32, 10, 0, 32, "blocks"),            # 64 warps / 1 = 64, block cap 32
    (H100, 1024, 10, 0, 2, "threads"),          # 64 warps / 32
    (L4, 1024, 10, 0, 1, "threads"),            # 48 warps / 32
    (L4, 32, 10, 0, 24, "blocks"),
    (T4, 32, 10, 0, 16, "blocks"),
    (T4, 256, 10, 0, 4, "threads"),             # 32 warps / 8
    # 64 regs: 2048 per warp, 16384/2048 = 8 warps per sub-partition = 32 per SM
    (H100, 256, 64, 0, 4, "registers"),
    # 80 regs: 2560 per warp, 6 warps per sub-partition = 24 per SM
    (H100, 32, 80, 0, 24, "registers"),
    (H100, 128, 80, 0, 6, "registers"),
    (H100, 1024, 80, 0, 0, "registers"),        # 32 x 2560 = 81920 > 65536 per block
    # 72 regs: 2304 per warp -> 7 per sub-partition -> 28 per SM
    (L4, 128, 72, 0, 7, "registers"),
    # shared memory: 16 KiB static + 1 KiB reserved = 17408 B; 228 KiB / 17408 = 13
    (H100, 128, 14, 16384, 13, "shared memory"),
    (L4, 128, 14, 16384, 5, "shared memory"),   # 100 KiB / 17408
    (T4, 128, 14, 16384, 4, "shared memory"),   # 64 KiB / 16 KiB (no reservation on sm_75)
    (T4, 256, 14, 16384, 4, "threads + shared memory"),
])
def test_calculator_hand_values(info, block, regs, smem, blocks, limiter):
    occ = O.calculate(info, block, O.KernelResources("k", regs, smem))
    assert occ.blocks_per_sm == blocks, occ
    assert occ.limiter == limiter, occ
    assert occ.warps_per_sm == blocks * -(-block // 32)


def test_dynamic_smem_counts_and_per_block_cap():
    k = O.KernelResources("k", 16)
    # 47 KiB dynamic + 1 KiB reserved = 48 KiB: fits the default per-block cap (48 KiB + reserve)
    assert O.calculate(H100, 128, k, 47 * 1024).blocks_per_sm == (228 * 1024) // (48 * 1024)
    # 49 KiB without opting in: cannot launch
    occ = O.calculate(H100, 128, k, 49 * 1024)
    assert occ.blocks_per_sm == 0 and occ.limiters == ("shared memory",), occ
    # opting in (max dynamic 200 KiB) makes it fit
    k_opt = O.KernelResources("k", 16, 0, max_dynamic_smem_bytes=200 * 1024)
    assert O.calculate(H100, 128, k_opt, 100 * 1024).blocks_per_sm == 2


def test_block_over_cap_is_zero_and_named():
    occ = O.calculate(L4, 1025, 8)
    assert occ.blocks_per_sm == 0 and occ.limiters == ("block size",)


@pytest.mark.parametrize("bad, match", [
    (dict(block_size=0), "block_size must be >= 1"),
    (dict(block_size=3.5), "block_size must be an int"),
    (dict(dynamic_smem_bytes=-1), "dynamic_smem_bytes must be >= 0"),
])
def test_calculator_bad_input(bad, match):
    args = dict(block_size=128, dynamic_smem_bytes=0)
    args.update(bad)
    with pytest.raises((ValueError, TypeError), match=match):
        O.calculate(H100, args["block_size"], 16, args["dynamic_smem_bytes"])


def test_kernel_resources_validates():
    with pytest.raises(ValueError, match="regs_per_thread"):
        O.KernelResources("k", -1)


@settings(max_examples=200, deadline=None)
@given(info=st.sampled_from([H100, L4, T4, A100]), block=st.integers(1, 1024), regs=st.integers(0, 255),
       smem=st.integers(0, 48 * 1024 - 1024), dyn=st.integers(0, 8192))
def test_calculator_invariants(info, block, regs, smem, dyn):
    k = O.KernelResources("k", regs, smem)
    occ = O.calculate(info, block, k, dyn)
    max_warps = info.max_threads_per_sm // 32
    assert 0 <= occ.blocks_per_sm <= info.max_blocks_per_sm
    assert occ.warps_per_sm <= max_warps
    assert occ.limiters and all(occ.limits[r] == occ.blocks_per_sm for r in occ.limiters)
    assert occ.blocks_per_sm == min(occ.limits.values())
    if occ.blocks_per_sm:
        assert occ.blocks_per_sm * -(-block // 32) * (-(-regs * 32 // 256) * 256) <= info.regs_per_sm
        assert occ.blocks_per_sm * occ.smem_per_block_bytes <= info.smem_per_sm_bytes
    # more registers or more shared memory never raise occupancy
    assert O.calculate(info, block, O.KernelResources("k", min(255, regs + 8), smem), dyn).blocks_per_sm \
        <= occ.blocks_per_sm
    assert O.calculate(info, block, k, dyn + 4096).blocks_per_sm <= occ.blocks_per_sm


def test_table_covers_sweep():
    rows = O.table(L4, 32)
    assert [r.block_size for r in rows] == list(range(32, 1025, 32))
    assert all(set(r.row()) >= {"block_size", "blocks_per_sm", "limiter"} for r in rows)


# -- launch validation ------------------------------------------------------------------------

def test_check_launch_1025_names_the_cap():
    with pytest.raises(O.LaunchConfigError, match=r"1025 threads per block.*at most 1024"):
        O.check_launch(1025, info=L4)


def test_check_launch_counts_all_dims():
    with pytest.raises(O.LaunchConfigError, match="2048 threads"):
        O.check_launch((32, 32, 2), info=H100)
    with pytest.raises(O.LaunchConfigError, match="block.z=65"):
        O.check_launch((1, 1, 65), info=H100)
    with pytest.raises(O.LaunchConfigError, match="grid.y=65536"):
        O.check_launch(32, grid=(1, 65536), info=H100)


def test_check_launch_resources():
    heavy = O.KernelResources("occ_heavy", 80)
    with pytest.raises(O.LaunchConfigError, match="does not fit on one SM"):
        O.check_launch(1024, info=H100, kernel=heavy)
    assert O.check_launch(512, info=H100, kernel=heavy).blocks_per_sm == 1


def test_check_launch_bad_types():
    with pytest.raises(TypeError, match="block must be an int or a tuple"):
        O.check_launch("big", info=H100)
    with pytest.raises(O.LaunchConfigError, match="must be >= 1"):
        O.check_launch(0, info=H100)


def test_launch_error_text_explains():
    assert "1024 threads per block" in O.launch_error_text(RuntimeError("CUDA_ERROR_INVALID_VALUE: invalid argument"))
    assert "registers or shared memory" in O.launch_error_text(
        RuntimeError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested for launch"))


# -- on a GPU: calculator == the CUDA occupancy API --------------------------------------------

BLOCKS = list(range(32, 1025, 32)) + [1, 33, 100, 1000, 1023]


@pytest.mark.gpu
@pytest.mark.parametrize("name, dyn", [("occ_light", 0), ("occ_heavy", 0), ("occ_smem", 0), ("occ_smem", 8192),
                                       ("occ_light", 20000)])
def test_calculator_matches_cuda_api(name, dyn):
    k = O.occupancy_kernels()[name]
    res = O.KernelResources.of(k, name)
    info = device.current()
    bad = []
    for b in BLOCKS:
        live = O.live_blocks_per_sm(k, b, dyn)
        calc = O.calculate(info, b, res, dyn).blocks_per_sm
        if live != calc:
            bad.append((b, live, calc))
    assert not bad, f"{name} ({res.regs_per_thread} regs, {res.static_smem_bytes} B smem, dyn {dyn}): " \
                    f"(block, CUDA API, calculator) differ: {bad}"


@pytest.mark.gpu
def test_two_kernels_use_different_registers():
    light = O.occupancy_kernels()["occ_light"].num_regs
    heavy = O.occupancy_kernels()["occ_heavy"].num_regs
    assert heavy >= 64 > light, (light, heavy)


@pytest.mark.gpu
def test_live_table_agrees():
    rows = O.live_table(O.occupancy_kernels()["occ_heavy"], name="occ_heavy")
    assert all(r.source == "CUDA occupancy API" and "calculator disagrees" not in r.limiters for r in rows)


@pytest.mark.gpu
def test_launch_1025_threads_raises_and_is_explained():
    import cupy as cp

    k = O.occupancy_kernels()["occ_light"]
    x = cp.random.random(2048, dtype=cp.float32)
    y = cp.full(2048, cp.nan, dtype=cp.float32)
    with pytest.raises(cp.cuda.driver.CUDADriverError) as info:
        k((2,), (1025,), (x, y, cp.float32(2), cp.float32(1), cp.int32(2048)))
    assert "1024 threads per block" in O.launch_error_text(info.value)
    # the failed launch left the context usable and wrote nothing
    cp.cuda.get_current_stream().synchronize()
    assert bool(cp.isnan(y).all())
    k((2,), (1024,), (x, y, cp.float32(2), cp.float32(1), cp.int32(2048)))
    assert cp.allclose(y, 2 * x + 1, rtol=0, atol=1e-6)


@pytest.mark.gpu
def test_heavy_kernel_at_1024_threads_fails_for_resources():
    import cupy as cp

    k = O.occupancy_kernels()["occ_heavy"]
    info = device.current()
    if O.calculate(info, 1024, O.KernelResources.of(k)).blocks_per_sm > 0:
        pytest.skip(f"occ_heavy uses only {k.num_regs} registers here: 1024 threads fit")
    with pytest.raises(O.LaunchConfigError, match="does not fit on one SM"):
        O.check_launch(1024, kernel=O.KernelResources.of(k), info=info)
    x = cp.random.random(4096, dtype=cp.float32)
    y = cp.empty_like(x)
    with pytest.raises(cp.cuda.driver.CUDADriverError, match="OUT_OF_RESOURCES|too many resources"):
        k((4,), (1024,), (x, y, cp.int32(4096)))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["occ_light", "occ_heavy", "occ_smem"])
def test_occupancy_kernels_are_correct(name):
    for n, block in ((1, 32), (1000, 96), (4099, 256), (2048, 512)):
        O.check_occ_kernel(name, n, block, seed=n)
    if name == "occ_smem":
        O.check_occ_kernel(name, 999, 128, dyn_floats=128, seed=3)


# -- the occupancy kernels' references (CPU emulation of the kernels' float32 arithmetic) -------------

def _emulate(name, x, block):
    f = np.float32
    n = x.size
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        if name == "occ_heavy":
            r = [x[(i + k) % n] for k in range(64)]
            for _ in range(4):
                for k in range(64):
                    r[k] = f(f(f(0.5) * r[k]) + f(f(0.25) * r[(k + 1) % 64]))
            s = f(0)
            for v in r:
                s = f(s + v)
            out[i] = s
        else:  # occ_smem
            start = (i // block) * block
            m = start + block - 1 - (i - start)
            out[i] = f(x[i] + (x[m] if m < n else f(0)))
    return out


@pytest.mark.parametrize("name, n, block", [("occ_heavy", 1, 32), ("occ_heavy", 70, 32), ("occ_smem", 1, 32),
                                            ("occ_smem", 1000, 96), ("occ_smem", 33, 64)])
def test_occ_reference_matches_kernel_arithmetic(name, n, block, rng):
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)
    ref = O.occ_reference(name, x, block)
    rtol, atol = O.OCC_TOLERANCE[name]
    got = _emulate(name, x, block).astype(np.float64)
    assert np.all(np.abs(got - ref) <= atol + rtol * np.abs(ref))


def test_occ_reference_light_and_bad_name():
    x = np.array([1.0, 2.0], dtype=np.float32)
    assert O.occ_reference("occ_light", x, 32).tolist() == [3.0, 5.0]
    with pytest.raises(ValueError, match="name must be one of"):
        O.occ_reference("occ_nope", x, 32)
