#!/usr/bin/env bash
# Install the course into a Python environment: the class image's only install step (Dockerfile),
# and what CI runs in a plain venv so that the recipe is tested (tests/test_classkit_deploy.py).
#
#   hub/install-course.sh PYTHON WHEEL
#     PYTHON  the environment's python (e.g. /opt/course/bin/python, a venv's bin/python)
#     WHEEL   the course's wheel, gpu_viz-*.whl (python -m pip wheel --no-deps -w DIR <the course>)
#   TORCH_SPEC  the torch requirement, default "torch" (CI: the CPU build, as the Makefile takes it)
#
# What it installs: torch; the wheel with CuPy (gpu), NVRTC and CUDA headers for the emulator,
# JupyterLab and nbclient (notebooks), nbgrader and jupyterhub-singleuser (class); the students'
# nbgrader settings (student/) as the environment's Jupyter config; a kernel named python3.  Then it
# checks that all of it imports and that nbgrader's Assignments tab is there.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 PYTHON WHEEL  (PYTHON: the environment's python; WHEEL: gpu_viz-*.whl)" >&2
  exit 2
fi
py=$1
wheel=$2
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$py" ] || { echo "$0: PYTHON $py is not an executable python" >&2; exit 2; }
case "$wheel" in
  *.whl) [ -f "$wheel" ] || { echo "$0: WHEEL $wheel: no such file" >&2; exit 2; } ;;
  *) echo "$0: WHEEL must be the course's .whl file, got $wheel" >&2; exit 2 ;;
esac
[ -f "$here/student/nbgrader_config.py" ] || { echo "$0: $here/student/ is missing (run it from the class kit's hub/)" >&2; exit 2; }

"$py" -m pip install --upgrade pip
"$py" -m pip install "${TORCH_SPEC:-torch}"
"$py" -m pip install "${wheel}[gpu,emulator,notebooks,class,torch]"

# the students' nbgrader settings: the course, the exchange, their hub name; no instructor panels
prefix=$("$py" -c 'import sys; print(sys.prefix)')
install -d "$prefix/etc/jupyter/labconfig" "$prefix/etc/jupyter/jupyter_server_config.d"
install -m 644 "$here/student/nbgrader_config.py" "$prefix/etc/jupyter/nbgrader_config.py"
install -m 644 "$here/student/labconfig/page_config.json" "$prefix/etc/jupyter/labconfig/page_config.json"
# (named to sort after nbgrader's own nbgrader.json in the same folder: the later file wins)
install -m 644 "$here/student/jupyter_server_config.d/zz-nbgrader-student.json" \
  "$prefix/etc/jupyter/jupyter_server_config.d/zz-nbgrader-student.json"
"$py" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (CUDA on the Metal)"

# what the image promises
"$py" - <<'PY'
import cupy, jupyterhub, jupyterlab, nbgrader, torch  # noqa: F401
import gpu_viz
from gpu_viz import classkit, emulator

assert emulator.available(), "NVRTC (the emulator's compiler) is not installed"
print(f"gpu_viz {gpu_viz.__version__ if hasattr(gpu_viz, '__version__') else ''} with CuPy {cupy.__version__}, "
      f"torch {torch.__version__}, nbgrader {nbgrader.__version__}, jupyterhub {jupyterhub.__version__}; "
      f"class kit cell timeout {classkit.CELL_TIMEOUT_S} s")
PY
# (each tool from the environment itself: `jupyter SUBCOMMAND` would look the subcommand up on PATH;
# the listings read whole before grep: grep -q stopping early would fail the pipe under pipefail)
"$prefix/bin/jupyterhub-singleuser" --version >/dev/null
labext=$("$prefix/bin/jupyter-labextension" list 2>&1)
grep -q "@jupyter/nbgrader" <<<"$labext" || { echo "$0: nbgrader's JupyterLab extension is missing" >&2; exit 1; }
serverext=$("$prefix/bin/jupyter-server" extension list 2>&1)
grep -q "nbgrader.server_extensions.assignment_list.*enabled" <<<"$serverext" \
  || { echo "$0: nbgrader's assignment_list server extension is not enabled" >&2; exit 1; }
if grep -q "nbgrader.server_extensions.formgrader.*enabled" <<<"$serverext"; then
  echo "$0: the instructor's formgrader is still enabled for students" >&2; exit 1
fi
echo "install-course.sh: done ($prefix)"
