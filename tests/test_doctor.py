"""`gpu-viz doctor`: each failure mode, reproduced with a fake `cupy` module, gets the right advice.

The fakes stand in for CuPy only (sys.modules); gpu_viz.backend's real probe runs against them,
so these tests also pin which backend cause maps to which advice.
"""
import re
import sys
import types

import pytest

from gpu_viz import backend, cli, doctor, emulator


class CUDARuntimeError(RuntimeError):
    pass


class CompileException(Exception):
    pass


def fake_cupy(*, count=1, count_error=None, driver=12040, runtime=12090, nvrtc=(12, 9),
              compile_error=None, launch_error=None, name=b"NVIDIA L4", cc=(8, 9)):
    """A module that behaves like CuPy on a machine with the given driver/runtime/NVRTC."""
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "14.2.0"

    def get_count():
        if count_error:
            raise count_error
        return count

    def nvrtc_version():
        if isinstance(nvrtc, Exception):
            raise nvrtc
        return nvrtc

    runtime_ns = types.SimpleNamespace(
        getDeviceCount=get_count, getDevice=lambda: 0,
        getDeviceProperties=lambda i: {"name": name, "major": cc[0], "minor": cc[1]},
        driverGetVersion=lambda: driver, runtimeGetVersion=lambda: runtime)
    cupy.cuda = types.SimpleNamespace(runtime=runtime_ns, nvrtc=types.SimpleNamespace(getVersion=nvrtc_version))

    class Out:
        def __init__(self, n):
            self.n = n

        def get(self):
            return types.SimpleNamespace(tolist=lambda: [3 * i + 3 for i in range(self.n)])

    def kernel(grid, block, args):
        if launch_error:
            raise launch_error

    class RawModule:
        def __init__(self, code, options=()):
            if compile_error:
                raise compile_error

        def get_function(self, name):
            return kernel

    cupy.RawModule = RawModule
    cupy.full = lambda n, v, dtype=None: Out(n)
    cupy.int32 = "int32"
    return cupy


@pytest.fixture
def env(monkeypatch):
    """Install a fake cupy (or None = not installed); no real driver; backend cache reset after."""
    monkeypatch.delenv(backend.FORCE_CPU_ENV, raising=False)
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    monkeypatch.setattr(backend, "libcuda_driver_version", lambda: None)  # the doctor's and the verdict's probe

    def install(module, colab=False):
        monkeypatch.setitem(sys.modules, "cupy", module)
        if colab:
            monkeypatch.setenv("COLAB_RELEASE_TAG", "release-colab-test")
    yield install
    monkeypatch.undo()
    backend.detect(refresh=True)


def test_gpu_ok(env):
    env(fake_cupy())
    rep = doctor.report(show=False)
    assert rep.ok and rep.problem == "ok" and rep.mode == "gpu"
    items = {i.name: i.value for i in rep.items}
    assert items["GPU"] == "NVIDIA L4 (sm_89)"
    assert items["NVIDIA driver (CUDA)"] == "12.4" and items["CUDA runtime (CuPy's)"] == "12.9"
    assert items["NVRTC"] == "12.9" and items["CuPy"] == "14.2.0"
    assert "Verdict: GPU mode" in rep.text()


def test_cpu_runtime_on_colab_says_change_runtime_type(env):
    err = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
    env(fake_cupy(count_error=err, driver=0), colab=True)
    rep = doctor.report(show=False)
    assert rep.mode == "cpu" and rep.problem == "cpu-runtime"
    text = rep.text()
    assert "Runtime > Change runtime type" in text and "GPU" in text
    assert "CPU mode" in text and "nothing is" in text


