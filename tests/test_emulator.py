"""The emulator's front and back doors: every course kernel compiles with NVRTC and parses, every
function a kernel reaches compiles to executors (save an explicit list of kernels that are not
emulated); an instruction it cannot run is refused by name and source line; a launch the GPU would
refuse is refused naming the argument; and every hazard kind fires on a minimal faulty kernel at
the right line, and not on its fixed twin (tests/emulator_hazard_cases.py)."""
from __future__ import annotations

import gc
import re

import numpy as np
import pytest

from gpu_viz import emulator as em
from gpu_viz.emulator import hazards as hz
from gpu_viz.emulator import isa
from gpu_viz.kernels import KERNEL_DIR

from emulator_hazard_cases import CASES as HAZARDS
from emulator_hazard_cases import run_emulated as run_hazard

pytestmark = pytest.mark.skipif(not em.available(), reason="NVRTC is not installed (pip install nvidia-cuda-nvrtc)")

PARSE_ARCHES = ("sm_75", "sm_80", "sm_89", "sm_90")
#: Kernels compiled and parsed but not emulated, and the instruction each stops at: the wide
#: rows' cluster kernel on sm_90 (distributed shared memory, mbarrier).  rmsnorm_fused.cu (the
#: production ops: cp.async, createpolicy) is compiled and parsed only, in the slow test below.
NOT_EMULATED = {("rmsnorm_wide.cu", "sm_90", "rmsnorm_cluster_f16_wf16_c4_t1024_e32_m5_we"): "mbarrier"}
PARSE_ONLY = ("rmsnorm_fused.cu",)
KERNEL_FILES = sorted(p.name for p in KERNEL_DIR.glob("*.cu"))


def reachable(module, kernel):
    """The functions a kernel calls, directly or not (itself first), defined in the module."""
    seen, todo = [], [kernel]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.append(f)
        for ins in module.functions[f].code:
            if ins.base == "call":
                callee = module.functions.get(ins.args[1][1])
                if callee is not None and not callee.declared_only:
                    todo.append(callee.name)
    return seen


@pytest.mark.parametrize("traced", [False, True], ids=["plain", "traced"])
@pytest.mark.parametrize("arch", PARSE_ARCHES)
@pytest.mark.parametrize("file", [f for f in KERNEL_FILES if f not in PARSE_ONLY])
def test_course_kernels_compile_parse_and_compile_to_executors(file, arch, traced):
    prog = em.compile_file(file, arch=arch, traced=traced)
    assert prog.kernels, f"{file} ({arch}) has no kernel"
    for kernel in prog.kernels:
        expected = NOT_EMULATED.get((file, arch, kernel))
        if expected is None:
            for f in reachable(prog.module, kernel):
                prog.executors(f)
            continue
        with pytest.raises(em.Unsupported, match=expected):      # the list stays honest
            for f in reachable(prog.module, kernel):
                prog.executors(f)


def test_not_emulated_list_names_real_kernels():
    for (file, arch, kernel) in NOT_EMULATED:
        assert file in KERNEL_FILES and kernel in em.compile_file(file, arch=arch).kernels


@pytest.mark.slow
@pytest.mark.parametrize("arch", PARSE_ARCHES)
@pytest.mark.parametrize("file", PARSE_ONLY)
def test_production_kernels_compile_and_parse(file, arch):
    prog = em.compile_file(file, arch=arch)
    assert len(prog.kernels) > 100 and all(prog.module.functions[k].code for k in prog.kernels)


# -- refusals -----------------------------------------------------------------------------------------------

MMA = r"""
extern "C" __global__ void tensor_core(float* d) {
  unsigned a = threadIdx.x, b = 2 * threadIdx.x;
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3) : "r"(a), "r"(a), "r"(b));
  d[threadIdx.x] = c0 + c1 + c2 + c3;
}

extern "C" __global__ void count_votes(const int* x, int* y) {
  int n = __syncthreads_count(x[threadIdx.x] > 0);
  y[threadIdx.x] = n;
}
"""


def test_unsupported_instruction_names_itself_and_the_line():
    prog = em.compile(MMA, name="mma.cu", arch="sm_80")
    dev = em.Device()
    with pytest.raises(em.Unsupported) as err:
        prog.launch("tensor_core", 1, 32, (dev.zeros(32),), device=dev)
    msg = str(err.value)
    # the asm statement spans lines 5-6; NVRTC's .loc names the one its operands start on
    assert "mma.sync" in msg and re.search(r"mma.cu line [56]\b", msg), msg


