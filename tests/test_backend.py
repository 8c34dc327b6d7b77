"""backend.detect(): GPU or CPU mode, surviving every failure mode with a plain-words reason."""
import sys
import types

import pytest

from gpu_viz import backend


@pytest.fixture(autouse=True)
def fresh_probe(monkeypatch):
    monkeypatch.delenv(backend.FORCE_CPU_ENV, raising=False)
    saved = backend._cached
    backend._cached = None
    yield
    backend._cached = saved


class CUDARuntimeError(RuntimeError):
    pass


class CompileException(Exception):
    pass


def fake_cupy(count=1, count_error=None, compile_error=None, launch_error=None, wrong=False):
    """A stand-in for cupy with exactly the surface the probe touches."""
    cp = types.ModuleType("cupy")
    rt = types.SimpleNamespace()

    def get_count():
        if count_error:
            raise count_error
        return count

    rt.getDeviceCount = get_count
    rt.getDevice = lambda: 0
    rt.getDeviceProperties = lambda i: {"name": b"Fake GPU", "major": 8, "minor": 9}
    cp.cuda = types.SimpleNamespace(runtime=rt)
    cp.int32 = "int32"

    class Arr:
        def __init__(self, n):
            self.data = [-1] * n

        def get(self):
            return types.SimpleNamespace(tolist=lambda: list(self.data))

    cp.full = lambda n, v, dtype=None: Arr(n)

    class Module:
        def __init__(self, code, options=()):
            if compile_error:
                raise compile_error

        def get_function(self, name):
            def kernel(grid, block, args):
                if launch_error:
                    raise launch_error
                out = args[0]
                out.data = [3 * i + 3 + (1 if wrong else 0) for i in range(block[0])]
            return kernel

    cp.RawModule = Module
    return cp


def test_cupy_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    b = backend.detect(refresh=True)
    assert b.mode == "cpu" and "CuPy is not installed" in b.reason and "pip install" in b.reason
    assert not backend.has_gpu()


def test_cupy_import_crashes(monkeypatch):
    class Boom(types.ModuleType):
        def __getattr__(self, name):
            raise OSError("libcudart.so.12: cannot open shared object file")

    monkeypatch.setitem(sys.modules, "cupy", Boom("cupy"))
    b = backend.detect(refresh=True)
    assert b.mode == "cpu" and "libcudart" in b.reason


def test_insufficient_driver_is_cpu_mode(monkeypatch):
    """A driver older than the runtime: the reason says so and names the driver's CUDA version
    (from CuPy's driverGetVersion)."""
    err = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    cp = fake_cupy(count_error=err)
    cp.cuda.runtime.driverGetVersion = lambda: 11080
    cp.cuda.runtime.runtimeGetVersion = lambda: 12090
    monkeypatch.setitem(sys.modules, "cupy", cp)
    b = backend.detect(refresh=True)
    assert b.mode == "cpu"
    assert "older than the CUDA runtime" in b.reason and "CUDA 11.8" in b.reason and "CUDA 12.9" in b.reason
    assert "cudaErrorInsufficientDriver" in b.reason and "no NVIDIA driver" not in b.reason
    # a driver the runtime calls insufficient although it is newer (a broken install): not "older"
    cp.cuda.runtime.driverGetVersion = lambda: 13000
    b = backend.detect(refresh=True)
    assert "older" not in b.reason and "insufficient for the CUDA runtime" in b.reason and "CUDA 13.0" in b.reason


@pytest.mark.parametrize("cupy_says", [0, RuntimeError("no driver"), None])
def test_insufficient_driver_without_any_driver_says_no_driver(monkeypatch, cupy_says):
    """Bug class: the runtime's cudaErrorInsufficientDriver also means "no driver at all" (a
    laptop, CI, a Colab CPU runtime), and the banner used to tell those users their driver was
    missing *or too old*.  With no driver version from CuPy (0, an error, or no such call) and
    no libcuda, the reason says there is no driver and no GPU; with libcuda reporting a version,
    that version is named instead."""
    err = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    cp = fake_cupy(count_error=err)
    if isinstance(cupy_says, Exception):
        def boom():
            raise cupy_says
        cp.cuda.runtime.driverGetVersion = boom
    elif cupy_says is not None:
        cp.cuda.runtime.driverGetVersion = lambda: cupy_says
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(backend, "libcuda_driver_version", lambda: None)
    b = backend.detect(refresh=True)
    assert b.mode == "cpu" and "no NVIDIA driver on this machine" in b.reason
    assert "older" not in b.reason and "cudaErrorInsufficientDriver" in b.reason
    monkeypatch.setattr(backend, "libcuda_driver_version", lambda: 12040)
    b = backend.detect(refresh=True)
    assert "CUDA 12.4" in b.reason and "no NVIDIA driver" not in b.reason