def test_cpu_runtime_elsewhere_points_at_nvidia_smi(env):
    env(fake_cupy(count_error=CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")))
    rep = doctor.report(show=False)
    assert rep.problem == "cpu-runtime"
    assert "nvidia-smi" in rep.text() and "Change runtime type" not in rep.text()


def test_driver_older_than_runtime(env):
    err = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
    env(fake_cupy(count_error=err, driver=11080, runtime=12090))
    rep = doctor.report(show=False)
    assert rep.problem == "driver-too-old"
    advice = " ".join(rep.advice)
    assert "CUDA 11.8" in advice and "12.9" in advice and "cudaErrorInsufficientDriver" in advice
    assert "pip install cupy-cuda11x" in advice and "Update the driver" in advice


@pytest.mark.parametrize("driver, wheel", [(12040, "cupy-cuda12x"), (13000, "cupy-cuda13x"), (11080, "cupy-cuda11x")])
def test_cupy_missing_names_the_wheel_for_the_driver(env, monkeypatch, driver, wheel):
    env(None)  # sys.modules["cupy"] = None: `import cupy` raises ImportError
    monkeypatch.setattr(backend, "libcuda_driver_version", lambda: driver)
    rep = doctor.report(show=False)
    assert rep.problem == "cupy-missing" and rep.mode == "cpu"
    assert f"pip install {wheel}" in rep.advice[0]
    assert {i.name: i.ok for i in rep.items}["CuPy"] is False


def test_cupy_missing_and_no_driver_on_colab(env):
    env(None, colab=True)
    rep = doctor.report(show=False)
    assert rep.problem == "cupy-missing"
    assert "Change runtime type" in " ".join(rep.advice)


def test_nvrtc_without_headers(env):
    err = CompileException("catastrophic error: cannot open source file \"cuda_fp16.h\"")
    env(fake_cupy(compile_error=err))
    rep = doctor.report(show=False)
    assert rep.problem == "nvrtc-headers"
    advice = rep.advice[0]
    assert "cuda_fp16.h" in advice and "pip install nvidia-cuda-runtime-cu12" in advice and "CUDA_PATH" in advice


def test_nvrtc_missing(env):
    missing = RuntimeError('DynamicLibNotFoundError: Failure finding "libnvrtc.so.12"')
    env(fake_cupy(nvrtc=missing, compile_error=RuntimeError("nvrtc: libnvrtc.so.12 not found")))
    rep = doctor.report(show=False)
    assert rep.problem == "nvrtc-missing"
    assert "pip install nvidia-cuda-nvrtc-cu12" in rep.advice[0]
    assert {i.name: i.ok for i in rep.items}["NVRTC"] is False


def test_ptx_too_new_for_driver(env):
    env(fake_cupy(launch_error=RuntimeError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled "
                                            "with an unsupported toolchain")))
    rep = doctor.report(show=False)
    assert rep.problem == "ptx-too-new" and "Update the NVIDIA driver" in rep.advice[0]


def test_forced_cpu(env, monkeypatch):
    env(fake_cupy())
    monkeypatch.setenv(backend.FORCE_CPU_ENV, "1")
    rep = doctor.report(show=False)
    assert rep.problem == "forced-cpu" and backend.FORCE_CPU_ENV in rep.advice[0]


def test_report_prints_and_renders_html(env, capsys):
    env(fake_cupy())
    rep = doctor.report()
    assert "gpu-viz doctor" in capsys.readouterr().out
    assert "<table>" in rep._repr_html_() and "GPU mode" in rep._repr_html_()


def test_cli_json_and_strict(env, capsys):
    env(fake_cupy(count_error=CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")))
    assert cli.main(["doctor", "--json"]) == 0
    import json
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "cpu" and data["problem"] == "cpu-runtime" and data["advice"]
    assert cli.main(["doctor", "--strict"]) == 1


def test_doctor_on_this_machine_never_raises():
    rep = doctor.report(show=False)
    assert rep.mode in ("cpu", "gpu") and rep.items
    if rep.mode == "cpu":
        assert rep.advice


def test_cpu_runtime_without_a_driver_says_install_one(env):
    """No driver at all (CuPy's driverGetVersion 0, no libcuda), not on Colab: the verdict and
    the advice both say there is no driver (not 'check nvidia-smi')."""
    err = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
    env(fake_cupy(count_error=err, driver=0))
    rep = doctor.report(show=False)
    assert rep.problem == "cpu-runtime"
    assert "no NVIDIA driver on this machine" in rep.reason
    assert "No NVIDIA driver was found" in " ".join(rep.advice)


@pytest.mark.parametrize("driver", [-1, float("nan"), "12040", None])
def test_odd_driver_versions_read_as_the_backend_reads_them(env, driver):
    """Bug class: the doctor and the backend's verdict reading driverGetVersion differently (a
    negative or NaN value printed as 'CUDA -1.99', a string crashing _cuda_version).  Both go
    through backend.driver_cuda_version: positive ints, else no driver."""
    err = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
    env(fake_cupy(count_error=err, driver=driver))
    rep = doctor.report(show=False)
    items = {i.name: i.value for i in rep.items}
    if driver == "12040":
        assert items["NVIDIA driver (CUDA)"] == "12.4" and rep.problem == "driver-too-old"
    else:
        assert items["NVIDIA driver (CUDA)"] == "no driver found" and rep.problem == "cpu-runtime"
        assert "no NVIDIA driver on this machine" in rep.reason


def test_insufficient_driver_newer_than_the_runtime_is_not_called_older(env):
    err = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
    env(fake_cupy(count_error=err, driver=13000, runtime=12090))
    rep = doctor.report(show=False)
    advice = " ".join(rep.advice)
    assert rep.problem == "driver-too-old" and "older than" not in advice and "insufficient" in advice
    assert "older" not in rep.reason and "CUDA 13.0" in rep.reason and "CUDA 12.9" in rep.reason


# ----------------------------------------------------------------------------- cause codes, not sentences
# A reason carrying every phrase the doctor once matched on, to show the text is not read.
DECOY_REASON = (f"forced by {backend.FORCE_CPU_ENV}=1: NVRTC missing or failed to load, cannot find the CUDA "
                "headers (cuda_fp16.h), PTX, cudaErrorInsufficientDriver (insufficient), no CUDA-capable "
                "device (NoDevice), the CUDA runtime reports no GPU")


def _backend_says(monkeypatch, cause, reason):
    """Make the doctor's verdict a CPU-mode Backend with this cause and reason."""
    b = backend.Backend(mode="cpu", reason=reason, cause=cause)
    monkeypatch.setattr(backend, "detect", lambda refresh=False: b)


def test_nvrtc_headers_advice_comes_from_the_cause(env, monkeypatch):
    """cause "nvrtc-headers" with a reason in other words: still the headers advice."""
    env(fake_cupy())
    _backend_says(monkeypatch, backend.CAUSE_NVRTC_HEADERS, "the compiler could not include a header file")
    rep = doctor.report(show=False)
    assert rep.problem == "nvrtc-headers"
    assert "cuda_fp16.h" in rep.advice[0] and "pip install nvidia-cuda-runtime-cu12" in rep.advice[0]
    assert rep.reason == "the compiler could not include a header file"


@pytest.mark.parametrize("reason", [f"forced by {backend.FORCE_CPU_ENV}=1 (the PTX launch)",
                                    "the PTX could not be launched", DECOY_REASON])
def test_reason_keywords_do_not_pick_the_advice(env, monkeypatch, reason):
    """A reason that says "forced by" or "PTX" under another cause (a launch failure, driver
    and runtime both CUDA 12.9, NVRTC fine) gets the general advice, not the forced-CPU or the
    PTX advice."""
    env(fake_cupy(driver=12090, runtime=12090))
    _backend_says(monkeypatch, backend.CAUSE_LAUNCH_FAILED, reason)
    rep = doctor.report(show=False)
    assert rep.problem == "other"
    advice = " ".join(rep.advice)
    assert "The GPU path failed" in advice and reason in advice
    assert "CPU mode was asked for" not in advice and "cannot load their PTX" not in advice


@pytest.mark.parametrize("cause", [c for c in backend.CAUSES if c != backend.CAUSE_OK])
def test_problem_is_the_causes_whatever_the_reason_says(env, monkeypatch, cause):
    """Every CPU-mode cause gets its mapped problem, with a neutral reason and with one full of
    the old keywords alike (driver and runtime both CUDA 12.9 and NVRTC fine, so no version
    refines it)."""
    env(fake_cupy(driver=12090, runtime=12090))
    problems = []
    for reason in ("something went wrong", DECOY_REASON):
        _backend_says(monkeypatch, cause, reason)
        problems.append(doctor.report(show=False).problem)
    assert problems == [doctor.PROBLEM_OF_CAUSE[cause]] * 2


def test_every_backend_cause_maps_to_a_doctor_problem():
    assert set(doctor.PROBLEM_OF_CAUSE) == set(backend.CAUSES)
    assert set(doctor.PROBLEM_OF_CAUSE.values()) <= set(doctor.PROBLEMS)
    assert doctor.PROBLEM_OF_CAUSE[backend.CAUSE_OK] == "ok"
    assert all(p != "ok" for c, p in doctor.PROBLEM_OF_CAUSE.items() if c != backend.CAUSE_OK)


def test_an_unmapped_cause_is_an_error(monkeypatch):
    table = dict(doctor.PROBLEM_OF_CAUSE)
    del table[backend.CAUSE_WRONG_RESULT]
    monkeypatch.setattr(doctor, "PROBLEM_OF_CAUSE", table)
    b = backend.Backend(mode="cpu", reason="r", cause=backend.CAUSE_WRONG_RESULT)
    with pytest.raises(ValueError, match="'wrong-result' has no doctor problem"):
        doctor._problem(b, 12090, 12090, "12.9")


@pytest.mark.parametrize("cause, driver_v, runtime_v, nvrtc_text, problem", [
    # an unclassified compile or launch error with NVRTC unavailable: NVRTC is the fix
    (backend.CAUSE_COMPILE_FAILED, 12090, 12090, "unavailable (libnvrtc.so.12)", "nvrtc-missing"),
    (backend.CAUSE_LAUNCH_FAILED, 12090, 12090, "unavailable (libnvrtc.so.12)", "nvrtc-missing"),
    (backend.CAUSE_RUNTIME_INIT, 12090, 12090, "unavailable (libnvrtc.so.12)", "other"),
    # an unclassified error with no driver found, or a driver older than the runtime
    (backend.CAUSE_RUNTIME_INIT, None, 12090, "12.9", "cpu-runtime"),
    (backend.CAUSE_DRIVER_LIBRARY, 11080, 12090, "12.9", "driver-too-old"),
    (backend.CAUSE_WRONG_RESULT, 12090, 12090, "12.9", "other"),
    # the backend saw an old driver, the doctor finds none to update
    (backend.CAUSE_DRIVER_TOO_OLD, None, 12090, "12.9", "cpu-runtime"),
    # a classified cause stays what it is whatever the versions
    (backend.CAUSE_PTX_TOO_NEW, 11080, 12090, "unavailable (x)", "ptx-too-new"),
    (backend.CAUSE_NO_DEVICE, 11080, 12090, "unavailable (x)", "cpu-runtime"),
])
def test_versions_refine_only_the_unclassified_causes(cause, driver_v, runtime_v, nvrtc_text, problem):
    b = backend.Backend(mode="cpu", reason="r", cause=cause)
    assert doctor._problem(b, driver_v, runtime_v, nvrtc_text) == problem


@pytest.mark.parametrize("cause, reason, points_to_doctor", [
    (backend.CAUSE_FORCED_CPU, "asked for CPU mode", False),
    (backend.CAUSE_LAUNCH_FAILED, f"forced by {backend.FORCE_CPU_ENV}=1", True),
])
def test_banner_points_to_the_doctor_by_cause(monkeypatch, capsys, cause, reason, points_to_doctor):
    import gpu_viz

    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason=reason, cause=cause))
    assert ("gpu_viz.doctor.report()" in gpu_viz.banner()) == points_to_doctor
    capsys.readouterr()


def test_info_in_cpu_mode_says_the_gpu_line_is_the_modelled_one(env, capsys):
    """`gpu-viz info` without a GPU: the spec-sheet GPU the models stand for is labelled as such,
    never printed as if it were found on this machine."""
    env(fake_cupy(count_error=CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")))
    assert cli.main(["info"]) == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert first.startswith("CPU mode")
    assert second.startswith("the GPU the CPU models stand for (none on this machine): ") and "spec sheet" in second


def test_banner_lines_fit_a_projected_slide(monkeypatch, capsys):
    """Bug class: the banner printed one 200-character line that ran off every deck's title slide."""
    import gpu_viz

    long_reason = ("no NVIDIA driver is installed or loaded on this machine, so CUDA cannot start "
                   "[cudaErrorInsufficientDriver] " + "detail " * 20)
    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason=long_reason,
                                                            cause=backend.CAUSE_LAUNCH_FAILED))
    text = gpu_viz.banner()
    capsys.readouterr()
    assert max(len(line) for line in text.splitlines()) <= 72
    assert "cudaErrorInsufficientDriver" in text and "gpu_viz.doctor.report()" in text


@pytest.mark.parametrize("reason, plain, lead", [
    # a reason that says there is no GPU is given as it is ("no GPU" said once)
    ("no NVIDIA driver on this machine, so no GPU to run on [CUDARuntimeError: cudaErrorInsufficientDriver: "
     "CUDA driver version is insufficient for CUDA runtime version]", "no NVIDIA driver on this machine, so no GPU to run on",
     ""),
    ("a probe kernel failed to compile [error: identifier [x] is undefined]", "a probe kernel failed to compile",
     "no usable CUDA GPU: "),
    ("forced by GPU_VIZ_FORCE_CPU=1", "forced by GPU_VIZ_FORCE_CPU=1", "no usable CUDA GPU: "),
])
def test_banner_says_why_in_words_and_leaves_the_raw_error_to_the_doctor(monkeypatch, capsys, reason, plain, lead):
    """The banner is projected on every deck's title slide: it gives the reason in words; the
    library's raw message (the trailing [...]) stays in Backend.reason / describe() for the doctor."""
    import gpu_viz

    b = backend.Backend(mode="cpu", reason=reason, cause=backend.CAUSE_NO_DRIVER)
    monkeypatch.setattr(backend, "_cached", b)
    text = gpu_viz.banner()
    capsys.readouterr()
    assert b.plain_reason == plain
    assert " ".join(text.split()).startswith("CPU MODE -- " + lead + plain)
    assert "cudaError" not in text and "[" not in text.split("\n")[0]
    assert reason in b.describe()


@pytest.mark.parametrize("cause, reason", [
    (backend.CAUSE_NO_DRIVER, "no NVIDIA driver on this machine, so no GPU to run on [cudaErrorInsufficientDriver]"),
    (backend.CAUSE_NO_DEVICE, "no CUDA-capable GPU is visible to this process [cudaErrorNoDevice]"),
    (backend.CAUSE_NVRTC_MISSING, "NVRTC (the run-time CUDA compiler) is missing or failed to load [libnvrtc]"),
    (backend.CAUSE_COMPILE_FAILED, "a probe kernel failed to compile [error]"),
    (backend.CAUSE_FORCED_CPU, f"forced by {backend.FORCE_CPU_ENV}=1"),
])
@pytest.mark.parametrize("recorded", (False, True))
def test_banner_lines_fit_a_slide_and_end_their_sentences(monkeypatch, capsys, cause, reason, recorded):
    """Bug class: the banner, projected on each deck's title slide, left a short tail of the reason
    ("GPU to run on") alone on a line without a full stop, and told the measured chapters' readers
    that CPU-model traces follow.  Every paragraph: lines of at most 72 characters, none under half
    the longest; every sentence ends with a full stop or a question mark; recorded=True names
    committed records, not the CPU model."""
    import gpu_viz

    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason=reason, cause=cause))
    text = gpu_viz.banner(recorded=recorded)
    capsys.readouterr()
    plain = backend.Backend(mode="cpu", reason=reason, cause=cause).plain_reason
    joined = " ".join(text.split())
    assert (plain.rstrip(".") + ".") in joined and (plain + " ") not in joined  # the reason, full stop
    lines = text.splitlines()
    assert all(len(ln) <= 72 for ln in lines), lines
    # the paragraphs: a line ending in a full stop closes one; each must be of even lines
    para, out = [], []
    for ln in lines:
        para.append(ln)
        if ln.endswith("."):
            out.append(para)
            para = []
    assert not para, f"a paragraph does not end its sentence: {para}"
    for p in out:
        assert min(len(ln) for ln in p) >= max(len(ln) for ln in p) / 2, p
    if recorded:
        assert "committed GPU records" in joined and "CPU model" not in joined
        # "no GPU" is said once, by the reason: the records' sentence does not say it again
        said = joined[joined.index("Nothing below"):]
        assert "Nothing below is run here:" in said
        assert "GPU" not in said.split(":")[0] and "on a GPU" not in said, said
    elif emulator.available():
        assert "Kernels below run in the emulator" in joined and "CPU model" in joined
    else:
        assert "Traces below come from the CPU model" in joined and "NVRTC" in joined