def test_unsupported_found_while_running_names_the_line_too():
    prog = em.compile(MMA, name="mma.cu", arch="sm_80")
    dev = em.Device()
    with pytest.raises(em.Unsupported) as err:
        prog.launch("count_votes", 1, 32, (dev.asarray(np.ones(32, np.int32)), dev.zeros(32, np.int32)), device=dev)
    msg = str(err.value)
    assert "bar.red" in msg and "mma.cu line 11" in msg, msg


LAUNCH = r"""
extern "C" __global__ void __launch_bounds__(128) bounded(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0f;
}

extern "C" __global__ void big_shared(float* y, int n) {
  __shared__ float s[10240];              // 40 KiB static
  extern __shared__ float dyn[];
  s[threadIdx.x] = 1.0f;
  dyn[threadIdx.x] = 2.0f;
  __syncthreads();
  if (threadIdx.x < n) y[threadIdx.x] = s[threadIdx.x] + dyn[threadIdx.x];
}
"""


@pytest.mark.parametrize("what, call, words", [
    ("block over 1024", lambda p, d: p.launch("bounded", 1, 1025, (d.zeros(4), np.int32(4)), device=d),
     ["block[0] = 1025", "1..1024"]),
    ("block product over 1024", lambda p, d: p.launch("bounded", 1, (32, 33), (d.zeros(4), np.int32(4)), device=d),
     ["1056 threads", "at most 1024"]),
    ("block z over 64", lambda p, d: p.launch("bounded", 1, (1, 1, 65), (d.zeros(4), np.int32(4)), device=d),
     ["block[2] = 65"]),
    ("__launch_bounds__", lambda p, d: p.launch("bounded", 1, 256, (d.zeros(4), np.int32(4)), device=d),
     ["__launch_bounds__(128)", "256 threads"]),
    ("shared memory", lambda p, d: p.launch("big_shared", 1, 32, (d.zeros(32), np.int32(32)), device=d,
                                            shared_mem=16 * 1024), ["shared memory", "49152"]),
    ("argument count", lambda p, d: p.launch("bounded", 1, 32, (d.zeros(4),), device=d),
     ["takes 2 arguments, got 1"]),
    ("argument size", lambda p, d: p.launch("bounded", 1, 32, (d.zeros(4), np.int64(4)), device=d),
     ["argument 1", "int64", "4 bytes"]),
    ("host array", lambda p, d: p.launch("bounded", 1, 32, (np.zeros(4, np.float32), np.int32(4)), device=d),
     ["argument 0", "host numpy array", "device.asarray"]),
    ("device array for a scalar", lambda p, d: p.launch("bounded", 1, 32, (d.zeros(4), d.zeros(4)), device=d),
     ["argument 1", "device array"]),
    ("grid of zero", lambda p, d: p.launch("bounded", 0, 32, (d.zeros(4), np.int32(4)), device=d),
     ["grid[0] = 0"]),
    ("unknown kernel", lambda p, d: p.launch("nope", 1, 32, (), device=d), ["no kernel named 'nope'", "bounded"]),
])
def test_launch_errors_name_what_is_wrong(what, call, words):
    prog = em.compile(LAUNCH, name="launch.cu")
    with pytest.raises(em.LaunchError) as err:
        call(prog, em.Device())
    msg = str(err.value)
    assert all(w in msg for w in words), (what, msg)


def test_negative_shared_mem_is_refused():
    prog = em.compile(LAUNCH, name="launch.cu")
    dev = em.Device()
    with pytest.raises(ValueError, match="shared_mem"):
        prog.launch("big_shared", 1, 32, (dev.zeros(32), np.int32(32)), device=dev, shared_mem=-4)


GLOBALS = r"""
__device__ int table[4] = {11, 22, 33, 44};
__constant__ float weights[2] = {0.5f, 0.25f};
extern "C" __global__ void lookup(const int* k, float* y) {
  int t = threadIdx.x;
  y[t] = table[k[t] & 3] * weights[t & 1];
}
"""


def test_module_variables_are_placed_on_every_new_device():
    """A program's __device__ / __constant__ variables live on each device it runs on, also when a
    freed device's memory (and id()) is reused by the next one."""
    prog = em.compile(GLOBALS, name="globals.cu")
    k = np.arange(32, dtype=np.int32)
    want = np.array([11, 22, 33, 44], np.float32)[k & 3] * np.array([0.5, 0.25], np.float32)[k & 1]
    for _ in range(4):
        dev = em.Device()
        y = dev.full(32, np.nan, np.float32)
        run = prog.launch("lookup", 1, 32, (dev.asarray(k), y), device=dev)
        assert not run.hazards.errors(), [h.text() for h in run.hazards]
        np.testing.assert_array_equal(y.get(), want)
        del dev, y, run
        gc.collect()


