"""Write-the-kernel exercises: the learner's CUDA source, compiled with NVRTC (the options and
headers of :mod:`gpu_viz.kernels`), run at many launch shapes on poisoned outputs, graded, and
the likely mistake named from *what the kernel wrote* (which elements, how often, at which
block sizes).  In CPU mode nothing can run a kernel: the verdict says so (``ok is None``) and
shows the committed record of the reference solution's run (``gpu-viz record exercises``).
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional

import numpy as np

from .. import backend, kernels, words
from . import sources
from .core import KERNEL, Exercise, Verdict, register

PAD = 1024  # poisoned elements past n: a write there is a write out of bounds



def compile_source(code: str, kernel: str):
    """``kernel`` of the CUDA source ``code``, compiled with NVRTC for this GPU (``kernels/``
    headers on the include path); ``cupy.RawKernel``.

    Raises:
        TypeError: ``code`` is not a string.  GPUUnavailable: CPU mode.
        KernelCompileError: with NVRTC's log (the file is named "your kernel").
    """
    if not isinstance(code, str):
        raise TypeError(f"the kernel source must be a string of CUDA C, got {type(code).__name__}")
    cp = backend.require_cupy("compiling your kernel")
    opts = kernels.BASE_OPTIONS + (f"-I{kernels.KERNEL_DIR}",)
    mod = cp.RawModule(code=code, options=opts)
    try:
        mod.compile()
    except cp.cuda.compiler.CompileException as exc:
        log = exc.get_message() if hasattr(exc, "get_message") else str(exc)
        raise kernels.KernelCompileError("your kernel", None, log) from None
    return mod.get_function(kernel)


def _compile_or_verdict(eid: str, code: str, kernel: str):
    try:
        return compile_source(code, kernel), None
    except kernels.KernelCompileError as exc:
        first = next((ln for ln in exc.log.splitlines() if "error" in ln), exc.log.strip()[:200])
        return None, Verdict(eid, False, f"it does not compile: {first.strip()}")
    except Exception as exc:  # noqa: BLE001  (e.g. no kernel of that name)
        return None, Verdict(eid, False, f"could not load `{kernel}` from your source: {exc}")


#: What CPU mode can read off a learner's kernel without running it: (the exercises it applies to,
#: a test on the source, the message when the test finds the mistake).
_SOURCE_READS = (
    (("03.vector_add", "06.grid_stride"), lambda c: "threadIdx.x" not in c or "blockIdx.x" not in c,
     "the index does not use both blockIdx.x and threadIdx.x: every block would redo the same elements."),
    (("03.vector_add", "06.grid_stride"), lambda c: re.search(r"<\s*n\b", c) is None,
     "there is no `i < n` bound: the last block's extra threads would write past the array."),
    (("06.grid_stride",), lambda c: "gridDim.x" not in c,
     "the stride does not use gridDim.x: a grid-stride loop steps by blockDim.x * gridDim.x."),
)


def _source_reads(eid: str, code: str) -> List[str]:
    """The mistakes CPU mode reads off the source of ``eid``'s kernel (comments stripped)."""
    src = re.sub(r"//[^\n]*|/\*.*?\*/", "", code or "", flags=re.S)
    found = [msg for ids, test, msg in _SOURCE_READS if eid in ids and test(src)]
    if eid in ("09.block_sum", "09.fix_deck"):
        found += source_hazards(src, partial_warps=True)
    return found


