#!/usr/bin/env bash
# Set up everything CoDA needs on a fresh Debian/Ubuntu machine with Python 3.11:
#   1. system libraries for headless rendering (EGL, with OSMesa as fallback), via apt when missing;
#   2. a virtual environment in .venv with the pinned requirements and this package (editable).
# Idempotent and quick when nothing changed (a stamp keyed on requirements.txt + pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
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
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=".venv/.coda-installed-$(cat requirements.txt requirements-nodeps.txt pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python packages into .venv (first time: a few minutes)"
  # this machine's pip config lists local index folders that may not exist; its warnings are noise
  pipq() { .venv/bin/python -m pip install -q "$@" 2> >(grep -v "is ignored: it is neither a file" >&2); }
  pipq --upgrade pip
  pipq -r requirements.txt
  pipq --no-deps -r requirements-nodeps.txt
  pipq --no-deps -e .
  rm -f .venv/.coda-installed-*
  touch "$stamp"
fi
echo "setup: ok ($(.venv/bin/python --version), mujoco $(.venv/bin/python -c 'import mujoco; print(mujoco.__version__)'))"
