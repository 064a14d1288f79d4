# The two commands: `make demo` (set up, then run the main job) and `make test` (set up, then the tests).
PY := .venv/bin/python
export MUJOCO_GL ?= egl
# Python writes the bytecode of what it imports, once: the setup installs without it (--no-compile), and an
# environment that sets PYTHONDONTWRITEBYTECODE would otherwise recompile torch & co. in every process
# (~8 s each; dozens of processes in a test run).
unexport PYTHONDONTWRITEBYTECODE
NAME ?= demo

.PHONY: setup setup-llm setup-pi05 test-pi05 demo world test lint bench experts clean
setup:
	@bash scripts/setup.sh

setup-llm:  ## setup + the embedded LLM (llama.cpp server built once, offline model weights)
	@bash scripts/setup.sh --llm

setup-pi05:  ## setup + .venv-pi05, the optional π0.5 backend (lerobot 0.4.4; docs/pi05.md)
	@bash scripts/setup.sh --pi05

# The main job: two full CoDA rounds, offline on the CPU, with the embedded LLM (--resume continues a run
# that was interrupted; a finished run is left as it is).
demo: setup-llm  ## CoDA's loop, 2 rounds, local LLM → runs/$(NAME)/
	@if [ -f runs/$(NAME)/trace.sqlite ]; then \
	  $(PY) -m agents.run --out runs/$(NAME) --resume; \
	else \
	  $(PY) -m agents.run --preset demo --llm local --out runs/$(NAME); \
	fi

world: setup  ## the simulated world alone: sample, validate and solve scenes of every family → runs/world/
	$(PY) -m sim.demo --out runs/world

test:  ## setup, then the offline test suite (CPU, no network) with the π0.5 backend's beside it (scripts/test.sh)
	@bash scripts/setup.sh --pi05-background
	@bash scripts/test.sh

test-pi05: setup-pi05  ## the π0.5 backend (tiny PI05 on the CPU) in its own environment
	.venv-pi05/bin/python -m pytest -p no:cacheprovider -n0 tests/coda_policy/test_pi05.py

lint: setup
	$(PY) -m ruff check .

bench: setup  ## simulator speed (docs/benchmarks.md): steps/s, render ms/frame, episode-pool episodes/s
	$(PY) -m bench.sim

experts: setup  ## expert success per family, in and out of distribution (100 scenes each)
	$(PY) -m bench.experts --n 100

clean:
	rm -rf .venv .venv-pi05 runs .pytest_cache