#: A use of each intrinsic in nvrtc.NEWER_INTRINSICS (y: int*).
NEWER_USES = {
    **{f"__reduce_{op}_sync": f"y[0] = __reduce_{op}_sync(0xffffffffu, (unsigned)threadIdx.x);"
       for op in ("add", "min", "max", "and", "or", "xor")},
    "__isClusterShared": "y[0] = __isClusterShared(y);",
    "__cluster_query_shared_rank": "y[0] = __cluster_query_shared_rank(y);",
    "__cluster_barrier_arrive": "__cluster_barrier_arrive();",
    "__cluster_barrier_wait": "__cluster_barrier_wait();",
    "__threadfence_cluster": "__threadfence_cluster();",
}


@pytest.mark.parametrize("name", sorted(NEWER_USES))
def test_an_intrinsic_of_a_newer_architecture_says_which_to_compile_for(name):
    """Bug class: __reduce_add_sync at the default sm_75 failed with NVRTC's bare 'identifier is
    undefined'.  Each intrinsic the table names fails one architecture below the one it names, with
    a hint naming that one, and compiles there."""
    from gpu_viz import kernels
    from gpu_viz.emulator import nvrtc

    assert set(NEWER_USES) == set(nvrtc.NEWER_INTRINSICS)
    need = nvrtc.NEWER_INTRINSICS[name]
    below = nvrtc.ARCHES[nvrtc.ARCHES.index(need) - 1]
    src = 'extern "C" __global__ void k(int* y) {\n  ' + NEWER_USES[name] + "\n}\n"
    with pytest.raises(kernels.KernelCompileError) as e:
        em.compile(src, name="newer.cu", arch=below)
    assert f"{name} needs {need} or newer, this compile is for {below}: compile for arch='{need}'" in str(e.value)
    # on the log's first error line: the one compile messages (an exercise's verdict too) quote
    first = next(ln for ln in e.value.log.splitlines() if "error" in ln)
    assert first.startswith("newer.cu(2): error:") and f"compile for arch='{need}'" in first
    em.compile(src, name="newer.cu", arch=need)


def test_an_unknown_identifier_gets_no_architecture_hint():
    from gpu_viz import kernels

    with pytest.raises(kernels.KernelCompileError) as e:
        em.compile('extern "C" __global__ void k(int* y) { y[0] = __reduce_sum_sync(0xffffffffu, 1); }',
                   name="typo.cu")
    assert 'identifier "__reduce_sum_sync" is undefined' in str(e.value) and "compile for arch" not in str(e.value)


# -- hazards ---------------------------------------------------------------------------------------------------

def launch_hazard(case, faulty, arch, rng, **options):
    return run_hazard(case, faulty, arch, rng, **options)[0]


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_hazard_fires_at_its_line_and_not_on_the_fixed_twin(name, arch, rng):
    case = HAZARDS[name]
    run = launch_hazard(case, True, arch, rng)
    found = [h for h in run.hazards.errors() if h.kind == case.kind]
    assert found, (name, [h.text() for h in run.hazards])
    assert found[0].where.line in case.lines(), (name, case.lines(), found[0].text())
    assert found[0].where.file == f"{name}.cu"
    assert found[0].tool == case.tool, (name, found[0].tool)
    fixed = launch_hazard(case, False, arch, rng)
    assert fixed.completed and not fixed.hazards.errors(), (name, [h.text() for h in fixed.hazards.errors()])


def test_hazard_messages_say_what_happened(rng):
    texts = {name: " ".join(h.text() for h in launch_hazard(HAZARDS[name], True, "sm_75", rng).hazards)
             for name in ("oob_read", "null_pointer", "shared_race", "lockstep", "uninit_shared", "shuffle_mask",
                          "runaway", "barrier_two_places", "global_race")}
    assert "arg0[40], just past the end of arg0 (40 elements)" in texts["oob_read"]
    assert "null pointer" in texts["null_pointer"]
    assert "no __syncthreads() between" in texts["shared_race"]
    assert "__syncwarp()" in texts["lockstep"]
    assert "s[32]" in texts["uninit_shared"] and "nothing in this block wrote" in texts["uninit_shared"]
    assert "lanes 4-31 do not exist" in texts["shuffle_mask"]
    assert "20,000 warp-instructions" in texts["runaway"]
    assert "2 different __syncthreads()" in texts["barrier_two_places"]
    assert "in another block" in texts["global_race"]


