# The course's two commands (README): `make slides` and `make test`.
# Both create the environment first (a venv in .venv; conda users: environment.yml).
PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
# CI pins TORCH_SPEC=torch==2.13.0; on a GPU machine plain torch is right; CPU-only: README.
TORCH_SPEC ?= torch

.PHONY: setup test test-gpu slides clean
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q "$(TORCH_SPEC)"
	$(VPY) -m pip install -q -e '.[dev]'
	$(VPY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

test: setup
	$(VPY) -m pytest

test-gpu: setup
	$(VPY) -m pytest -m gpu

# Extra options for `gpu-viz slides`, e.g. make slides SLIDES_ARGS="--only 03 --jobs 2"
# (npm vendors the decks' JavaScript on first use; offline: SLIDES_ARGS="--vendor-from DIR").
SLIDES_ARGS ?=
slides: setup
	$(VPY) -m gpu_viz.cli slides $(SLIDES_ARGS)

clean:
	rm -rf slides/build test-artifacts
