# Every target creates the virtual environment on first use, so a fresh clone needs nothing but python3.11.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

.PHONY: demo test test-slow bench venv clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, pinned, so nothing below can pull a CUDA build
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(VENV)/bin/graphrelease demo

test: venv
	$(PY) -m pytest -m "not slow" -n 2 -q

test-slow: venv
	$(PY) -m pytest -m slow -n 2 -q

bench: venv
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