def _cpu_verdict(eid: str, code: str = "") -> Verdict:
    """CPU mode: the learner's kernel is not run (no GPU); what its source shows, and -- marked as
    the reference solution's, not theirs -- the recorded GPU run of the reference solution."""
    from ..measure import records

    reads = _source_reads(eid, code)
    d = [f"read off your source (not run): {m}" for m in reads]
    if code and not reads:
        d.append("read off your source (not run): none of the classic mistakes this check knows; "
                 "only a GPU run can grade it.")
    rec = records.newest("*-exercises.json")
    row = next((r for r in (rec or {}).get("rows", []) if r.get("impl") == eid), None)
    if row:
        d.append(f"for comparison, the REFERENCE solution (not your kernel), {records.label(rec)}: "
                 f"{row['message']} ({row['launches']} launches)")
    else:
        d.append("no recorded run of the reference solution yet "
                 "(on a GPU: gpu-viz record exercises --out benchmarks/results)")
    return Verdict(eid, None, "YOUR kernel was not run: running it needs a GPU runtime (on Colab: Runtime > "
                   "Change runtime type, then pick a GPU).", d, not_graded_because="needs a GPU runtime")


# == 03: vector add ===================================================================================

VA_SHAPES = ((64, 64), (100, 32), (1000, 96), (4097, 256), (1, 1024), (70000, 128))