def _cpu_reasons():
    """(cause, reason) for CPU mode as the backend words them: its explainers run on the errors
    each failure raises, with and without a driver, plus the probe's own sentences."""
    def cupy(driver, runtime=12090):
        rt = types.SimpleNamespace(driverGetVersion=lambda: driver, runtimeGetVersion=lambda: runtime)
        return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=rt))

    insufficient = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    found = [backend._explain_runtime_error(insufficient, cupy(0)),   # no driver at all
             backend._explain_runtime_error(insufficient, cupy(11080)),  # a driver too old
             backend._explain_runtime_error(insufficient, cupy(13000)),  # one the runtime refuses
             backend._explain_runtime_error(insufficient, None),
             backend._explain_runtime_error(CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device")),
             backend._explain_runtime_error(OSError("libcuda.so.1: cannot open shared object file")),
             backend._explain_runtime_error(CUDARuntimeError("cudaErrorUnknown")),
             backend._explain_compile_error(RuntimeError("cannot open source file cuda_fp16.h")),
             backend._explain_compile_error(RuntimeError("nvrtc: libnvrtc.so.12 not found")),
             backend._explain_compile_error(RuntimeError("error: expected a ;")),
             (backend.CAUSE_NO_DEVICE, "the CUDA runtime reports no GPU"),
             (backend.CAUSE_FORCED_CPU, f"forced by {backend.FORCE_CPU_ENV}=1")]
    return found


#: A reason saying there is no GPU, in any of the words the backend uses for it.
_NO_GPU = re.compile(r"\bno\b[^.;:]*?\bGPU\b", re.IGNORECASE)


@pytest.mark.parametrize("recorded", (False, True))
@pytest.mark.parametrize("cause, reason", _cpu_reasons())
def test_banner_says_no_gpu_once_and_never_splits_a_name(monkeypatch, capsys, cause, reason, recorded):
    """Bug class: the banner's first line ended on "NVIDIA" with "driver" on the next, and said
    "no usable CUDA GPU: no NVIDIA driver ..., so no GPU to run on" -- no GPU twice.  For every
    CPU-mode reason the backend words: its first paragraph says there is no GPU at most once, no
    line ends on a name that belongs to the next word (gpu_viz.words.NO_BREAK: "NVIDIA driver",
    "CUDA runtime", "CUDA 12.9"), and the reason is still there, closed by a full stop."""
    import gpu_viz
    from gpu_viz import words

    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason=reason, cause=cause))
    monkeypatch.setattr(backend, "_chapter_recorded", None)
    text = gpu_viz.banner(recorded=recorded)
    capsys.readouterr()
    lines = text.splitlines()
    first = " ".join(lines[:next(i for i, ln in enumerate(lines) if ln.endswith(".")) + 1])
    assert len(_NO_GPU.findall(first)) <= 1, first
    plain = backend.Backend(mode="cpu", reason=reason, cause=cause).plain_reason
    assert plain.rstrip(".") + "." in " ".join(text.split())
    for a, b in zip(lines, lines[1:]):
        assert not words.NO_BREAK.search(a.split()[-1] + " " + b.split()[0]), (a, b)
    assert all(len(ln) <= 72 for ln in lines)


