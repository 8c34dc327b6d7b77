# The course's two commands (README): `make slides` and `make test`.
# Both create the environment first (a venv in .venv; conda users: environment.yml).
PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
# CI pins TORCH_SPEC=torch==2.13.0; on a GPU machine plain torch is right; CPU-only: README.
TORCH_SPEC ?= torch
# nvcc for the build checks (every kernels/*.cu for every arch in gpu_viz.kernels.ARCHES): the one on
# PATH, else CUDA's compiler from PyPI in the venv (nvidia/cu13/bin/nvcc), which tests/conftest_infra.py
# puts on PATH for the test run.  One CUDA release throughout: nvidia-cuda-nvcc leaves its cicc
# (nvidia-nvvm) and headers (nvidia-cuda-crt, nvidia-cuda-runtime) unpinned, and a newer cicc writes
# PTX its ptxas rejects; nvidia-cuda-cccl has <nv/target>, which cuda_fp16.h includes.  13.0: the
# developers' toolkit (CUDA 13.0.88): the same ptxas, so the same register and spill counts.
NVCC_SPEC ?= nvidia-cuda-nvcc==13.0.* nvidia-nvvm==13.0.* nvidia-cuda-crt==13.0.* nvidia-cuda-runtime==13.0.* \
	nvidia-cuda-cccl==13.0.*

.PHONY: setup lint test test-fast test-gpu slides clean
# The nvcc check runs on every setup (pip has nothing to do once the wheels are in the venv).  A failed
# install (say, a CUDA torch pinning another nvidia-cuda-runtime) leaves the build checks to skip, or
# to fail under CI=true: the tests report it, setup goes on.
setup: $(VENV)/.installed
	@command -v nvcc >/dev/null 2>&1 || { echo "no nvcc on PATH: installing it from PyPI into $(VENV)"; \
	  $(VPY) -m pip install -q $(foreach s,$(NVCC_SPEC),'$(s)') || \
	  echo "could not install nvcc from PyPI ($(NVCC_SPEC)): the nvcc build checks will skip (CI=true: fail)"; }

$(VENV)/.installed: pyproject.toml
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q "$(TORCH_SPEC)"
	$(VPY) -m pip install -q -e '.[dev]'
	$(VPY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

# The fast lane: the CPU tests without the slow ones (nvcc for four architectures, notebook runs,
# wheels, slide builds), the browser ones and the GPU ones.  `make test` runs it first, then the rest,
# so every test runs once and a broken fast test stops the run early.
FAST_MARKS := not slow and not browser and not gpu

# pyflakes' rules over the code that ships and the code that tests it ([tool.ruff] in pyproject.toml)
lint: setup
	$(VPY) -m ruff check gpu_viz tests scripts hatch_build.py

test-fast: setup
	$(VPY) -m pytest -m "$(FAST_MARKS)"

test: lint
	$(VPY) -m pytest -m "$(FAST_MARKS)"
	$(VPY) -m pytest -m "not ($(FAST_MARKS))"

test-gpu: setup
	$(VPY) -m pytest -m gpu

# Extra options for `gpu-viz slides`, e.g. make slides SLIDES_ARGS="--only 03 --jobs 2"
# (npm vendors the decks' JavaScript on first use; offline: SLIDES_ARGS="--vendor-from DIR").
SLIDES_ARGS ?=
slides: setup
	$(VPY) -m gpu_viz.cli slides $(SLIDES_ARGS)

clean:
	rm -rf slides/build test-artifacts
