"""The write-the-kernel exercises judge the run: a catalogue of right and wrong kernels
(tests/exercise_catalogue/<task>/*.cu, each headed ``// expect: correct`` or ``// expect: <a fragment
of the message>``), graded in CPU mode by the emulator -- every wrong one fails with the message that
names its mistake, every right one passes, and no kernel exercise is left ungraded.  On a GPU (marked
``gpu``) the silicon grades the same catalogue and must agree.

Also: any answer (not a string, empty, not CUDA, a hang) gets a verdict, never a traceback; a
kernel that hangs on the GPU runs in a child process that is stopped; the exercise sources compile
for the four architectures; a failing verdict replays the learner's run in the player.
"""
import re
from pathlib import Path

import numpy as np
import pytest

from gpu_viz import backend, emulator, exercises as ex, kernels
from gpu_viz.exercises import kernel_task
from gpu_viz.exercises.core import KERNEL, exercise_source

import catalogue

ROOT = Path(__file__).resolve().parent.parent
#: The block-sum catalogue takes 2-4 s a kernel in the emulator; these run in the fast lane, the rest are slow.
FAST_BLOCK_SUM = {"ok_braces_lane_id", "deck_unguarded", "missing_syncthreads", "pow2_tree"}

needs_emulator = pytest.mark.skipif(not emulator.available(), reason="NVRTC is not installed (the emulator's compiler)")


@pytest.fixture
def cpu_mode(monkeypatch):
    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))


def _catalogue():
    out = []
    for eid in catalogue.kernel_exercises():
        if eid in catalogue.SHARED:   # graded by the catalogue it shares, under that exercise's id
            continue
        for f, expect in catalogue.entries(eid):
            slow = eid == "four_phase_trace.block_sum" and f.stem not in FAST_BLOCK_SUM
            out.append(pytest.param(eid, f, expect, id=f"{eid}-{f.stem}", marks=[pytest.mark.slow] if slow else []))
    return out


CATALOGUE_CASES = _catalogue()


def test_the_catalogue_is_large_enough():
    """At least 40 wrong and 8 right kernels across the kernel exercises; every kernel exercise has
    a catalogue (its own folder, named by its id, or the one it shares) with right and wrong kernels."""
    expects = [c.values[2] for c in CATALOGUE_CASES]
    assert sum(e != "correct" for e in expects) >= 40 and sum(e == "correct" for e in expects) >= 8
    for eid in catalogue.kernel_exercises():
        got = [e for _f, e in catalogue.entries(eid)]
        assert "correct" in got and sum(e != "correct" for e in got) >= 3, (eid, catalogue.folder(eid))
    assert {p.name for p in catalogue.CATALOGUE.iterdir() if p.is_dir()} <= set(catalogue.kernel_exercises())


@needs_emulator
@pytest.mark.parametrize("eid, path, expect", CATALOGUE_CASES)
def test_catalogue_in_cpu_mode(eid, path, expect, cpu_mode):
    v = ex.check(eid, path.read_text(encoding="utf-8"))
    if expect == "correct":
        assert v.ok is True, v.text()
    else:
        assert v.ok is False and expect in v.message, v.text()
    # the feedback never holds the reference solution's code: no statement or expression of it that the
    # starting code lacks (an index formula, a loop header's parts), spaces and casts aside
    leaked = [f for f in solution_fragments(eid) if f in re.sub(r"\s+", "", v.text())]
    assert not leaked, (leaked, v.text())


_TYPES = re.compile(r"\b(?:const|unsigned|signed|long|int|float|double|auto|size_t|bool|__restrict__)\b|\((?:[\w ]+)\)(?=\w|\()")


def solution_fragments(eid: str, shortest: int = 20) -> set:
    """The reference solution's statements and right-hand sides (types, casts and spaces removed) that
    exercise ``eid``'s starting code does not hold, those of at least ``shortest`` characters."""
    e = ex.get(eid)

    def fragments(cell):
        out = set()
        for ln in catalogue.code_of(cell).splitlines():
            code = ln.split("//")[0]
            for part in re.split(r"[;{}]|\bfor\s*\(", code):
                part = re.sub(r"\s+", "", _TYPES.sub(" ", part)).strip("()")
                rhs = re.split(r"(?<![=!<>+\-*/])=(?!=)", part, maxsplit=1)
                out.update(f for f in {part, rhs[-1]} if len(f) >= shortest)
        return out

    return fragments(e.solution) - fragments(e.placeholder)


