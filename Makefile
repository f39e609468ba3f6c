# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
JAX    ?=
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export XLA_FLAGS ?= --xla_force_host_platform_device_count=8

.PHONY: demo test bench gallery system clean

$(STAMP): pyproject.toml
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
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

gallery: $(STAMP) system
	$(BIN)/python scripts/gallery.py

clean:
	rm -rf $(VENV) build
