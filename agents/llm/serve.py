"""Launcher for the embedded llama.cpp server that dies with its parent.

    python -m agents.llm.serve --parent-pid PID [--no-extra-buffers | --auto-extra-buffers] -- <server args>

`LocalServer` stops the server on close and at exit, but a parent killed with SIGKILL (the resume test
of a run does exactly that) runs no cleanup, and an orphaned server would keep a model in memory and
the cores busy. A watchdog thread here exits the process as soon as the parent is gone. (Linux's
PR_SET_PDEATHSIG is not used: it fires when the *thread* that started the child exits, which would kill
the server whenever a worker thread of the graph happened to start it.)
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time

POLL_S = 1.0  # how often the watchdog checks the parent


def _watch(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(0)  # the parent is gone: no one will ever ask us again
        time.sleep(POLL_S)


def _no_extra_buffers() -> None:
    """Load weights without llama.cpp's extra buffer types (AMX / CPU repacking): a native build on a
    VM that advertises AMX but cannot run it segfaults on the first token otherwise. The server
    exposes no flag for this, so the default model parameters are patched before it loads."""
    import llama_cpp

    default = llama_cpp.llama_model_default_params

    def params() -> llama_cpp.llama_model_params:
        p = default()
        p.use_extra_bufts = False
        return p

    llama_cpp.llama_model_default_params = params
    llama_cpp.llama_cpp.llama_model_default_params = params


def _build_uses_amx() -> bool:
    import llama_cpp

    return b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info()


def main(argv: list[str]) -> None:
    """Start the watchdog, then run `llama_cpp.server` with the arguments after `--`."""
    usage = ("usage: python -m agents.llm.serve --parent-pid PID [--no-extra-buffers | --auto-extra-buffers]"
             " -- <server arguments>")
    if len(argv) < 3 or argv[0] != "--parent-pid" or "--" not in argv:
        sys.exit(usage)
    ours, theirs = argv[: argv.index("--")], argv[argv.index("--") + 1:]
    if "--no-extra-buffers" in ours or ("--auto-extra-buffers" in ours and _build_uses_amx()):
        print("agents.llm.serve: extra weight buffers off (AMX build or asked)", flush=True)
        _no_extra_buffers()
    threading.Thread(target=_watch, args=(int(ours[1]),), daemon=True).start()
    sys.argv = ["llama_cpp.server", *theirs]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