def test_even_wrapping_never_splits_a_name_or_a_number_from_its_unit():
    """The class, at every width: a line never ends on "NVIDIA" / "CUDA" with what it names on the
    next, nor on a number with its unit on the next; the words and their order are kept, no line is
    longer than asked (unless one unbreakable unit is), and the lines are as few as textwrap's."""
    import textwrap

    from gpu_viz import words

    texts = ["CPU MODE -- no usable CUDA GPU: the NVIDIA driver (CUDA 11.8) is older than the CUDA runtime "
             "CuPy was built for (CUDA 12.9).",
             "recorded on NVIDIA H200, 2026-12-02, driver 580.159.04 (not live): 4,227 GB/s, 4.9 µs, 90 % of copy"]
    glued = ("NVIDIA H200", "NVIDIA driver", "CUDA runtime", "CUDA 11.8", "CUDA 12.9", "4,227 GB/s", "4.9 µs", "90 %")
    for text in texts:
        for width in range(14, 80):
            lines = words.wrap_even(text, width)
            assert " ".join(lines).split() == text.split(), (width, lines)
            assert len(lines) <= len(textwrap.wrap(text, width, break_on_hyphens=False)) + 1, (width, lines)
            for a, b in zip(lines, lines[1:]):
                pair = a.split()[-1] + " " + b.split()[0]
                assert not any(g == pair or g in pair for g in glued), (width, a, b)
            assert all(len(ln) <= width for ln in lines), (width, lines)   # no glued unit is over 13


