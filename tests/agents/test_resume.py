"""SIGKILL in the middle of a round, then `--resume`: the run finishes, and nothing that was accepted
before the kill — scenes, demonstrations, episodes, programs, memory entries — is lost or redone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.graph.rundir import RunDir, read_metrics
from tests.agents.graphkit import files

ROOT = Path(__file__).resolve().parents[2]


def _state(run: Path) -> tuple[dict, list]:
    """(latest checkpointed state, every checkpoint) of a run, read without starting anything."""
    from agents.replay import history, open_app

    with open_app(RunDir(run)) as app:
        snaps = history(app)
    return dict(snaps[-1].values), snaps


def _memory_ids(run: Path) -> set[str]:
    from memory import Memory

    with Memory(run / "memory") as mem:
        return set(mem.episodic.get(include=[])["ids"])


def _start(out: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "agents.run", "--preset", "smoke", "--llm", "rules", "--out", str(out),
           "--quiet", *extra]
    log = open(out.parent / f"{out.name}{'_resume' if extra else ''}.log", "w")  # noqa: SIM115
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(proc: subprocess.Popen, ready, timeout: float = 400) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, "the run ended before the kill point"
        assert time.monotonic() < deadline, "the run never reached the kill point"
        time.sleep(0.2)


@pytest.mark.integration
def test_sigkill_mid_round_then_resume_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = _start(out)
    # round 2 has rolled out at least one episode: round 1 is in memory, round 2 is half done
    _wait_for(proc, lambda: bool(files(out, "episodes/round_02/roll_*.json")))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before, _ = _state(out)
    assert before["round"] == 2 and before["node"] != "report"
    patterns = ("scenes/round_0[12]/*.json", "episodes/round_0[12]/*.json", "programs/round_0*/*.py",
                "policy/*.safetensors")
    kept = {p: (out / p).stat().st_mtime_ns for pattern in patterns for p in files(out, pattern)}
    accepted = [s for slot in before["slots"] for s in slot["accepted"] + slot["held_scenes"] + slot["demos"]]
    remembered = _memory_ids(out)
    assert accepted and remembered

    resumed = _start(out, "--resume")
    assert resumed.wait(timeout=600) == 0, (out.parent / "run_resume.log").read_text()[-3000:]
    final, snaps = _state(out)
    assert [r["round"] for r in read_metrics(out / "metrics.jsonl")] == [0, 1, 2]
    assert final["node"] == "report"
    after = [s for slot in final["slots"] for s in slot["accepted"] + slot["held_scenes"] + slot["demos"]]
    assert after[: len(accepted)] == accepted  # the same scenes, demos and order: nothing regenerated
    for p, mtime in kept.items():
        assert (out / p).exists(), f"{p} was lost"
        if not p.startswith("policy/round_02"):  # the interrupted round's update may not have finished
            assert (out / p).stat().st_mtime_ns == mtime, f"{p} was redone"
    assert remembered <= _memory_ids(out)  # no memory entry lost
    resumed_steps = [s.values.get("node") for s in snaps if s.values.get("round") == 2]
    assert resumed_steps.count("rollout") == 1  # the killed node ran once more, from its checkpoint