def test_the_leak_check_sees_an_index_formula():
    frags = solution_fragments("warps_simt.vector_add")
    said = re.sub(r"\s+", "", "Each thread's element is i = blockIdx.x * blockDim.x + threadIdx.x.")
    assert any(f in said for f in frags), frags


@needs_emulator
@pytest.mark.parametrize("eid", [e.id for e in ex.exercises() if e.kind == KERNEL])
def test_every_kernel_exercise_is_graded_in_cpu_mode(eid, cpu_mode):
    """The reference solution passes, and the starting code gets a verdict (never ok=None)."""
    e = ex.get(eid)
    ns = {}
    exec(e.solution.rsplit("\n", 1)[0], ns)
    assert ex.check(eid, ns["code"]).ok is True
    ns = {}
    exec(e.placeholder.rsplit("\n", 1)[0], ns)
    v = ex.check(eid, ns["code"])
    assert v.ok is False, v.text()


@pytest.mark.parametrize("answer, fragment", [
    (None, "no answer yet"), (42, "must be a string"), ("", "empty"), ("   \n", "empty"),
    ("print('hello')", "no kernel in your source"), (b"__global__", "must be a string"),
    ("__global__ void vector_add(float* A) { }  // no extern C", None)])
def test_bad_answers_get_a_verdict(answer, fragment, cpu_mode):
    v = ex.check("warps_simt.vector_add", answer)
    assert isinstance(v, ex.Verdict)
    if answer is None:
        assert v.ok is None
    else:
        assert v.ok is False
    if fragment:
        assert fragment in v.message, v.text()


@needs_emulator
def test_a_compile_error_shows_nvrtcs_message_at_the_learners_line(cpu_mode):
    v = ex.check("warps_simt.vector_add", 'extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {\n'
                                  '    int i = blockIdx.x * blockDim.x + threadIdx.x\n    C[i] = 1;\n}\n')
    assert v.ok is False and "does not compile" in v.message and "line 3" in v.message, v.text()


@needs_emulator
def test_a_right_kernel_is_never_failed_for_its_source_text(cpu_mode):
    """Names, braces, macros, helpers: nothing in the text can fail a right run."""
    src = ('#define ELEMENT(b, t, d) ((b) * (d) + (t))\n'
           'static __device__ __noinline__ float plus(float a, float b) { return a + b; }\n'
           'extern "C" __global__ void vector_add(const float* __restrict__ first, const float* second,\n'
           '                                      float* result, int count) {\n'
           '    const int element_index = ELEMENT(blockIdx.x, threadIdx.x, blockDim.x);\n'
           '    if (!(element_index >= count)) { result[element_index] = plus(first[element_index], second[element_index]); }\n'
           '}\n')
    v = ex.check("warps_simt.vector_add", src)
    assert v.ok is True, v.text()


def test_a_hanging_kernel_in_the_child_process_is_stopped():
    """The GPU path's child process (here running the emulator, as on a machine with no GPU): a kernel
    that never ends is stopped after the timeout and the verdict says so; the parent lives on."""
    if not emulator.available():
        pytest.skip("NVRTC is not installed")
    from gpu_viz.exercises.warps_simt import TASK

    src = ('extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {\n'
           '    int i = blockIdx.x * blockDim.x + threadIdx.x; while (i < n) C[i] = A[i] + B[i];\n}\n')
    cases = TASK.cases_with_inputs(seed=1)[:1]
    jobs = [(c, i, TASK._buffers(c, i)[0]) for c, i in cases]
    with pytest.raises(kernel_task._GradingError, match="did not finish within 3 s.*separate process"):
        kernel_task.run_in_child(src, TASK.kernel, TASK.params, jobs, timeout=3, emulate=True)


def test_the_child_process_returns_what_the_kernel_wrote():
    if not emulator.available():
        pytest.skip("NVRTC is not installed")
    from gpu_viz.exercises.warps_simt import TASK

    cases = TASK.cases_with_inputs(seed=2)[:2]
    jobs = [(c, i, TASK._buffers(c, i)[0]) for c, i in cases]
    outs = kernel_task.run_in_child(exercise_source("vector_add.solution"), TASK.kernel, TASK.params, jobs,
                                    timeout=60, emulate=True)
    for (c, i), o in zip(cases, outs):
        n = c.sizes["n"]
        np.testing.assert_array_equal(o["C"][:n], i["A"] + i["B"])
        assert np.isnan(o["C"][n:]).all()


