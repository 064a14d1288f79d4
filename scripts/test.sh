#!/usr/bin/env bash
# `make test` after its setup: the main suite in .venv and, beside it, the π0.5 backend's suite in .venv-pi05
# (`make test-pi05`, which waits for that environment's background install). The main suite leaves the cores
# partly idle (subprocesses starting up, waits), which the smaller suite fills; its output goes to
# .venv-pi05/test.log and is printed after the main suite's. Fails if either suite fails.
set -uo pipefail
cd "$(dirname "$0")/.."
unset PYTHONDONTWRITEBYTECODE  # the setup installs no bytecode; imports write it, once (see the Makefile)
mkdir -p .venv-pi05
trap 'trap - INT TERM; kill 0' INT TERM  # an interrupted run stops both suites
make --no-print-directory test-pi05 > .venv-pi05/test.log 2>&1 &
pi05=$!
echo ".venv/bin/python -m pytest $*"
.venv/bin/python -m pytest "$@" &  # waited for, so a signal reaches the trap at once
wait $!
main=$?
wait "$pi05"
rc=$?
echo "π0.5 suite (make test-pi05, log .venv-pi05/test.log):"
cat .venv-pi05/test.log
[ "$main" = 0 ] && [ "$rc" = 0 ]