def test_every_hazard_kind_has_a_case():
    untested = set(hz.KINDS) - {c.kind for c in HAZARDS.values()}
    # the shuffle-source note, the 32-bit index wrap and a trap have their own tests
    assert untested <= {hz.SHUFFLE_SOURCE, hz.NARROW_INDEX, hz.TRAP}, untested


def test_runaway_stops_the_launch():
    run = launch_hazard(HAZARDS["runaway"], True, "sm_75", np.random.default_rng(0))
    assert not run.completed and run.warp_instructions <= 20_001


@pytest.mark.parametrize("name", ["cas_loop", "cas_max_float"])
def test_a_compare_and_swap_loop_is_exact_and_its_read_only_a_note(name, rng):
    """Bug class: the plain read a compare-and-swap loop starts from (and re-reads through atomicCAS's
    return) was reported as a race with the other threads' atomicCAS; the CAS validates that read,
    so it is a note, and the loop's result is exact."""
    case = HAZARDS[name]
    notes = []
    for seed in range(4):
        options = {"policy": "random", "seed": seed} if seed else {}
        run, (x, out) = run_hazard(case, False, "sm_75", np.random.default_rng(seed), **options)
        assert run.completed and not run.hazards.errors(), [h.text() for h in run.hazards.errors()]
        if name == "cas_loop":
            np.testing.assert_array_equal(out, np.bincount(x, minlength=4))
        else:
            assert out[0] == x.max()
        notes += [h for h in run.hazards if h.severity == "note" and h.kind == hz.RACE]
    # the loop's first read comes after another thread's atomicCAS in some interleavings
    assert notes and "atomicCAS" in notes[0].message and "not a race error" in notes[0].message
    assert notes[0].other is not None and notes[0].other.line != notes[0].where.line


MIXED = r"""
extern "C" __global__ void reset_while_counting(int* c) {
  if (threadIdx.x >= 32) c[0] = 0;      // warp 1 resets what warp 0 counts
  else atomicAdd(c, 1);
}

extern "C" __global__ void read_counts_early(int* c, int* seen) {
  atomicAdd(&c[threadIdx.x % 4], 1);
  seen[threadIdx.x] = c[(threadIdx.x + 1) % 4];   // taken as final, with other blocks still counting
}

extern "C" __global__ void read_plain_writes(int* c, int* seen) {
  if (threadIdx.x >= 32) c[threadIdx.x % 4] = threadIdx.x;
  else seen[threadIdx.x] = c[threadIdx.x % 4];
}
"""


@pytest.mark.parametrize("kernel", ["reset_while_counting", "read_counts_early", "read_plain_writes"])
def test_a_plain_write_is_still_a_race_with_atomics_and_plain_reads(kernel):
    """Only a compare-and-swap loop's read of what atomics wrote is let off: a plain write racing
    with atomics (its value can be lost under them), a plain read of atomically added counts that
    takes them as final (no atomicCAS checks it), and a plain read of plain writes stay race errors."""
    prog = em.compile(MIXED, name="mixed.cu")
    dev = em.Device()
    c = dev.zeros(4, np.int32)
    args = (c,) if kernel == "reset_while_counting" else (c, dev.zeros(64, np.int32))
    run = prog.launch(kernel, 2, 64, args, device=dev)
    races = [h for h in run.hazards.errors() if h.kind == hz.RACE]
    assert races, [h.text() for h in run.hazards]


def test_notes_do_not_crowd_the_errors_of_their_kind_out_of_the_log():
    log = hz.HazardLog(per_kind=2)
    for k in range(5):
        log.add(hz.Hazard(hz.RACE, f"note {k}", severity="note"))
    log.add(hz.Hazard(hz.RACE, "the race"))
    assert [h.message for h in log.errors()] == ["the race"]
    assert sum(h.severity == "note" for h in log) == 2


SYNCWARP = r"""
extern "C" __global__ void bare(const float* x, float* y) {
  __shared__ float s[1024];
  int t = threadIdx.x;
  s[t] = x[t];
  __syncwarp();
  y[t] = s[(t ^ 1) < blockDim.x ? t ^ 1 : t];
}

extern "C" __global__ void after_return(const float* x, float* y, int n) {
  __shared__ float s[1024];
  int t = threadIdx.x;
  if (t >= n) return;
  s[t] = x[t];
  __syncwarp();
  y[t] = s[(t + 1) % n];
}

extern "C" __global__ void split(float* y) {
  int lane = threadIdx.x % 32;
  if (lane < 16) {
    y[threadIdx.x] = 1.0f;
    __syncwarp();
  } else {
    y[threadIdx.x] = 2.0f;
  }
  __syncwarp();
}

extern "C" __global__ void shuffle(const float* x, float* y) {
  float v = x[threadIdx.x];
  y[threadIdx.x] = v + __shfl_down_sync(0xffffffffu, v, 1);
}
"""