def test_device_properties_failing_after_a_device_count_is_not_no_driver(monkeypatch):
    """getDeviceCount found a GPU, then getDeviceProperties raised cudaErrorInsufficientDriver:
    the reason must not say there is no driver when one answered (it names its version)."""
    err = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    cp = fake_cupy()
    cp.cuda.runtime.driverGetVersion = lambda: 12040
    def boom(i):
        raise err
    cp.cuda.runtime.getDeviceProperties = boom
    monkeypatch.setitem(sys.modules, "cupy", cp)
    b = backend.detect(refresh=True)
    assert b.mode == "cpu" and "no NVIDIA driver" not in b.reason and "CUDA 12.4" in b.reason


def test_detect_never_raises_when_the_driver_probe_does(monkeypatch):
    """The driver-version probe runs inside the probe's error path: if it raised, detect() would."""
    err = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(count_error=err))
    def boom():
        raise ImportError("No module named '_ctypes'")
    monkeypatch.setattr(backend, "libcuda_driver_version", boom)
    b = backend.detect(refresh=True)
    assert b.mode == "cpu" and "no NVIDIA driver on this machine" in b.reason


def test_no_device(monkeypatch):
    err = CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(count_error=err))
    assert "no CUDA-capable GPU" in backend.detect(refresh=True).reason
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(count=0))
    assert "no GPU" in backend.detect(refresh=True).reason


def test_nvrtc_without_headers(monkeypatch):
    err = CompileException('catastrophic error: cannot open source file "cuda_fp16.h"')
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(compile_error=err))
    b = backend.detect(refresh=True)
    assert b.mode == "cpu" and "cannot find the CUDA headers" in b.reason


def test_nvrtc_missing_library(monkeypatch):
    err = OSError("libnvrtc.so.12: cannot open shared object file (nvrtc)")
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(compile_error=err))
    assert "NVRTC" in backend.detect(refresh=True).reason


def test_ptx_too_new_for_driver(monkeypatch):
    err = RuntimeError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported toolchain")
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(launch_error=err))
    b = backend.detect(refresh=True)
    assert b.mode == "cpu" and "update the NVIDIA driver" in b.reason


def test_probe_checks_the_result(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(wrong=True))
    b = backend.detect(refresh=True)
    assert b.mode == "cpu" and "wrong values" in b.reason


def test_working_stack_is_gpu_mode(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    b = backend.detect(refresh=True)
    assert b.is_gpu and b.device_name == "Fake GPU" and b.sm == "sm_89"
    assert "Fake GPU (sm_89)" in b.describe()


def test_forced_cpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    monkeypatch.setenv(backend.FORCE_CPU_ENV, "1")
    b = backend.detect(refresh=True)
    assert b.mode == "cpu" and backend.FORCE_CPU_ENV in b.reason


def test_detect_is_cached(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    first = backend.detect(refresh=True)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    assert backend.detect() is first
    assert backend.detect(refresh=True).is_gpu


def test_require_gpu_names_what_and_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    backend.detect(refresh=True)
    with pytest.raises(backend.GPUUnavailable, match="timing the kernel needs a CUDA GPU.*CuPy is not installed"):
        backend.require_gpu("timing the kernel")
    assert backend.provenance() == backend.MODEL_LABEL


def test_real_stack_never_raises():
    # Whatever this machine has (CI: CuPy without a driver), the probe answers.
    b = backend.detect(refresh=True)
    assert b.mode in ("gpu", "cpu")
    assert b.is_gpu or b.reason


def test_recorded_label_says_not_live():
    assert backend.recorded_label("NVIDIA H200", "2026-11-29") == "recorded on NVIDIA H200, 2026-11-29 (not live)"


# ----------------------------------------------------------------------------- cause codes
INSUFFICIENT = CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")


def _with_versions(cp, driver, runtime):
    cp.cuda.runtime.driverGetVersion = lambda: driver
    cp.cuda.runtime.runtimeGetVersion = lambda: runtime
    return cp


def _failing_properties(error):
    cp = fake_cupy()

    def boom(i):
        raise error
    cp.cuda.runtime.getDeviceProperties = boom
    return cp


def _install(cupy, force=None):
    """A probe path: ``cupy`` stands in for the module (None: not installed); ``force`` is the
    GPU_VIZ_FORCE_CPU value (None: unset)."""
    def setup(monkeypatch):
        monkeypatch.setitem(sys.modules, "cupy", cupy)
        if force is not None:
            monkeypatch.setenv(backend.FORCE_CPU_ENV, force)
    return setup


def _install_crashing_import(monkeypatch):
    """`import cupy` itself raises OSError, as a CuPy whose extension cannot load its CUDA library."""
    import importlib.abc
    import importlib.util

    class Loader(importlib.abc.Loader):
        def create_module(self, spec):
            return None

        def exec_module(self, module):
            raise OSError("libcudart.so.12: cannot open shared object file")

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            return importlib.util.spec_from_loader(name, Loader()) if name == "cupy" else None

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Finder()] + sys.meta_path)


