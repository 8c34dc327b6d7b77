"""gpu_viz.kernels: finding, showing and compiling kernels/*.cu (nvcc here, NVRTC on a GPU)."""
import re
import shutil

import pytest

from gpu_viz import backend, kernels, lessons

NVCC = kernels.find_tool("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")


@pytest.fixture
def kdir(tmp_path, monkeypatch):
    monkeypatch.setattr(kernels, "KERNEL_DIR", tmp_path)
    (tmp_path / "demo.cu").write_text(
        '#include "helper.cuh"\n'
        "// [region body]\n"
        'extern "C" __global__ void demo(float* y) {\n'
        "    y[threadIdx.x] = twice(threadIdx.x);\n"
        "}\n"
        "// [end body]\n")
    (tmp_path / "helper.cuh").write_text("#pragma once\n__device__ float twice(int i) { return 2.0f * i; }\n")
    return tmp_path


def test_snippet_region_and_line(kdir):
    s = kernels.snippet("demo.cu", "body")
    assert s.text.splitlines()[0].startswith('extern "C"')
    assert s.first_line == 3
    assert s.line_of("twice") == 2
    with pytest.raises(ValueError, match="not found in region"):
        s.line_of("nonexistent")


def test_snippet_drops_trace_lines_and_joins_regions(kdir):
    (kdir / "t.cu").write_text(
        '#include "helper.cuh"\n'
        "// [region a]\n"
        "int x = 1;\n"
        "    TRACE(rec.x[0] = x);\n"
        "// [end a]\n"
        "// [region b]\n"
        "int y = 2;\n"
        "TRACE_HOOK(y);\n"
        "// [end b]\n")
    (kdir / "helper.cuh").write_text("#pragma once\n// [region h]\nint z = 3;\n// [end h]\n")
    s = kernels.snippet("t.cu", "a", "b", "helper.cuh:h")
    assert s.text == "int x = 1;\n\nint y = 2;\n\nint z = 3;"
    assert "TRACE(rec.x[0] = x);" in s.traced_text and "TRACE_HOOK(y);" in s.traced_text
    assert s.region == "a+b+helper.cuh:h" and s.first_line == 3
    assert s.lines_of(["y = 2", "z = 3"]) == [3, 5]


def test_snippet_unknown_region_lists_regions(kdir):
    with pytest.raises(KeyError, match=r"regions: \['body'\]"):
        kernels.snippet("demo.cu", "phase9")


def test_missing_file_lists_available(kdir):
    with pytest.raises(FileNotFoundError, match=r"available: \['demo.cu'\]"):
        kernels.read_source("nope.cu")


def test_compile_error_names_file_and_line():
    log = ("/tmp/tmpab12/3f9e.cu(7): error: identifier \"foo\" is undefined\n1 error detected")
    with pytest.raises(kernels.KernelCompileError) as ei:
        kernels._raise_compile_error("rmsnorm.cu", log)
    assert ei.value.file == "rmsnorm.cu" and ei.value.line == 7
    assert "rmsnorm.cu:7" in str(ei.value) and 'identifier "foo"' in str(ei.value)


def test_compile_error_in_included_header(kdir):
    log = f"{kdir}/helper.cuh(2): error: expected a \";\""
    with pytest.raises(kernels.KernelCompileError) as ei:
        kernels._raise_compile_error("demo.cu", log)
    assert (ei.value.file, ei.value.line) == ("helper.cuh", 2)