@needs_emulator
def test_a_failing_verdict_replays_the_learners_run(cpu_mode):
    from gpu_viz.widgets import Animation

    v = ex.check("four_phase_trace.block_sum", (catalogue.folder("four_phase_trace.block_sum") / "missing_syncthreads.cu").read_text(encoding="utf-8"))
    assert v.ok is False and v.replay is not None
    from gpu_viz.frames import run as run_frames

    an = run_frames.replay(v)
    assert isinstance(an, Animation) and len(an) >= 2
    assert "emulated on the CPU" in an.provenance
    # the race is marked on the frame where it happened, and that frame's caption says so
    assert any("race on smem" in f.caption and "stroke-width=\"4" in f.markup.replace("'", '"') for f in an.frames) \
        or any("race on smem" in f.caption for f in an.frames), [f.caption for f in an.frames][:5]
    assert all(f.line is None or 1 <= f.line <= len(an.source.splitlines()) for f in an.frames)


@pytest.mark.slow
@pytest.mark.skipif(kernels.find_tool("nvcc") is None, reason="no nvcc")
@pytest.mark.parametrize("path", sorted((ROOT / "kernels" / "exercises").glob("*.cu")) +
                         sorted(catalogue.CATALOGUE.glob("*/*.cu")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_exercise_kernels_compile_for_every_arch(path, tmp_path):
    """Every starter, solution and catalogue kernel builds for sm_75/80/89/90 with nvcc (the ones that
    must not compile excepted)."""
    import subprocess

    if "does not compile" in path.read_text(encoding="utf-8").splitlines()[0] or "it does not compile" in \
            path.read_text(encoding="utf-8").splitlines()[0]:
        pytest.skip("a kernel that must not compile")
    gencode = [a for arch in kernels.ARCHES for a in ("-gencode", f"arch=compute_{arch[3:]},code={arch}")]
    r = subprocess.run([kernels.find_tool("nvcc"), "-fatbin", "-std=c++17", *gencode, f"-I{kernels.KERNEL_DIR}",
                        "-o", str(tmp_path / "k.fatbin"), str(path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.gpu
@pytest.mark.parametrize("eid, path, expect", CATALOGUE_CASES)
def test_catalogue_on_the_gpu_agrees(eid, path, expect):
    """On silicon (values) plus the emulator's hazard pass, the same verdict as in CPU mode."""
    v = ex.check(eid, path.read_text(encoding="utf-8"))
    if expect == "correct":
        assert v.ok is True, v.text()
    else:
        assert v.ok is False and expect in v.message, v.text()


@pytest.mark.gpu
def test_fuse_gate_bound_holds_on_silicon_with_its_margin():
    """fused_rmsnorm_gate.fuse_gate's per-element bound is twice the worst case fp32 arithmetic allows
    (gate_bound's derivation: any summation order, expf or __expf, __fdividef, rsqrtf at their documented
    errors): on silicon, whose intrinsics are not correctly rounded as the emulator's are, every right
    catalogue kernel stays within half of it at every launch."""
    from gpu_viz.exercises import fused_rmsnorm_gate as fg

    task = fg.FUSE_GATE
    right = [f for f, expect in catalogue.entries(fg.ID_FUSE) if expect == "correct"]
    assert len(right) >= 3
    cases = task.cases_with_inputs(seed=0)
    jobs = [(c, i, task._buffers(c, i)[0]) for c, i in cases]
    for f in right:
        outs = kernel_task.run_in_child(f.read_text(encoding="utf-8"), task.kernel, task.params, jobs, timeout=120)
        for (c, i), out in zip(cases, outs):
            want = fg._gate_reference(c, i)["y"]
            err = np.abs(out["y"][:want.size].astype(np.float64) - want)
            ratio = float(np.max(err / fg.gate_bound(c, i, want)))
            assert ratio <= 0.5, (f.name, c.label(), ratio)


# -- what the compiler and the run say, said plainly ------------------------------------------------

def _compile_error(log):
    return kernels.KernelCompileError(kernel_task.SOURCE_NAME, 1, log)


@pytest.mark.parametrize("log, said", [
    ('your_kernel.cu(2): catastrophic error: cannot open source file "cstdio"\n  #include <cstdio>\n\n'
     '1 catastrophic error detected in the compilation of "your_kernel.cu".\nCompilation terminated.\n',
     'NVRTC says: line 2: cannot open source file "cstdio". NVRTC compiles device code on its own'),
    ('your_kernel.cu(1): catastrophic error: #error directive: boom\n  #error boom\n\n'
     '1 catastrophic error detected in the compilation of "your_kernel.cu".\nCompilation terminated.\n',
     "NVRTC says: line 1: #error directive: boom"),
    ('your_kernel.cu(3): error: expected a ";"\n\nyour_kernel.cu(4): error #20: identifier "j" is undefined\n\n'
     '2 errors detected in the compilation of "your_kernel.cu".\n',
     'NVRTC says: line 3: expected a ";" (and 1 more error)'),
    ('At end of source: error: expected a "}"\n\n1 error detected in the compilation of "your_kernel.cu".\n',
     'NVRTC says: at the end of your source: expected a "}"'),
    ('/usr/include/helper.cuh(7): error: expected a ";"\n', "NVRTC says: helper.cuh, line 7: expected a"),
])
def test_a_compile_error_is_said_as_line_and_message(log, said):
    """Any kind of NVRTC error ("catastrophic" too) becomes "line N: what", with no stray ")" of
    the log's "file(N):" and the summary line not counted as another error."""
    m = kernel_task._compile_message(_compile_error(log))
    assert said in m and "):" not in m and kernel_task.SOURCE_NAME not in m, m


def test_a_compile_errors_own_message_names_file_and_line_once():
    e = _compile_error('your_kernel.cu(1): catastrophic error: #error directive: boom\n')
    first = str(e).splitlines()[0]
    assert first == "your_kernel.cu:1: catastrophic error: #error directive: boom", first


@pytest.mark.parametrize("where, line, col", [(0, 1, 1), (12, 1, 13), (94, 2, 6)])
def test_a_nul_byte_is_refused_with_its_place(where, line, col, cpu_mode):
    """NVRTC reads a C string: past a NUL byte the source would vanish without a word."""
    src = 'extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {\n' \
          '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) C[i] = A[i] + B[i];\n}\n'
    bad = src[:where] + "\0" + src[where:]
    assert src[:where].count("\n") + 1 == line
    v = ex.check("warps_simt.vector_add", bad)
    assert v.ok is False and f"NUL byte (\\0) at line {line}, column {col}" in v.message, v.text()


@pytest.mark.parametrize("symbol, base", [("_Z10vector_addPKfS0_Pfi", "vector_add"), ("_Z3fooi", "foo"),
                                          ("_ZN2ns11grid_strideEPKfPffiPj", "grid_stride"), ("vector_add", None),
                                          ("_ZL4tinyv", "tiny")])
def test_demangled_base(symbol, base):
    assert kernel_task.demangled_base(symbol) == base


def test_the_narrow_index_message_follows_the_index_type():
    n = type("N", (), {"line": 4})()
    signed, unsigned, unknown = (kernel_task.narrow_message(n, s) for s in (True, False, None))
    assert "negative index" in signed and "wraps" not in signed
    assert "unsigned" in unsigned and "negative" not in unsigned and "revisits" in unsigned
    assert "negative index" in unknown and "revisits" in unknown


def _float_solutions():
    out = []
    for e in ex.exercises():
        if e.kind != KERNEL:
            continue
        code = catalogue.code_of(e.solution)
        sig = re.search(r'extern "C" __global__ void \w+\(([^)]*)\)', code)
        if sig and "float*" in sig.group(1):
            out.append(pytest.param(e.id, code, sig, id=e.id))
    return out


@needs_emulator
@pytest.mark.parametrize("eid, code, sig", _float_solutions())
def test_a_double_parameter_is_named_for_every_kernel_exercise(eid, code, sig, cpu_mode):
    """Every float* parameter of the reference solution declared double*: the verdict says the kernel
    reads or writes 8-byte elements from a float array (not an out-of-bounds read its type caused),
    and NumPy's warnings about the garbage never reach the notebook."""
    import warnings

    params = sig.group(1)
    wrong = code.replace(params, params.replace("float*", "double*"), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = ex.check(eid, wrong)
    assert v.ok is False and "8-byte elements (double)" in v.message and "a float array" in v.message, v.text()