@pytest.mark.parametrize("block", [1, 7, 33, 48, 100])
def test_a_full_mask_syncwarp_in_a_partial_warp_or_after_a_return_is_no_hazard(block):
    """Bug class: __syncwarp() (bar.warp.sync 0xffffffff) where the warp has fewer live lanes was
    reported as a shuffle-mask fault.  It waits for the NON-EXITED lanes of its mask (CUDA
    Programming Guide): lanes a partial warp does not have, lanes that returned, and lanes on their
    way out of the kernel with no __syncwarp left count as exited."""
    prog = em.compile(SYNCWARP, name="syncwarp.cu")
    dev = em.Device()
    x = np.arange(block, dtype=np.float32)
    y = dev.zeros(block)
    run = prog.launch("bare", 1, block, (dev.asarray(x), y), device=dev)
    assert run.completed and not run.hazards.errors(), [h.text() for h in run.hazards]
    partner = np.where((np.arange(block) ^ 1) < block, np.arange(block) ^ 1, np.arange(block))
    np.testing.assert_array_equal(y.get(), x[partner])
    n = max(1, block - 5)
    y = dev.zeros(block)
    run = prog.launch("after_return", 1, block, (dev.asarray(x), y, np.int32(n)), device=dev)
    assert run.completed and not run.hazards.errors(), [h.text() for h in run.hazards]
    np.testing.assert_array_equal(y.get()[:n], x[(np.arange(n) + 1) % n])


def test_sync_mask_faults_name_their_instruction():
    """A full-mask shuffle in a partial warp stays a fault (the value it reads from a lane that does
    not exist is undefined), and so does a __syncwarp that lanes still to reach another __syncwarp
    are missing; each message names the intrinsic and the PTX instruction it is about."""
    prog = em.compile(SYNCWARP, name="syncwarp.cu")
    dev = em.Device()
    run = prog.launch("shuffle", 1, 48, (dev.asarray(np.ones(48, np.float32)), dev.zeros(48)), device=dev)
    found = [h for h in run.hazards.errors() if h.kind == hz.SHUFFLE_MASK]
    assert found and found[0].message.startswith("__shfl_down_sync (shfl.sync.down.b32) with mask 0xffffffff: "
                                                 "lanes 16-31 do not exist"), [h.text() for h in run.hazards]
    assert found[0].details["instruction"].startswith("shfl.sync") and "syncwarp" not in found[0].message
    notes = [h for h in run.hazards if h.kind == hz.SHUFFLE_SOURCE]
    assert notes and notes[0].message.startswith("__shfl_down_sync (shfl.sync.down.b32): lane 15 reads lane 16")
    run = prog.launch("split", 1, 32, (dev.zeros(32),), device=dev)
    found = [h for h in run.hazards.errors() if h.kind == hz.SHUFFLE_MASK]
    assert found and found[0].message.startswith("__syncwarp (bar.warp.sync) with mask 0xffffffff: lanes"), \
        [h.text() for h in run.hazards]
    assert "other side of a branch" in found[0].message and "shfl" not in found[0].message
    assert found[0].details["instruction"] == "bar.warp.sync"


FOREVER = r"""
extern "C" __global__ void forever(int* y) {
  int k = 0;
  while (1) {
    k++;
    if (k == -5) break;
  }
  y[threadIdx.x] = k;
}
"""


def test_a_loop_that_never_ends_is_stopped_by_its_block_s_budget():
    """Bug class: a while(1) launched through the API ran a minute (the time limit) before it was
    reported: one block's warps may issue only so many warp-instructions (block_budget), which a
    loop that never ends reaches in seconds; the message names the limit and the line."""
    prog = em.compile(FOREVER, name="forever.cu")
    dev = em.Device()
    run = prog.launch("forever", 2, 64, (dev.zeros(128, np.int32),), device=dev, block_budget=30_000)
    assert not run.completed and run.warp_instructions <= 30_000 + 64
    h = next(h for h in run.hazards if h.kind == hz.RUNAWAY)
    body = [FOREVER.split("\n").index(text) + 1 for text in ("    k++;", "    if (k == -5) break;")]
    assert h.message.startswith("did not finish: block 0's warps issued ") and "one block may issue" in h.message
    assert h.details["line"] in body and f"line {h.details['line']} ran" in h.message
    assert "default limit" not in h.message    # the caller chose it
    assert h.details["limit"] == "block_budget"


@pytest.mark.parametrize("option, value", [("block_budget", 0), ("budget", -1), ("block_budget", 1.5),
                                           ("time_limit", 0), ("time_limit", float("nan")), ("budget", True)])
