"""The child process a learner's kernel runs in on a GPU: its failures reach the notebook as one line
that says what went wrong (bug class: the child's own traceback printing failed and hid the error,
so every kernel read "tokenize.TokenError" on the GPU)."""
import os
import subprocess
import sys

from gpu_viz import kernels
from gpu_viz.exercises import gpu_child


def test_a_failure_is_one_line_with_its_error_lines_and_where():
    try:
        raise RuntimeError("nvrtc: x.cu(3): error: identifier \"foo\" is undefined\nnote\n1 error detected")
    except RuntimeError as exc:
        line = gpu_child._failure(exc)
    assert "\n" not in line and line.startswith("RuntimeError: ") and "identifier \"foo\" is undefined" in line
    assert "(at test_gpu_child.py:" in line


def test_the_child_reports_a_bad_job_in_one_line(tmp_path):
    """A job folder without its files: the child exits 1 with one line naming the error, no traceback."""
    proc = subprocess.run([sys.executable, "-m", "gpu_viz.exercises.gpu_child", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "GPU_VIZ_FORCE_CPU": "1"})
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("FileNotFoundError: ") and "Traceback" not in proc.stderr


def test_gpu_options_are_the_base_options_without_a_gpu():
    """Without CuPy's runtime (no GPU) nothing is added; with one, only CCCL's folder of CuPy's CUDA major."""
    opts = kernels.gpu_options()
    assert opts[:len(kernels.BASE_OPTIONS)] == kernels.BASE_OPTIONS
    assert all(o.startswith("-I") and o.endswith("cccl") for o in opts[len(kernels.BASE_OPTIONS):])


def test_the_cccl_folder_is_the_one_of_cupys_cuda_major(tmp_path, monkeypatch):
    """Bug class: the header search stopped at the first CUDA headers on sys.path (another CUDA
    version's, without include/cccl), so CuPy's compiles never found nv/target."""
    from gpu_viz import cuda_headers

    for name, version in (("cu12", 12080), ("cu13", 13020)):
        inc = tmp_path / "nvidia" / name / "include"
        (inc / "cccl" / "nv").mkdir(parents=True)
        (inc / "cuda_fp16.h").write_text("")
        (inc / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION  {version}\n")
    monkeypatch.setattr(cuda_headers.sys, "path", [str(tmp_path)])
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    cuda_headers.cccl_dir.cache_clear()
    try:
        assert cuda_headers.cccl_dir(13) == str(tmp_path / "nvidia" / "cu13" / "include" / "cccl")
        assert cuda_headers.cccl_dir(12) == str(tmp_path / "nvidia" / "cu12" / "include" / "cccl")
        assert cuda_headers.cccl_dir(11) is None
    finally:
        cuda_headers.cccl_dir.cache_clear()