class _BreaksOnUse(types.ModuleType):
    """A CuPy that imports, then cannot load libcudart on first use."""

    def __getattr__(self, name):
        raise OSError("libcudart.so.12: cannot open shared object file")


# Each cause code and the probe paths that must produce it (no libcuda answers in any of them).
CAUSE_PATHS = {
    backend.CAUSE_OK: [_install(fake_cupy())],
    backend.CAUSE_FORCED_CPU: [_install(fake_cupy(), force="1")],
    backend.CAUSE_CUPY_MISSING: [_install(None)],
    backend.CAUSE_CUPY_BROKEN: [_install_crashing_import],
    backend.CAUSE_NO_DRIVER: [_install(_with_versions(fake_cupy(count_error=INSUFFICIENT), 0, 12090))],
    backend.CAUSE_DRIVER_TOO_OLD: [
        _install(_with_versions(fake_cupy(count_error=INSUFFICIENT), 11080, 12090)),
        _install(_with_versions(_failing_properties(INSUFFICIENT), 11080, 12090))],
    backend.CAUSE_DRIVER_INSUFFICIENT: [
        _install(_with_versions(fake_cupy(count_error=INSUFFICIENT), 13000, 12090))],
    backend.CAUSE_NO_DEVICE: [
        _install(fake_cupy(count_error=CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected"))),
        _install(fake_cupy(count=0))],
    backend.CAUSE_DRIVER_LIBRARY: [
        _install(fake_cupy(count_error=OSError("libcuda.so.1: cannot open shared object file"))),
        _install(_BreaksOnUse("cupy"))],
    backend.CAUSE_RUNTIME_INIT: [
        _install(fake_cupy(count_error=CUDARuntimeError("cudaErrorInitializationError: initialization error")))],
    backend.CAUSE_DEVICE_PROPERTIES: [
        _install(_failing_properties(CUDARuntimeError("cudaErrorUnknown: unknown error"))),
        _install(_failing_properties(KeyError("name")))],
    backend.CAUSE_NVRTC_MISSING: [
        _install(fake_cupy(compile_error=OSError("libnvrtc.so.12: cannot open shared object file (nvrtc)"))),
        _install(fake_cupy(launch_error=RuntimeError("nvrtc: libnvrtc.so.12 not found")))],  # lazy compile
    backend.CAUSE_NVRTC_HEADERS: [
        _install(fake_cupy(compile_error=CompileException('cannot open source file "cuda_fp16.h"'))),
        _install(fake_cupy(launch_error=CompileException('catastrophic error: "cuda_fp16.h" not found')))],
    backend.CAUSE_COMPILE_FAILED: [
        _install(fake_cupy(compile_error=CompileException('error: identifier "foo" is undefined')))],
    backend.CAUSE_PTX_TOO_NEW: [
        _install(fake_cupy(launch_error=RuntimeError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was "
                                                     "compiled with an unsupported toolchain")))],
    backend.CAUSE_LAUNCH_FAILED: [
        _install(fake_cupy(launch_error=CUDARuntimeError("cudaErrorLaunchFailure: unspecified launch failure")))],
    backend.CAUSE_WRONG_RESULT: [_install(fake_cupy(wrong=True))],
}


def test_causes_are_distinct_named_strings():
    assert len(set(backend.CAUSES)) == len(backend.CAUSES)
    named = {v for k, v in vars(backend).items() if k.startswith("CAUSE_")}
    assert named == set(backend.CAUSES), "every CAUSE_* constant is in CAUSES and nothing else is"
    assert all(isinstance(c, str) and c for c in backend.CAUSES)


def test_every_cause_has_a_probe_path():
    assert set(CAUSE_PATHS) == set(backend.CAUSES)


@pytest.mark.parametrize("cause, index", [(c, i) for c, paths in CAUSE_PATHS.items() for i in range(len(paths))])
def test_probe_sets_the_cause(monkeypatch, cause, index):
    """Every cause code comes out of _probe on some path, with the matching mode and, in CPU
    mode, a reason."""
    CAUSE_PATHS[cause][index](monkeypatch)
    monkeypatch.setattr(backend, "libcuda_driver_version", lambda: None)
    b = backend.detect(refresh=True)
    assert b.cause == cause, b.reason
    assert b.is_gpu == (cause == backend.CAUSE_OK)
    assert b.is_gpu or b.reason


def test_cupy_raising_on_import_says_it_failed_to_import(monkeypatch):
    _install_crashing_import(monkeypatch)
    b = backend.detect(refresh=True)
    assert b.cause == backend.CAUSE_CUPY_BROKEN
    assert "CuPy failed to import (OSError: libcudart.so.12" in b.reason


def test_runtime_error_without_cupy_to_ask_is_driver_insufficient():
    cause, reason = backend._explain_runtime_error(INSUFFICIENT, None)
    assert cause == backend.CAUSE_DRIVER_INSUFFICIENT and "missing or older" in reason


def test_backend_defaults_gpu_cause_and_rejects_bad_ones():
    assert backend.Backend(mode="gpu").cause == backend.CAUSE_OK
    assert backend.Backend(mode="cpu", reason="r", cause=backend.CAUSE_NO_DEVICE).cause == backend.CAUSE_NO_DEVICE
    with pytest.raises(ValueError, match="needs a cause"):
        backend.Backend(mode="cpu", reason="r")
    with pytest.raises(ValueError, match="unknown Backend cause 'no-gpu'"):
        backend.Backend(mode="cpu", reason="r", cause="no-gpu")
    with pytest.raises(ValueError, match="contradicts mode"):
        backend.Backend(mode="cpu", reason="r", cause=backend.CAUSE_OK)
    with pytest.raises(ValueError, match="contradicts mode"):
        backend.Backend(mode="gpu", cause=backend.CAUSE_NO_DEVICE)
    with pytest.raises(ValueError, match="mode must be"):
        backend.Backend(mode="GPU")


@pytest.mark.parametrize("cause, reason", [
    (backend.CAUSE_NO_DRIVER, "no NVIDIA driver on this machine, so no GPU to run on [CUDARuntimeError: "
                              "cudaErrorInsufficientDriver: CUDA driver version is insufficient]"),
    (backend.CAUSE_NO_DEVICE, "the CUDA runtime reports no GPU"),
    (backend.CAUSE_CUPY_MISSING, "CuPy is not installed (No module named 'cupy'); pip install cupy-cuda12x"),
    (backend.CAUSE_WRONG_RESULT, "a probe kernel ran but returned wrong values ([0, 0]... expected [3, 6]...)."),
    (backend.CAUSE_FORCED_CPU, f"forced by {backend.FORCE_CPU_ENV}=1"),
])
def test_describe_is_one_closed_sentence_saying_what_cpu_mode_shows(monkeypatch, cause, reason):
    """Bug class: describe(plain=True), printed on a slide, ended "..., so no GPU to run on" with
    no full stop, said "model traces" on a chapter that shows committed GPU records (08 speed-up),
    and a forced run read "CPU mode (...): CPU mode was chosen".  Every form: one sentence closed by
    one full stop, "CPU mode" said once, the reason kept; ``recorded`` picks the words, and left
    out it follows what this process's banner said."""
    import gpu_viz

    monkeypatch.setattr(backend, "_chapter_recorded", None)
    b = backend.Backend(mode="cpu", reason=reason, cause=cause)
    for plain in (True, False):
        why = (b.plain_reason if plain else b.reason).rstrip(".")
        for recorded in (True, False, None):
            line = b.describe(plain=plain, recorded=recorded)
            assert line.endswith(".") and not line.endswith(".."), line
            assert line.count("CPU mode") == 1, line
            assert why.removeprefix("CPU mode ") in line, line
            shows_records = bool(recorded)
            assert ("committed GPU records" in line) == shows_records, line
            assert ("model traces" in line) == (not shows_records), line
    monkeypatch.setattr(backend, "_cached", b)
    for recorded in (True, False):
        gpu_viz.banner(recorded=recorded)   # the chapter says what it shows; describe follows
        assert ("committed GPU records" in b.describe(plain=True)) == recorded
        assert b.describe(plain=True, recorded=not recorded) != b.describe(plain=True)


def test_describe_in_gpu_mode_is_unchanged_by_the_chapter(monkeypatch):
    monkeypatch.setattr(backend, "_chapter_recorded", True)
    b = backend.Backend(mode="gpu", device_name="NVIDIA L4", compute_capability=(8, 9))
    assert b.describe(plain=True) == b.describe(recorded=False) == "GPU mode: NVIDIA L4 (sm_89)"