def test_launch_limits_are_checked(option, value):
    prog = em.compile(FOREVER, name="forever.cu")
    dev = em.Device()
    with pytest.raises(ValueError, match=option):
        prog.launch("forever", 1, 32, (dev.zeros(32, np.int32),), device=dev, **{option: value})


@pytest.mark.slow
def test_by_default_a_loop_that_never_ends_is_stopped_in_seconds_and_says_how_to_raise_the_limit():
    """With the default limits a block of 8 spinning warps reaches the block budget (seconds), long
    before the launch's total budget or the time limit; the message says how to raise it."""
    import time

    from gpu_viz.emulator import machine

    prog = em.compile(FOREVER, name="forever.cu")
    dev = em.Device()
    t0 = time.perf_counter()
    run = prog.launch("forever", 4, 256, (dev.zeros(1024, np.int32),), device=dev)
    assert not run.completed and time.perf_counter() - t0 < machine.DEFAULT_TIME_LIMIT
    h = next(h for h in run.hazards if h.kind == hz.RUNAWAY)
    assert h.details["limit"] == "block_budget"
    assert "(the default limit: a longer kernel can pass launch(..., block_budget=...))" in h.message


@pytest.mark.slow
def test_the_default_block_budget_is_well_above_the_longest_lesson_block():
    """The lesson block that issues the most (notebook 05's grid-stride loop over 2^20 elements on
    one warp: about a million warp-instructions) is at most a quarter of the default block budget."""
    from gpu_viz import lessons
    from gpu_viz.emulator import machine

    with em.emulated() as session:
        lessons.LESSONS["grid_stride"].module("record").trace(
            *lessons.LESSONS["grid_stride"].inputs(1, n=1 << 20, grid=1, block=32)[0],
            **lessons.LESSONS["grid_stride"].inputs(1, n=1 << 20, grid=1, block=32)[1], seed=1)
    (run,) = session.runs
    assert run.completed
    assert 4 * run.warp_instructions <= machine.DEFAULT_BLOCK_BUDGET, run.warp_instructions


RECURSION = r"""
__device__ int depth(int n) { return n == 0 ? 0 : 1 + depth(n - 1); }
__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
extern "C" __global__ void linear(int* y, int n) { y[threadIdx.x] = depth(n); }
extern "C" __global__ void tree(int* y, int n) { y[threadIdx.x] = fib(n); }
"""


def test_recursion_is_refused_naming_the_gpu_stack_and_recursion_nvvm_loops_runs():
    """A real recursive call (fib: two calls, no loop can replace them) is refused with the reason:
    on a GPU every call takes a frame of a 1 KiB stack.  A recursion NVVM turns into a loop has no
    call left and runs, as it would on silicon (no stack, no overflow at any depth)."""
    prog = em.compile(RECURSION, name="recursion.cu")
    assert "call" not in prog.ptx.split(".entry linear")[1].split(".entry")[0]
    dev = em.Device()
    y = dev.zeros(32, np.int32)
    run = prog.launch("linear", 1, 32, (y, np.int32(200_000)), device=dev)
    assert run.completed and (y.get() == 200_000).all()
    with pytest.raises(isa.Unsupported, match=r"recursion: _Z3fibi calls itself.*1 KiB by default, cudaLimitStackSize"):
        prog.launch("tree", 1, 32, (y, np.int32(10)), device=dev)


# -- the random interleaving policy -----------------------------------------------------------------------------

HISTOGRAM = r"""
extern "C" __global__ void racy_histogram(const int* v, int* hist, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) hist[v[i]] = hist[v[i]] + 1;
}

extern "C" __global__ void atomic_histogram(const int* v, int* hist, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&hist[v[i]], 1);
}
"""


def test_random_policy_shows_a_race_s_outcomes_and_atomics_stay_exact(rng):
    prog = em.compile(HISTOGRAM, name="histogram.cu")
    n = 256
    v = rng.integers(0, 4, n).astype(np.int32)
    exact = np.bincount(v, minlength=4)
    outcomes = {}
    for kernel in ("racy_histogram", "atomic_histogram"):
        seen = set()
        for seed in range(8):
            dev = em.Device()
            hist = dev.zeros(4, np.int32)
            run = prog.launch(kernel, 4, 64, (dev.asarray(v), hist, np.int32(n)), device=dev, policy="random",
                              seed=seed)
            assert run.completed
            seen.add(tuple(hist.get().tolist()))
            if kernel == "racy_histogram":
                assert any(h.kind == hz.RACE for h in run.hazards)
            else:
                assert not run.hazards.errors(), [h.text() for h in run.hazards]
        outcomes[kernel] = seen
    assert outcomes["atomic_histogram"] == {tuple(exact.tolist())}
    assert len(outcomes["racy_histogram"]) > 1, outcomes       # the interleaving changes the answer
    assert tuple(exact.tolist()) not in outcomes["racy_histogram"] or len(outcomes["racy_histogram"]) > 2


