"""The product scripts in scripts/ run: each imports the package's current names (a renamed module
would otherwise surface only on the GPU machine), and the sanitizer scripts say so without a GPU."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, GPU_VIZ_FORCE_CPU="1")


@pytest.mark.parametrize("script", ["gpu_check_record.py", "slides_record.py", "strip_notebooks.py", "nbkit.py"])
def test_tool_answers_help(script):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--help"], capture_output=True,
                          text=True, env=ENV, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "scripts" / "sanitize").glob("*.py")))
def test_sanitize_script_imports_and_says_no_gpu(script):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "sanitize" / script)], capture_output=True,
                          text=True, env=ENV, timeout=120)
    assert proc.returncode == 2 and "no GPU" in proc.stderr, (script, proc.stderr[-2000:])


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "scripts" / "sanitize").glob("*.py")))
def test_sanitize_script_imports_the_package_before_the_gpu_check(script, tmp_path):
    """The check above can fail: a script whose package import names a module that is gone stops
    with ModuleNotFoundError in CPU mode too (its gpu_viz imports come before the GPU check)."""
    src = (ROOT / "scripts" / "sanitize" / script).read_text()
    check = src.index("if not backend.has_gpu():")
    assert "from gpu_viz" in src[src.index("def main"):check], "no package import before the GPU check"
    broken = src[:check] + "from gpu_viz.no_such_module import nothing  # noqa\n    " + src[check:]
    (tmp_path / script).write_text(broken)
    proc = subprocess.run([sys.executable, str(tmp_path / script)], capture_output=True, text=True, env=ENV,
                          timeout=120, cwd=ROOT)
    assert proc.returncode not in (0, 2) and "No module named 'gpu_viz.no_such_module'" in proc.stderr, proc.stderr[-1500:]