def test_measured_chapters_say_their_numbers_are_records():
    """The two chapters whose CPU-mode content is committed GPU records (no CPU-model traces)
    print banner(recorded=True); every other notebook prints banner()."""
    from pathlib import Path

    for nb in sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb")):
        text = nb.read_text()
        recorded = "gpu_viz.banner(recorded=True);" in text
        assert recorded or "gpu_viz.banner();" in text, nb.name
        assert recorded == (nb.stem.split("_", 1)[1] in {"rmsnorm_speedup", "fused_rmsnorm_gate", "recap"}), nb.name


def test_a_forced_cpu_mode_is_said_in_words_on_the_banner(monkeypatch, capsys):
    import gpu_viz

    b = backend.Backend(mode="cpu", reason=f"forced by {backend.FORCE_CPU_ENV}=1", cause=backend.CAUSE_FORCED_CPU)
    monkeypatch.setattr(backend, "_cached", b)
    text = " ".join(gpu_viz.banner().split())
    capsys.readouterr()
    assert text.startswith("CPU MODE -- CPU mode was chosen on purpose") and backend.FORCE_CPU_ENV not in text
    assert backend.FORCE_CPU_ENV in b.describe()  # the doctor and logs keep the variable


def test_notebooks_print_the_mode_in_words():
    """Bug class: a notebook printing Backend.describe() put the library's raw error on a slide;
    every notebook call asks for the plain line."""
    import re
    from pathlib import Path

    for nb in sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb")):
        text = nb.read_text()
        assert not re.search(r"describe\(\)|\.reason\b", text), f"{nb.name}: print describe(plain=True) / plain_reason"