def test_parse_ptxas():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k1' for 'sm_90'
ptxas info    : Function properties for k1
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 132 bytes smem, 372 bytes cmem[0]
ptxas info    : Compiling entry function 'k2' for 'sm_90'
ptxas info    : Function properties for k2
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 372 bytes cmem[0]
"""
    rows = kernels.parse_ptxas(log)
    assert [(r.kernel, r.registers, r.spill_stores_bytes, r.shared_bytes) for r in rows] == [
        ("k1", 40, 4, 132), ("k2", 12, 0, 0)]


def test_load_in_cpu_mode_raises(monkeypatch):
    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))
    with pytest.raises(backend.GPUUnavailable, match="compiling reduce.cu"):
        kernels.load("reduce.cu")


@needs_nvcc
def test_nvcc_compile_error_has_file_and_line(kdir):
    (kdir / "bad.cu").write_text('extern "C" __global__ void bad(float* y) {\n  y[0] = undefined_name;\n}\n')
    with pytest.raises(kernels.KernelCompileError) as ei:
        kernels.nvcc_compile("bad.cu", "sm_75")
    assert ei.value.file == "bad.cu" and ei.value.line == 2


@needs_nvcc
def test_nvcc_reports_each_kernel(kdir):
    rows = kernels.nvcc_compile("demo.cu", "sm_89")
    assert [r.kernel for r in rows] == ["demo"] and rows[0].registers > 0


ALL = kernels.kernel_files()
#: The lessons' own kernel files (``LessonCases`` in gpu_viz/lessons.py): their entry points, the
#: same set in the plain and the traced build, and register ceilings worth keeping, (plain build,
#: traced build).  64 is the hard one for a kernel launched with 1024 threads: 64 registers x 1024
#: threads fill an SM's 64K-register file.  The traced grid-stride loop keeps its record pointers
#: live across the loop (34-36 on sm_75/sm_89).
LESSON_KERNELS = {les.kernel_file: set(les.cases.entry_points) for les in lessons.LESSONS.values()
                  if les.cases.entry_points}
MAX_REGISTERS = {les.kernel_file: les.cases.max_registers for les in lessons.LESSONS.values()
                 if les.cases.entry_points}


def test_every_lessons_kernel_file_lists_its_entry_points():
    """Each lesson with a kernel of its own says what its file holds (checked against nvcc's list
    below); no two lessons share a file."""
    own = [les.kernel_file for les in lessons.LESSONS.values() if les.gpu]
    assert len(own) == len(set(own)) and set(own) == set(LESSON_KERNELS) and set(LESSON_KERNELS) <= set(ALL)


def _builds():
    for name in ALL:
        yield name, False
        if kernels.has_traced_build(name):
            yield name, True


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("arch", kernels.ARCHES)
@pytest.mark.parametrize("name,traced", list(_builds()), ids=[f"{n}{'-traced' if t else ''}" for n, t in _builds()])
def test_every_kernel_builds_without_spills(name, traced, arch):
    """Every kernels/*.cu (and its traced build) compiles for T4, A100, L4 and H100/H200, no kernel
    spills registers (stores or loads), the lessons' files hold exactly their entry points, and
    the register ceilings hold in both builds."""
    rows = kernels.nvcc_compile(name, arch, traced=traced)
    assert rows, f"{name}: nvcc produced no kernel for {arch} (templates need explicit instantiation)"
    spilled = [(r.kernel, r.spill_stores_bytes, r.spill_loads_bytes) for r in rows
               if r.spill_stores_bytes or r.spill_loads_bytes]
    assert not spilled, f"{name} spills on {arch}: {spilled}"
    if name in LESSON_KERNELS:
        assert {r.kernel for r in rows} == LESSON_KERNELS[name], (name, traced, [r.kernel for r in rows])
    cap = MAX_REGISTERS.get(name, (None, None))[traced]
    if cap:
        assert all(r.registers <= cap for r in rows), [(r.kernel, r.registers) for r in rows]


def test_traced_builds_are_the_lessons():
    """Only a lesson's own kernel file has a traced build (tests/test_record.py: its producer binds
    exactly its record's fields)."""
    traced = {n for n in ALL if kernels.has_traced_build(n)}
    assert traced and traced <= set(LESSON_KERNELS)


def _defaults(name):
    """A kernel file's defaults: every #define of an #ifndef ... #endif block (one macro, or the
    block of a bare build's values)."""
    text = kernels.read_source(name)
    blocks = re.findall(r"#ifndef \w+[^\n]*\n((?:#define \w+ \S+[^\n]*\n)+)#endif", text)
    return dict(kv for b in blocks for kv in re.findall(r"#define (\w+) (\S+)", b))


def test_cuda_defaults_match_the_python_constants():
    """Constants Python passes as -D: the .cu files' #ifndef defaults (for a bare nvcc build)
    are the same values, so the two builds cannot differ."""
    from gpu_viz import occupancy
    from gpu_viz.rmsnorm.fused import names as fnames

    # the lessons' GPU producers' -D options (a producer's OPTIONS), and two files no lesson traces
    lesson_options = [(les.kernel_file, les.module("record").OPTIONS) for les in lessons.LESSONS.values()
                      if les.gpu and hasattr(les.module("record"), "OPTIONS")]
    assert {name for name, _o in lesson_options} >= {"vector_add.cu", "reduction.cu"}
    for name, options in [("rmsnorm_fused.cu", fnames.LAUNCH_DEFINES), ("occupancy.cu", occupancy.OCC_OPTIONS),
                          *lesson_options]:
        d = _defaults(name)
        for opt in options:
            key, value = opt[2:].split("=")
            assert d.get(key) == value, (name, key, d.get(key), value)


def test_kernel_files_found():
    assert kernels.KERNEL_DIR.name == "kernels" and (kernels.KERNEL_DIR / "reduce.cuh").is_file()


@pytest.mark.gpu
def test_nvrtc_load_attributes_and_error(tmp_path, monkeypatch):
    import cupy as cp

    shutil.copy(kernels.KERNEL_DIR / "reduce.cuh", tmp_path / "reduce.cuh")
    monkeypatch.setattr(kernels, "KERNEL_DIR", tmp_path)
    (tmp_path / "ok.cu").write_text(
        '#include "reduce.cuh"\nextern "C" __global__ void s(const float* x, float* o) {\n'
        "  __shared__ float r[GPU_VIZ_REDUCE_SLOTS];\n  float t = block_reduce_sum(x[threadIdx.x], r);\n"
        "  if (threadIdx.x == 0) o[0] = t;\n}\n")
    f = kernels.function("ok.cu", "s")
    x = cp.arange(100, dtype=cp.float32)
    o = cp.full(1, cp.nan, dtype=cp.float32)
    f((1,), (100,), (x, o))
    assert float(o.get()[0]) == 4950.0
    attrs = kernels.attributes("ok.cu", "s")
    assert attrs.num_regs > 0 and attrs.shared_size_bytes >= 4 * 33 and attrs.local_size_bytes == 0
    (tmp_path / "bad.cu").write_text('extern "C" __global__ void b(float* y) {\n  y[0] = nope;\n}\n')
    with pytest.raises(kernels.KernelCompileError) as ei:
        kernels.load("bad.cu")
    assert ei.value.line == 2 and "nope" in ei.value.log


@pytest.mark.parametrize("bad", ["../pyproject.toml", "/etc/passwd", "sub/x.cu", "", None, 3])
def test_only_kernel_dir_files_are_read(bad):
    with pytest.raises(ValueError, match="bare file name"):
        kernels.read_source(bad)
    with pytest.raises(ValueError, match="bare file name"):
        kernels.snippet(bad, "phase1")