def test_random_policy_is_replayable_by_seed(rng):
    prog = em.compile(HISTOGRAM, name="histogram.cu")
    v = rng.integers(0, 4, 256).astype(np.int32)
    results = []
    for _ in range(2):
        dev = em.Device()
        hist = dev.zeros(4, np.int32)
        prog.launch("racy_histogram", 4, 64, (dev.asarray(v), hist, np.int32(256)), device=dev, policy="random",
                    seed=1234)
        results.append(hist.get())
    np.testing.assert_array_equal(results[0], results[1])


COPY = r"""
extern "C" __global__ void copy(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x]; }
"""


def test_host_writes_into_empty_device_memory_count_as_initialised():
    prog = em.compile(COPY, name="copy.cu")
    dev = em.Device()
    x = dev.empty(64, np.float32, name="x")
    x[:40] = np.arange(40, dtype=np.float32)             # written from the host: defined
    y = dev.zeros(64, np.float32)
    run = prog.launch("copy", 1, 40, (x, y), device=dev)
    assert not run.hazards.errors(), [h.text() for h in run.hazards]
    run = prog.launch("copy", 1, 64, (x, y), device=dev)  # x[40:] was never written
    found = [h for h in run.hazards.errors() if h.kind == hz.UNINITIALIZED]
    assert found and "x[40]" in found[0].message, [h.text() for h in run.hazards]


# -- memory-traffic counts -------------------------------------------------------------------------------------

PATTERNS = r"""
extern "C" __global__ void patterns(const float* x, float* y, int stride) {
  __shared__ float s[32 * 33];
  int t = threadIdx.x;
  s[t * stride % (32 * 33)] = x[t];
  __syncwarp();
  y[t] = x[t * stride] + s[t * stride % (32 * 33)];
}
"""


# global: the load of x[t * stride] plus x[t] and y[t] (4 sectors each); shared: a store and a load
@pytest.mark.parametrize("stride, sectors, wavefronts", [(1, 4 + 8, 1), (2, 8 + 8, 2), (32, 32 + 8, 32),
                                                          (33, 32 + 8, 1)])
def test_sectors_per_request_and_bank_conflicts_of_textbook_patterns(stride, sectors, wavefronts):
    prog = em.compile(PATTERNS, name="patterns.cu")
    dev = em.Device()
    run = prog.launch("patterns", 1, 32, (dev.asarray(np.ones(32 * 33, np.float32)), dev.zeros(32), np.int32(stride)),
                      device=dev)
    got = run.memory_summary()
    assert (got["global_requests"], got["global_sectors"]) == (3, sectors), got
    assert (got["shared_wavefronts"], got["shared_bank_conflicts"]) == (2 * wavefronts, 2 * wavefronts - 2), got
    assert not run.hazards.errors()


def test_per_warp_counts_of_a_group_equal_the_one_warp_definitions(rng):
    """The scheduler counts the warps of a group at once (memory.sectors_per_warp,
    wavefronts_per_warp); the sums must be those of memory.sectors / bank_wavefronts per warp."""
    from gpu_viz.emulator import memory as mem

    for _ in range(200):
        nbytes = int(rng.choice([1, 2, 4, 8, 16]))
        nw = int(rng.integers(1, 5))
        lanes = np.concatenate([np.sort(rng.choice(32, int(rng.integers(1, 33)), replace=False)) for _ in range(nw)])
        warps = np.concatenate([np.full(k, w) for w, k in enumerate(np.diff(np.flatnonzero(
            np.r_[True, np.diff(lanes) <= 0, True])))]).astype(np.int64)
        pattern = rng.integers(4)
        if pattern == 0:
            offs = lanes * nbytes
        elif pattern == 1:
            offs = lanes * nbytes * int(rng.integers(2, 40))
        elif pattern == 2:
            offs = np.full(lanes.size, 4 * int(rng.integers(0, 64)))
        else:
            offs = rng.integers(0, 4096, lanes.size) * (nbytes if rng.integers(2) else 1)   # straddles, too
        base = 0x7F00_0000_0000
        got = mem.sectors_per_warp(warps, base + offs, nbytes)
        want = (len(set(warps.tolist())),
                sum(mem.sectors(base + offs[warps == w], nbytes) for w in set(warps.tolist())))
        assert got == want, (nbytes, pattern)
        got = mem.wavefronts_per_warp(warps, lanes, offs, nbytes)
        parts = [mem.bank_wavefronts(lanes[warps == w], offs[warps == w], nbytes) for w in set(warps.tolist())]
        assert got == (sum(p[0] for p in parts), sum(p[1] for p in parts)), (nbytes, pattern)