def test_cupy_installed_but_home_not_writable_is_not_called_missing(tmp_path):
    """Bug class: every import failure of an installed CuPy was reported as "CuPy is not installed"
    (with a pip line that changes nothing).  CuPy makes ~/.cupy when imported; with $HOME not a
    writable folder the import fails, and the doctor says that, and what to set (CUPY_CACHE_DIR)."""
    import importlib.util
    import os
    import subprocess

    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed here")
    a_file = tmp_path / "a_file"
    a_file.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CUPY_CACHE_DIR", backend.FORCE_CPU_ENV)}
    env["HOME"] = str(a_file / "home")  # under a file: no folder can be made there
    proc = subprocess.run([sys.executable, "-m", "gpu_viz.cli", "doctor"], env=env, capture_output=True,
                          text=True, encoding="utf-8", timeout=300)
    out = proc.stdout + proc.stderr
    assert "CuPy is not installed" not in out, out
    assert "CuPy is installed, but importing it fails" in out and "CUPY_CACHE_DIR" in out, out
    env["CUPY_CACHE_DIR"] = str(tmp_path / "cache")  # the advice works
    proc = subprocess.run([sys.executable, "-c", "import cupy"], env=env, capture_output=True, text=True,
                          encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_broken_cupy_is_told_apart_from_a_missing_one(env, monkeypatch):
    env(None)
    broken = backend.Backend(mode=backend.CPU, cause=backend.CAUSE_CUPY_BROKEN,
                             reason="CuPy failed to import (OSError: libnvrtc.so.12: cannot open shared object file)")
    monkeypatch.setattr(backend, "detect", lambda refresh=False: broken)
    rep = doctor.report(show=False)
    advice = " ".join(rep.advice)
    assert rep.problem == "cupy-broken" and "not installed" not in advice
    assert "importing it fails: OSError: libnvrtc.so.12" in advice and "pip install --force-reinstall" in advice
