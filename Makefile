# Two commands do everything on a fresh machine: `make demo` and `make test`.
# The first of these that is a Python pyproject.toml accepts (python3 may be too old,
# e.g. 3.10 on Ubuntu 22.04).
PYTHON ?= $(firstword $(foreach p,python3 python3.13 python3.12 python3.11,\
  $(shell $(p) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && echo $(p))))
VENV   ?= .venv
JAX    ?=
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export XLA_FLAGS ?= --xla_force_host_platform_device_count=8
# pytest workers (pytest-xdist): one per core, up to 4; each has its own JAX, shell,
# kernels and browser, so tests share nothing but the machine
JOBS   ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$((n < 4 ? n : 4)))
PYTEST := $(BIN)/python -m pytest -q -n $(JOBS)

.PHONY: demo test test-jax test-fast bench gallery system clean

$(STAMP): pyproject.toml
	@[ -n "$(PYTHON)" ] || { echo "jaxmagic needs Python 3.11 or newer (python3 is older)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]' $(JAX)
	touch $(STAMP)

# System packages the browser tests need (Debian's chromium; graphviz's `dot`).
system:
	bash scripts/system-packages.sh

demo: $(STAMP)
	$(BIN)/python scripts/demo.py examples/00_tour.ipynb build/00_tour.html

test: $(STAMP) system
	$(PYTEST)

# All but the browser tests (Chromium, JupyterLab, Notebook 7, VS Code: two thirds of the
# suite's time), which check what a page does with outputs JAX's version does not shape.
test-jax: $(STAMP)
	$(PYTEST) -m "not browser"

# Without the browser, notebook, JupyterLab and multi-process tests (a few minutes).
test-fast: $(STAMP)
	$(PYTEST) -m "not slow and not browser"

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

gallery: $(STAMP) system
	$(BIN)/python scripts/gallery.py

clean:
	rm -rf $(VENV) build