def test_warp_masks_packs_each_warp_s_lanes(rng):
    from gpu_viz.emulator.machine import mask_of, warp_masks

    for _ in range(300):
        nw = int(rng.integers(1, 33))
        t = np.sort(rng.choice(nw * 32, int(rng.integers(0, nw * 32 + 1)), replace=False))
        assert warp_masks(t, nw) == [mask_of(t[t // 32 == w] % 32) for w in range(nw)]


SPIN = r"""
extern "C" __global__ void cas_add(float* sum, const float* x) {
  unsigned* a = (unsigned*)sum;
  unsigned old = *a, assumed;
  do {
    assumed = old;
    old = atomicCAS(a, assumed, __float_as_uint(__uint_as_float(assumed) + x[threadIdx.x]));
  } while (assumed != old);
}

extern "C" __global__ void spin_lock(int* lock, int* counter) {
  while (atomicCAS(lock, 0, 1) != 0) { }
  counter[0] += 1;
  atomicExch(lock, 0);
}
"""


def test_a_compare_and_swap_loop_of_one_warp_finishes_exactly():
    prog = em.compile(SPIN, name="spin.cu")
    dev = em.Device()
    total = dev.zeros(1)
    run = prog.launch("cas_add", 1, 64, (total, dev.asarray(np.arange(64, dtype=np.float32))), device=dev)
    assert run.completed and total.get()[0] == np.arange(64).sum(), [h.text() for h in run.hazards]


def test_a_lock_within_one_warp_is_stopped_and_explained():
    """Lanes of one warp taking a spin lock: fine on sm_70+ (independent thread scheduling), a
    deadlock under the stack reconvergence the emulator models; it must say which lanes wait."""
    prog = em.compile(SPIN, name="spin.cu")
    dev = em.Device()
    run = prog.launch("spin_lock", 1, 32, (dev.zeros(1, np.int32), dev.zeros(1, np.int32)), device=dev, budget=20_000)
    assert not run.completed
    msg = " ".join(h.message for h in run.hazards if h.kind == hz.RUNAWAY)
    line = SPIN.split("\n").index("  counter[0] += 1;") + 1
    assert f"Lanes 0 of warp 0 have left the loop and wait at line {line}" in msg, msg
    assert "independent thread scheduling" in msg


def test_emulated_arithmetic_prints_no_numpy_warnings():
    """Overflow, NaN and signalling-NaN conversions are the emulated arithmetic: numpy's
    RuntimeWarnings used to reach the learner's notebook from inside the executors."""
    import warnings

    src = r"""
    extern "C" __global__ void ops(const float* x, float* y) {
      int t = threadIdx.x;
      y[t] = __fmaf_rz(x[t], 3e38f, x[t]) + __fdiv_ru(x[t], 0.0f) + (float)(double)x[t];
    }"""
    prog = em.compile(src, name="warn.cu")
    dev = em.Device()
    x = np.array([0x7F800001, 0x7F7FFFFF, 0xFF800000, 0] * 8, np.uint32).view(np.float32)   # sNaN, max, -inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = prog.launch("ops", 1, 32, (dev.asarray(x), dev.zeros(32)), device=dev)
    assert run.completed


def test_a_lambda_inside_a_kernel_compiles_with_every_nvrtc():
    """Bug class: kernels/rmsnorm_fused.cu's lambdas compiled with NVRTC 13.2 (the H200 runs) but not
    with older NVRTCs (CUDA 12 on Colab, 13.0 here): "host functions are not allowed in JIT mode".
    The NVRTC options every compile gets make unannotated functions device functions."""
    from gpu_viz import kernels

    assert "-default-device" in kernels.BASE_OPTIONS
    src = r"""
extern "C" __global__ void twice(float* y, int n) {
  auto scale = [&](auto i) { y[i] = 2.0f * y[i]; };   // generic, as rmsnorm_fused.cu's are
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scale(i);
}"""
    prog = em.compile(src, name="lambda.cu", arch="sm_75")
    dev = em.Device()
    y = dev.asarray(np.arange(40, dtype=np.float32))
    prog.launch("twice", 2, 32, (y, np.int32(40)), device=dev)
    assert np.array_equal(y.get(), 2 * np.arange(40, dtype=np.float32))
