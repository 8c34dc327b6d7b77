"""The fused ops' C++ launcher (``kernels/rmsnorm_launcher.cpp``): built on this machine, loaded
when built.

What it does: the eager per-call path of :mod:`gpu_viz.rmsnorm.fused.launch` for torch CUDA tensors --
the plan cache, the output allocation, ``cuLaunchKernel`` and, for operands that require grad,
a C++ autograd node -- in C++, so that a call costs about what a native torch op costs.  Every
check and every launch decision stays in Python: a layout the launcher has no plan for goes to
Python, which validates it, makes its plan and registers the plan here.

How it is built: with the system C++ compiler against the installed torch's headers and
libraries (no CUDA toolkit, no nvcc, no ninja), once per source / torch / Python version, into
``$GPU_VIZ_CACHE_DIR`` (default ``~/.cache/gpu_viz``).  A compile takes ~30-60 s, so the first
CUDA call of a fused op starts it in a background process (so that a script ending first still
leaves it built; one build at a time per machine) and calls are served by the Python
launcher until it is loaded; :func:`ensure` builds in the foreground (the benchmark, the GPU
checks: ``python -m gpu_viz.rmsnorm.launcher``).

``GPU_VIZ_LAUNCHER=python`` never builds or uses it.  Where it cannot be built (no compiler, no
torch headers), :func:`status` says why, and the ops keep the Python launcher: same kernels,
same results, ~1.5x the per-call time.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, List, Optional

from .. import kernels

SOURCE = "rmsnorm_launcher.cpp"
#: ``GPU_VIZ_LAUNCHER``: "cpp" (default: build, then use) or "python" (never build or use).
ENV = "GPU_VIZ_LAUNCHER"
CACHE_ENV = "GPU_VIZ_CACHE_DIR"
#: The driver library the launcher opens (tests point it at a stub through :func:`load`).
DRIVER = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
#: Seconds a compile may take before it counts as failed.
BUILD_TIMEOUT_S = 900

_LOCK = threading.Lock()
#: The build's state in this process: ``module`` the loaded launcher (None before, or where it
#: cannot be built), ``reason`` why not, ``thread`` the background build, ``path`` the library.
STATE = {"module": None, "reason": None, "thread": None, "path": None}
#: The autograd node's backward (:func:`set_backward`; the fused ops' autograd layer gives it).
_BACKWARD: List[Optional[Callable]] = [None]


class LauncherUnavailable(RuntimeError):
    """The C++ launcher cannot be built or loaded here; the message says why in words."""


#: The values ``GPU_VIZ_LAUNCHER`` takes (unset: "cpp").
ENV_VALUES = ("cpp", "python")


def _env_value() -> str:
    return os.environ.get(ENV, "cpp").strip().lower() or "cpp"


def enabled() -> bool:
    """False when ``GPU_VIZ_LAUNCHER`` is "python" or a value it does not take (which
    :func:`status` names)."""
    return _env_value() == "cpp"


def _off_reason() -> str:
    v = os.environ.get(ENV)
    if _env_value() == "python":
        return f"turned off ({ENV}={v})"
    return f"turned off: {ENV} must be one of {', '.join(ENV_VALUES)}, got {v!r}"


def driver_present() -> bool:
    """Whether this machine's CUDA driver library (:data:`DRIVER`) can be opened: without it the
    launcher builds but has nothing to launch with (and the fused ops need a GPU anyway)."""
    import ctypes

    try:
        ctypes.CDLL(DRIVER)
        return True
    except OSError:
        return False


def cache_dir() -> Path:
    """Where built launchers are kept: ``$GPU_VIZ_CACHE_DIR/launcher`` or ``~/.cache/gpu_viz/launcher``."""
    root = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "gpu_viz")
    return Path(root) / "launcher"


def source_path() -> Path:
    return kernels.KERNEL_DIR / SOURCE


def _torch():
    try:
        import torch
        import torch.utils.cpp_extension  # noqa: F401  (its include and library paths)
    except ImportError as e:  # pragma: no cover - the course environment has torch
        raise LauncherUnavailable(f"torch is not installed ({e})") from None
    return torch


def module_name() -> str:
    """``gpu_viz_launcher_<digest>``: the digest covers the source, torch's version and build, the
    Python ABI and the platform, so a changed one of them builds afresh."""
    torch = _torch()
    h = hashlib.sha256(source_path().read_bytes())
    for part in (torch.__version__, str(getattr(torch.version, "git_version", "")), sys.implementation.cache_tag,
                 sysconfig.get_config_var("EXT_SUFFIX") or "", platform.machine(),
                 str(int(torch._C._GLIBCXX_USE_CXX11_ABI))):
        h.update(b"\0" + part.encode())
    return "gpu_viz_launcher_" + h.hexdigest()[:16]


def compiler() -> Optional[str]:
    """The C++ compiler: ``$CXX``, else g++, c++ or clang++ on PATH (None if there is none)."""
    env = os.environ.get("CXX")
    if env:
        return shutil.which(env) or (env if os.path.isfile(env) else None)
    for name in ("g++", "c++", "clang++"):
        found = shutil.which(name)
        if found:
            return found
    return None


def compile_command(out: Path, std: str = "c++17", name: Optional[str] = None) -> List[str]:
    """The compiler's command line building ``out`` (a shared library) from :data:`SOURCE`."""
    torch = _torch()
    from torch.utils import cpp_extension

    cxx = compiler()
    if cxx is None:
        raise LauncherUnavailable("no C++ compiler found (set CXX, or install g++)")
    name = name or module_name()
    inc = list(cpp_extension.include_paths()) + [sysconfig.get_paths()["include"]]
    libs = list(cpp_extension.library_paths())
    cmd = [cxx, str(source_path()), "-o", str(out), "-shared", "-fPIC", "-O2", f"-std={std}", "-w",
           f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
           f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    cmd += [f"-I{p}" for p in inc] + [f"-L{p}" for p in libs] + [f"-Wl,-rpath,{p}" for p in libs]
    cmd += ["-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]
    if sys.platform != "win32":
        cmd.append("-ldl")
    return cmd


@contextmanager
def _build_lock(target: Path):
    """One build of ``target`` at a time across processes (an flock, released when its process
    ends however it ends); no lock where fcntl is missing."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(target.with_name(target.name + ".lock"), "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build(force: bool = False, timeout: float = BUILD_TIMEOUT_S) -> Path:
    """Compile the launcher (or find it compiled already); returns the shared library's path.
    A process building while another builds the same launcher waits for it and takes its result.

    Raises:
        LauncherUnavailable: no torch, no compiler, a cache dir that cannot be written, or the
            compile failed (the compiler's last lines in the message).
    """
    name = module_name()
    ext = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = cache_dir() / (name + ext)
    if target.is_file() and not force:
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _build_lock(target):
            if target.is_file() and not force:
                return target  # built by another process while this one waited
            return _compile(target, name, ext, timeout)
    except OSError as e:
        raise LauncherUnavailable(f"cannot write the launcher's cache dir {target.parent} ({e}); "
                                  f"set {CACHE_ENV} to a writable directory") from None


def _compile(target: Path, name: str, ext: str, timeout: float) -> Path:
    errors = []
    for std in ("c++17", "c++20"):  # torch < 2.10 builds with C++17; newer headers may want C++20
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            out = Path(tmp) / (name + ext)
            try:
                r = subprocess.run(compile_command(out, std, name), capture_output=True, text=True,
                                   encoding="utf-8", errors="replace", timeout=timeout)
            except subprocess.TimeoutExpired:
                raise LauncherUnavailable(f"the compile took more than {timeout:.0f} s") from None
            except OSError as e:  # (the compiler's own; the cache dir's reach build() as OSError)
                raise LauncherUnavailable(f"the compiler could not be run ({e})") from None
            if r.returncode == 0 and out.is_file():
                os.replace(out, target)  # atomic: a concurrent build's result is as good
                return target
            errors.append(f"-std={std}: " + "\n".join((r.stderr or r.stdout).strip().splitlines()[-6:]))
    raise LauncherUnavailable("the C++ launcher did not compile:\n" + "\n".join(errors))


def load(path: Path, backward: Callable, driver: str = DRIVER, allow_cpu: bool = False, max_plans: int = 1024):
    """Import the built launcher at ``path`` and initialise it.

    Args:
        backward: ``backward(op, grad_y, grad_h, x, x2, weight, h, eps, offset, needs)`` ->
            ``(dx, dx2, dweight)`` (tensors or None): what the autograd node calls.
        driver: the CUDA driver library to open (tests: a stub recording the launches).
        allow_cpu: tests only: take CPU tensors (launched on no stream, into the stub).
        max_plans: plans kept before the cache starts again empty.
    Raises:
        LauncherUnavailable: the library does not import, or the driver cannot be opened.
    """
    torch = _torch()
    name = Path(path).name.split(".")[0]
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except ImportError as e:
        raise LauncherUnavailable(f"the built launcher does not import ({e})") from None
    why = mod.init(torch.Tensor, torch.nn.Parameter, backward, driver, bool(allow_cpu), int(max_plans))
    if why:
        raise LauncherUnavailable(why)
    return mod


def _build_in_child(timeout: float = BUILD_TIMEOUT_S) -> Path:
    """:func:`build` in a process of its own (the background build): the compile then finishes,
    and its result is kept, also when this process exits first (a short script); the next
    process finds it built instead of compiling again."""
    code = ("import sys\nfrom gpu_viz.rmsnorm import launcher\ntry:\n    print(launcher.build())\n"
            "except launcher.LauncherUnavailable as e:\n    sys.stderr.write(str(e))\n    sys.exit(3)\n")
    root = str(Path(__file__).resolve().parents[2])  # the directory holding the gpu_viz package
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        r = subprocess.run([sys.executable, "-c", code], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, encoding="utf-8", errors="replace", timeout=timeout + 120,
                           start_new_session=sys.platform != "win32")
    except subprocess.TimeoutExpired:
        raise LauncherUnavailable(f"the build took more than {timeout + 120:.0f} s") from None
    except OSError as e:
        raise LauncherUnavailable(f"the build process could not be started ({e})") from None
    if r.returncode == 3:
        raise LauncherUnavailable(r.stderr.strip())
    path = Path(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 and r.stdout.strip() else None
    if path is None or not path.is_file():
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-6:])
        raise LauncherUnavailable(f"the build process failed (exit status {r.returncode}):\n{tail}")
    return path


def set_backward(backward: Callable) -> None:
    """The function the loaded launcher's autograd node calls for gradients:
    ``backward(op, grad_y, grad_h, x, x2, weight, h, eps, offset, needs)`` -> ``(dx, dx2,
    dweight)``.  The fused ops' autograd layer sets it when it is imported; a launcher loaded
    before that (the command line's) reaches it through :func:`_backward`."""
    _BACKWARD[0] = backward


def _backward(*args):
    """What a launcher loaded by :func:`poll` / :func:`ensure` calls: :func:`set_backward`'s."""
    if _BACKWARD[0] is None:
        raise RuntimeError("the fused ops' autograd layer is not imported: import gpu_viz.ops first")
    return _BACKWARD[0](*args)


def _build_and_load(backward: Callable) -> None:
    try:
        path = built_path() or _build_in_child()
        STATE["path"] = path
        STATE["module"] = load(path, backward)
    except LauncherUnavailable as e:
        STATE["reason"] = str(e)
    except Exception as e:  # noqa: BLE001 - a launcher that fails leaves the Python one, said why
        STATE["reason"] = f"{type(e).__name__}: {e}"


def poll(backward: Callable = _backward):
    """The loaded launcher, or None (not built yet, disabled, or unavailable).  The first call
    starts the build in a background thread; later calls return its result once it is done.
    ``backward``: what its autograd node calls (tests give their own)."""
    mod = STATE["module"]
    if mod is not None or STATE["reason"] is not None:
        return mod
    with _LOCK:
        t = STATE["thread"]
        if t is None:
            if not enabled():
                STATE["reason"] = _off_reason()
                return None
            t = threading.Thread(target=_build_and_load, args=(backward,), name="gpu_viz-launcher-build",
                                 daemon=True)
            STATE["thread"] = t
            t.start()
            return None
    return STATE["module"] if not t.is_alive() else None


def ensure(backward: Callable = _backward, timeout: Optional[float] = None, say: Optional[Callable] = print):
    """Build (in the foreground) and load the launcher; returns it, or None with
    :func:`status` saying why.  ``say`` (None: silent) is told when a compile starts, since it
    takes ~30-60 s."""
    if say is not None and STATE["thread"] is None and enabled() and built_path() is None:
        say("Building the fused ops' C++ launcher (once on this machine, ~30-60 s) ...")
    poll(backward)
    t = STATE["thread"]
    if t is not None:
        t.join(timeout)
    return STATE["module"]


def status() -> str:
    """One line: "built: <path>", "building", "not built yet", or why it is unavailable."""
    if STATE["module"] is not None:
        return f"built: {STATE['path']}"
    if STATE["reason"] is not None:
        return f"unavailable: {STATE['reason']}"
    t = STATE["thread"]
    if t is not None and t.is_alive():
        return "building"
    return "not built yet (the first CUDA call of a fused op builds it)"


def built_path() -> Optional[Path]:
    """The launcher already built for this source, torch and Python, or None (nothing is built)."""
    try:
        target = cache_dir() / (module_name() + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    except LauncherUnavailable:
        return None
    return target if target.is_file() else None


def describe() -> str:
    """The doctor's line: whether the fused ops' calls go through the C++ launcher, and if not,
    why and what to do (builds nothing)."""
    if STATE["module"] is not None or STATE["reason"] is not None or STATE["thread"] is not None:
        s = status()
    elif not enabled():
        s = _off_reason()
    elif not driver_present():
        if built_path() is not None:
            return (f"built ({built_path()}), unused here: this machine has no CUDA driver ({DRIVER}); "
                    "on a GPU machine the fused ops' first call loads it")
        return (f"not built, and not needed here: this machine has no CUDA driver ({DRIVER}), so the fused "
                "ops have no GPU to run on")
    elif built_path() is not None:
        return f"built ({built_path()}); loaded by the first CUDA call of a fused op"
    elif compiler() is None:
        s = "unavailable: no C++ compiler found (set CXX, or install g++)"
    else:
        return ("not built yet: the first CUDA call of a fused op builds it in the background (~30-60 s), "
                "or build it now with: python -m gpu_viz.rmsnorm.launcher")
    if s.startswith("built") or s == "building":
        return s
    return s + "; the fused ops use the Python launcher (same kernels and results, more time per call)"


def _reset_for_tests() -> None:
    with _LOCK:
        STATE.update(module=None, reason=None, thread=None, path=None)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m gpu_viz.rmsnorm.launcher``: build the launcher now and load it; exit 0 when the
    fused ops' calls will use it, 1 when not (with why), 2 for bad options."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m gpu_viz.rmsnorm.launcher",
        description="Build the fused ops' C++ launcher now (once per torch version; ~30-60 s) and "
                    "load it, instead of in the background on the first CUDA call. Prints whether "
                    "calls will use it, and why not where they will not.")
    parser.parse_args(argv)
    if not enabled():
        print(f"Not built: {_off_reason()}; the fused ops use the Python launcher.")
        return 1
    if not driver_present():
        try:
            path = build()
        except LauncherUnavailable as e:
            print(f"Not built: {e}")
            return 1
        print(f"Built: {path}.  Not loaded: this machine has no CUDA driver ({DRIVER}), so there is no "
              "GPU for the fused ops here; on a GPU machine their first call loads it.")
        return 1
    ensure()
    say = status()
    print(("Built and loaded: " + say[len("built: "):]) if STATE["module"] is not None else say)
    return 0 if STATE["module"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
