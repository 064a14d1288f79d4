# The two commands: `make demo` (set up, then run the main job) and `make test` (set up, then the tests).
PY := .venv/bin/python
export MUJOCO_GL ?= egl
NAME ?= demo

.PHONY: setup demo test lint bench experts clean
setup:
	@bash scripts/setup.sh

demo: setup  ## sample scenes of every family, validate them, run the experts, write runs/$(NAME)/
	$(PY) -m sim.demo --out runs/$(NAME)

test: setup  ## the offline test suite (CPU, no network)
	$(PY) -m pytest

lint: setup
	$(PY) -m ruff check .

bench: setup  ## speed figures quoted in the README
	$(PY) -m sim.bench

experts: setup  ## expert success per family, in and out of distribution (100 scenes each)
	$(PY) -m sim.experts_eval --n 100

clean:
	rm -rf .venv runs .pytest_cache