def _va_written(n: int, block: int, index) -> np.ndarray:
    """Which elements a kernel with thread index ``index(b, t, grid)`` writes under ``i < n``."""
    grid = -(-n // block)
    b, t = np.meshgrid(np.arange(grid), np.arange(block), indexing="ij")
    i = index(b, t, grid).reshape(-1)
    w = np.zeros(n + PAD, bool)
    w[i[i < n]] = True
    return w


_VA_CANDIDATES = {
    "your index ignores blockIdx.x: every block writes the first blockDim.x elements. Use "
    "i = blockIdx.x * blockDim.x + threadIdx.x.": lambda b, t, g: t,
    "your index multiplies blockIdx.x by gridDim.x: the block's offset is blockIdx.x * blockDim.x "
    "(blockDim = threads per block, gridDim = blocks).": lambda b, t, g: b * g + t,
}


def diagnose_vector_add(c: np.ndarray, A: np.ndarray, B: np.ndarray, n: int, block: int) -> Optional[str]:
    """What is wrong with ``c`` (the NaN-poisoned output, n + PAD long) of one launch, in the learner's
    terms; None when it is right."""
    where = f"(n={n}, block={block}, grid={-(-n // block)})"
    if np.isfinite(c[n:]).any():
        k = int(np.argmax(np.isfinite(c[n:]))) + n
        return (f"C[{k}] was written though n = {n} {where}: the last block has threads past the end; guard "
                "the write with `if (i < n)`.")
    written = np.isfinite(c)
    want = A + B
    if written[:n].all() and np.array_equal(c[:n], want[:n]):
        return None
    for msg, index in _VA_CANDIDATES.items():
        if np.array_equal(written, _va_written(n, block, index)):
            return f"{msg} {where}"
    miss = np.flatnonzero(~written[:n])
    if miss.size:
        return (f"{miss.size} of {n} elements were never written (first C[{miss[0]}]) {where}: each thread "
                "handles i = blockIdx.x * blockDim.x + threadIdx.x.")
    k = int(np.flatnonzero(c[:n] != want[:n])[0])
    return (f"C[{k}] = {c[k]!r}, want A[{k}] + B[{k}] = {want[k]!r} {where}: check the sum and that thread i "
            "reads A[i] and B[i].")


def check_vector_add(code: str) -> Verdict:
    eid = "03.vector_add"
    if not backend.has_gpu():
        return _cpu_verdict(eid, code)
    cp = backend.require_cupy("03.vector_add")
    fn, bad = _compile_or_verdict(eid, code, "vector_add")
    if bad:
        return bad
    rng = np.random.default_rng()
    for n, block in VA_SHAPES:
        A = rng.standard_normal(n + PAD).astype(np.float32)
        B = rng.standard_normal(n + PAD).astype(np.float32)
        C = cp.full(n + PAD, np.nan, cp.float32)
        fn((-(-n // block),), (block,), (cp.asarray(A), cp.asarray(B), C, np.int32(n)))
        msg = diagnose_vector_add(cp.asnumpy(C), A, B, n, block)
        if msg:
            return Verdict(eid, False, msg)
    return Verdict(eid, True, f"right at all {len(VA_SHAPES)} launch shapes, no write past n.",
                   [f"shapes (n, block): {', '.join(f'({n}, {b})' for n, b in VA_SHAPES)}; {backend.live_label()}"])


# == 06: grid-stride loop =============================================================================

GS_SHAPES = ((2048, 1, 1024), (2500, 1, 1024), (700, 1, 1024), (10000, 3, 256), (5000, 7, 96), (1, 4, 32))


def diagnose_grid_stride(v: np.ndarray, y: np.ndarray, x: np.ndarray, alpha, n: int, grid: int,
                         block: int) -> Optional[str]:
    """What is wrong with one launch's ``visits`` and ``y`` (n + PAD long), in the learner's terms;
    None when every element was visited once and y = alpha * x."""
    where = f"(n={n}, grid={grid}, block={block}: {grid * block} threads)"
    T = grid * block
    if v[n:].any():
        return (f"element {n + int(np.argmax(v[n:] > 0))} was visited though n = {n} {where}: the loop must "
                "stop at i < n (not i <= n).")
    if (v[:n] == 1).all():
        want = (np.float32(alpha) * x[:n]).astype(np.float32)
        if np.array_equal(y[:n], want):
            return None
        k = int(np.flatnonzero(y[:n] != want)[0])
        return f"every element visited once, but y[{k}] = {y[k]!r}, want alpha * x = {want[k]!r} {where}."
    if (v[:n] > 1).any():
        k = int(np.argmax(v[:n] > 1))
        return (f"element {k} was visited {int(v[k])} times {where}: the stride is too short -- with more than "
                "one block, blockDim.x makes blocks overlap; step by blockDim.x * gridDim.x, the whole grid.")
    if (v[:min(n, T)] == 1).all() and not v[T:n].any():
        return (f"only the first {T} elements were handled, the other {n - T} never {where}: there is no loop "
                "(or it never advances); repeat with i += blockDim.x * gridDim.x.")
    k = int(np.argmax(v[:n] == 0))
    return (f"element {k} was never visited {where}: the loop skips elements -- an off-by-one stride? It must "
            "be exactly blockDim.x * gridDim.x.")


def check_grid_stride(code: str) -> Verdict:
    eid = "06.grid_stride"
    if not backend.has_gpu():
        return _cpu_verdict(eid, code)
    cp = backend.require_cupy("06.grid_stride")
    fn, bad = _compile_or_verdict(eid, code, "grid_stride")
    if bad:
        return bad
    rng = np.random.default_rng()
    alpha = np.float32(1.5)
    for n, grid, block in GS_SHAPES:
        x = rng.standard_normal(n + PAD).astype(np.float32)
        y = cp.full(n + PAD, np.nan, cp.float32)
        visits = cp.zeros(n + PAD, cp.uint32)
        fn((grid,), (block,), (cp.asarray(x), y, alpha, np.int32(n), visits))
        msg = diagnose_grid_stride(cp.asnumpy(visits), cp.asnumpy(y), x, alpha, n, grid, block)
        if msg:
            return Verdict(eid, False, msg)
    return Verdict(eid, True, f"every element visited exactly once at all {len(GS_SHAPES)} launch shapes.",
                   [f"shapes (n, grid, block): {list(GS_SHAPES)}; {backend.live_label()}"])


# == 09: block reduction at every block size ==========================================================

BLOCK_SIZES = tuple(range(1, 1025))
N_SUM = 3000
_POISON = r'''
extern "C" __global__ void poison_smem(float* sink) {
    extern __shared__ float s[];
    for (int i = threadIdx.x; i < 12288; i += blockDim.x) s[i] = __int_as_float(0x7fc00000);
    __syncthreads();
    if (s[threadIdx.x] == 1.0f) sink[0] = 1.0f;   // never: keeps the stores
}
'''


def _block_sum_run(cp, fn, x, sizes, poison) -> np.ndarray:
    xs = cp.asarray(x)
    out = cp.full(len(sizes), np.nan, cp.float32)
    sink = cp.zeros(1, cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    for k, b in enumerate(sizes):
        # leave NaN in shared memory where the next block will run: an unwritten slot read shows
        poison((4 * sms,), (256,), (sink,), shared_mem=12288 * 4)
        fn((1,), (b,), (xs, out[k:k + 1], np.int32(len(x))))
    return cp.asnumpy(out)


_LANE0_GUARD = re.compile(r"lane\s*==\s*0|!\s*lane\b|0\s*==\s*lane|\(\s*(threadIdx\.x|tid)\s*&\s*31\s*\)\s*==\s*0|"
                          r"(threadIdx\.x|tid)\s*%\s*32\s*==\s*0")
_PARTIAL_STORE = re.compile(r"smem\s*\[\s*warp\s*\]\s*=(?!=)")
_FULL_MASK_SHUFFLE = re.compile(r"__shfl_(down_|up_|xor_)?sync\s*\(\s*(0x[fF]{8}[uU]?|~0[uU]?|0xffffffffu)")


_SLOT_READ = re.compile(r"smem\s*\[\s*(tid|lane|threadIdx\.x)\s*\](?!\s*=[^=])")


def _statement(code: str, at: int) -> str:
    start = max(code.rfind(";", 0, at), code.rfind("{", 0, at), code.rfind("}", 0, at)) + 1
    end = code.find(";", at)
    return code[start:end if end >= 0 else len(code)]


def source_hazards(code: str, partial_warps: bool) -> List[str]:
    """The classic mistakes read off a kernel's source, most telling first: no barrier at all; warp 0
    reading every slot (``smem[tid]``) with no bound on the warps that wrote one; every lane storing
    the warp's partial; and -- when the block sizes graded include partial warps -- a full-mask
    shuffle.  The last two are undefined behaviour a run can miss (the silicon may happen to give the
    right sum), the first two name why a run went wrong.  One message each."""
    found = []
    if "__syncthreads" not in code:
        found.append("there is no __syncthreads(): warp 0 reads the partials before the other warps have "
                     "written them.")
    for m in _SLOT_READ.finditer(code):
        stmt = _statement(code, m.start())
        if "<" not in stmt:
            found.append("warp 0 reads smem[tid] for every tid < 32, but only (blockDim.x + 31) / 32 warps "
                         "wrote a partial: read 0 for the others.")
            break
    for m in _PARTIAL_STORE.finditer(code):
        if not _LANE0_GUARD.search(_statement(code, m.start())):
            found.append("every lane stores smem[warp]: after the shuffles only lane 0 holds the warp's sum, and "
                         "which lane's store lands is undefined (this GPU may keep lane 0's) -- guard it with "
                         "`if (lane == 0)`.")
            break
    if partial_warps and _FULL_MASK_SHUFFLE.search(code) and "__activemask" not in code:
        found.append("a full-mask shuffle in a block that is not a multiple of 32: the last warp is partial and "
                     "the mask names lanes that do not exist (undefined, even where the sum comes out right). "
                     "Shuffle with the mask of the lanes present and add a partner only when it exists.")
    return found


def _diagnose_block_sum(eid: str, bad: Dict[int, float], flaky: List[int], nan_all: bool,
                        sizes=BLOCK_SIZES, hazards=()) -> Verdict:
    span = "every block size 1..1024" if sizes == BLOCK_SIZES else "every multiple of 32 up to 1024"
    if nan_all:
        return Verdict(eid, False, "out[0] was never written at any block size: thread 0 must write the total.")
    if not bad and not flaky and hazards:
        return Verdict(eid, False, f"the sums were right at {span} on this GPU, but " + hazards[0],
                       list(hazards[1:]))
    if (bad or flaky) and hazards:
        where = (f"wrong at block sizes {words.numbers(sorted(bad)[:6])}" if bad
                 else f"changing from run to run at {words.numbers(flaky[:6])}")
        return Verdict(eid, False, f"{where}: " + hazards[0], list(hazards[1:]))
    if not bad and not flaky:
        return Verdict(eid, True, f"right at {span} ({len(sizes)} launches, twice each).")
    first = sorted(bad)[:6]
    if flaky:
        return Verdict(eid, False, f"the result changes from run to run at block sizes {words.numbers(flaky[:6])}: it depends on "
                       "what shared memory held. Either a race (a missing __syncthreads() between writing the "
                       "warps' partials and reading them) or warp 0 reading slots no warp wrote (smem[tid] for "
                       "every tid < 32, where only (blockDim.x + 31) / 32 warps wrote one).")
    if any(b <= 32 for b in bad):
        return Verdict(eid, False, f"already wrong with a single warp (block sizes {words.numbers([b for b in first if b <= 32])}): "
                       "the warp reduction itself. Does only lane 0 write the warp's partial (`if (lane == 0)`), "
                       "with offsets 16, 8, 4, 2, 1?")
    if all(b % 32 for b in bad):
        return Verdict(eid, False, f"only block sizes that are not a multiple of 32 fail (first {words.numbers(first)}): the last "
                       "warp is partial, a full-mask shuffle reads lanes that do not exist. Add a partner's value "
                       "only when tid + off < blockDim.x (and shuffle with the mask of the lanes present).")
    if 1024 not in bad:
        return Verdict(eid, False, f"right at 1024 but wrong below (first {words.numbers(first)}): warp 0 reads smem[tid] for every "
                       "tid < 32, but only (blockDim.x + 31) / 32 warps wrote a partial. Read 0 for the others.")
    return Verdict(eid, False, f"wrong at block sizes {words.numbers(first)} (right with one warp): the hand-off between warps. Is "
                   "there a __syncthreads() after the partials are written?")


def check_block_sum(code: str, eid: str = "09.block_sum", sizes=BLOCK_SIZES) -> Verdict:
    if not backend.has_gpu():
        return _cpu_verdict(eid, code)
    cp = backend.require_cupy(eid)
    fn, bad = _compile_or_verdict(eid, code, "block_sum")
    if bad:
        return bad
    poison = cp.RawKernel(_POISON, "poison_smem")
    x = np.random.default_rng().standard_normal(N_SUM).astype(np.float32)
    want = float(np.sum(x.astype(np.float64)))
    tol = 1e-5 * float(np.abs(x).sum())   # fp32 partial sums: far inside this bound
    a = _block_sum_run(cp, fn, x, sizes, poison)
    b = _block_sum_run(cp, fn, x, sizes, poison)
    wrong = {bs: float(v) for bs, v in zip(sizes, a) if not abs(float(v) - want) <= tol}
    flaky = [bs for bs, u, v in zip(sizes, a, b) if not (u == v or (np.isnan(u) and np.isnan(v)))]
    hazards = source_hazards(code, partial_warps=any(bs % 32 for bs in sizes))
    v = _diagnose_block_sum(eid, wrong, flaky, bool(np.isnan(a).all()), sizes, hazards)
    v.details.append(f"sum of {N_SUM} fresh random values = {want:.6g} (float64); tolerance {tol:.2g}; "
                     f"{backend.live_label()}")
    return v


def check_fix_deck(code: str) -> Verdict:
    return check_block_sum(code, "09.fix_deck")


def _kernel_cells(eid: str, start: str, fn: str, solution_src: str) -> tuple:
    ph = (f"from gpu_viz import exercises as ex\n"
          f"code = r'''{start}'''\nex.check({eid!r}, code)")
    sol = (f"from gpu_viz import exercises as ex\n"
           f"code = r'''{solution_src}'''\nex.check({eid!r}, code).require()")
    return ph, sol


_ph, _sol = _kernel_cells("03.vector_add", sources.VECTOR_ADD_START, "vector_add", sources.VECTOR_ADD_REFERENCE)
register(Exercise(
    "03.vector_add", "03_warps_simt", KERNEL, "Write vector add's index",
    "**Exercise: write the kernel.** Give each thread its element `i` and guard the write, so that "
    "`C = A + B` is right for any `n` and any block size. The checker compiles your kernel with NVRTC "
    "and runs it at six launch shapes with poisoned output (a GPU runtime is needed).",
    _ph, _sol, "## Six warp-instructions?", lambda: {"shapes (n, block)": list(VA_SHAPES)},
    lambda code: check_vector_add(code), ("missing `if (i < n)` guard", "index without blockIdx.x",
                                          "gridDim.x for blockDim.x")))

_ph, _sol = _kernel_cells("06.grid_stride", sources.GRID_STRIDE_START, "grid_stride", sources.GRID_STRIDE_REFERENCE)
register(Exercise(
    "06.grid_stride", "06_grid_stride_loops", KERNEL, "Write the grid-stride loop",
    "**Exercise: write the kernel.** Turn the body into a grid-stride loop so that every element is "
    "handled exactly once for any grid and block. The checker counts each element's visits at six "
    "launch shapes (a GPU runtime is needed).",
    _ph, _sol, "## Why bother", lambda: {"shapes (n, grid, block)": list(GS_SHAPES)},
    lambda code: check_grid_stride(code), ("no loop", "stride blockDim.x only", "off-by-one stride", "i <= n")))

_ph, _sol = _kernel_cells("09.block_sum", sources.BLOCK_SUM_START, "block_sum", sources.BLOCK_SUM_REFERENCE)
register(Exercise(
    "09.block_sum", "09_four_phase_trace", KERNEL, "Write the block reduction",
    "**Exercise: write the kernel.** Finish `block_sum`: shuffle within each warp, one partial per warp "
    "through `smem`, warp 0 reduces the partials. It must be right at **every** block size 1..1024; the "
    "checker runs all 1,024 (a GPU runtime is needed).",
    _ph, _sol, "## 7. Numerics", lambda: {"block sizes": "1..1024", "n": N_SUM},
    lambda code: check_block_sum(code), ("missing __syncthreads", "missing lane guard", "smem[tid] unguarded",
                                         "partial warp (block not a multiple of 32)")))

_ph, _sol = _kernel_cells("09.fix_deck", sources.BLOCK_SUM_DECK, "block_sum", sources.BLOCK_SUM_REFERENCE)
register(Exercise(
    "09.fix_deck", "09_four_phase_trace", KERNEL, "Fix the deck's smem[tid] fault",
    "**Exercise: fix the deck's kernel.** This is the deck's phase 2. Fix it so that it is right at every "
    "block size 1..1024, not only at 1024 (two faults: the unguarded `smem[tid]` and the partial warp).",
    _ph, _sol, "## 7. Numerics", lambda: {"block sizes": "1..1024", "n": N_SUM},
    lambda code: check_fix_deck(code), ("smem[tid] unguarded", "partial warp")))

KERNEL_CHECKS = {"03.vector_add": (check_vector_add, sources.VECTOR_ADD_REFERENCE),
                 "06.grid_stride": (check_grid_stride, sources.GRID_STRIDE_REFERENCE),
                 "09.block_sum": (check_block_sum, sources.BLOCK_SUM_REFERENCE),
                 "09.fix_deck": (check_fix_deck, sources.BLOCK_SUM_REFERENCE)}


def record(out=None):
    """Grade every kernel exercise's reference solution on this GPU; save ``<gpu>-<date>-exercises.json``."""
    from ..measure import records

    backend.require_gpu("the exercises record")
    rows = []
    for eid, (check, ref) in KERNEL_CHECKS.items():
        v = check(ref)
        launches = {"03.vector_add": len(VA_SHAPES), "06.grid_stride": len(GS_SHAPES)}.get(eid, 2 * len(BLOCK_SIZES))
        rows.append({"op": "exercise", "impl": eid, "timing": "none", "ok": v.ok, "message": v.message,
                     "launches": launches})
        print(v.text())
    return records.save_record(records.new_record(rows), tag="exercises", directory=out)
