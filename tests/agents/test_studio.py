"""LangGraph Studio's factory (`langgraph.json` → `agents.graph.build:studio_graph`): the server calls it
per run, so it must not open new worker pools each time, and Studio's input form needs the graph's input
JSON schema (issue #13)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.integration
def test_the_studio_factory_opens_its_pools_once_and_has_an_input_schema(tmp_path: Path) -> None:
    from agents.graph import build

    conf = {"configurable": {"preset": "smoke", "run_dir": str(tmp_path / "studio")}}
    before = _children()
    first = build.studio_graph(conf)
    opened = _children()
    again = build.studio_graph(conf)
    assert opened > before  # the sandbox and episode workers
    assert again is first and _children() == opened  # the second call opened nothing
    schema = first.compile().get_input_jsonschema()
    assert {"round", "policy", "slots"} <= set(schema["properties"])
    build._STUDIO.clear()  # forget the graph; its pools close at exit (atexit), as in the server


def _children() -> int:
    """Live child processes of this process (sandbox workers are subprocesses, not multiprocessing)."""
    import os

    me, n = os.getpid(), 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    n += int(f.read().rsplit(")", 1)[1].split()[1]) == me
            except OSError:
                continue
    return n
