"""The loop on LIBERO (`--preset libero` cut down to a minute or two): the same graph — seed programs run in
the sandbox write LIBERO scenes, LIBERO's expert demonstrates them, the real trainer bootstraps a policy that
then acts in LIBERO, the rules critic diagnoses its failures and verification runs targeted against control
batches in LIBERO — with every record in the run directory."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agents.config import get_preset
from agents.graph.deps import open_deps
from agents.graph.rundir import read_json, read_metrics
from sim.episode import Episode
from tests.agents.graphkit import run_graph


@pytest.fixture(autouse=True)
def _one_noisy_try(monkeypatch: pytest.MonkeyPatch) -> None:
    """A demonstration from the first noisy run or the clean one (the preset tries three): seconds saved."""
    import sim.libero.episode as lep

    real = lep.check_libero_scene
    monkeypatch.setattr(lep, "check_libero_scene", lambda spec, *, solve=True: real(spec, solve=solve,
                                                                                     demo_tries=1))


@pytest.mark.slow  # ~2 min each; covered by `python -m agents.run --preset P --llm rules` (docs/libero.md)
@pytest.mark.integration
@pytest.mark.parametrize("preset", ["libero", "libero_goal"])
def test_one_round_of_the_loop_runs_in_libero(tmp_path: Path, preset: str) -> None:
    """One retraining round (the presets' `learn.retrain`) on `libero_object` and on `libero_goal`, whose
    drawer goal and pick-place goals share one seed training program."""
    base = get_preset(preset)
    cfg = dataclasses.replace(
        base, llm="rules", rounds=1, budget=2, seed_demos=2, oversample=1.0, variants=1,
        diagnose_max=1, verify_n=1, eval_id=1, eval_ood=1, rollout_max_steps=40, workers=0,
        learn=dataclasses.replace(get_preset("smoke").learn, retrain=base.learn.retrain))
    with open_deps(cfg, tmp_path / "run") as deps:
        final = run_graph(deps)
        root = deps.run.root
    assert final["round"] == 1
    family = base.families[0]
    demos = [Episode.load(root / d) for d in final["demo_history"][family]]
    assert demos and all(d.success and d.scene.libero is not None for d in demos)
    assert all(d.policy.startswith("expert") for d in demos)
    rows = read_metrics(root / "metrics.jsonl")
    assert [r["round"] for r in rows] == [0, 1]
    row = rows[-1]
    assert row["generation"]["slots"] >= 1 and row["rollouts"] >= 1 and not row["rollout_errors"]
    # a policy of 20 SFT steps fails in LIBERO: its failures are diagnosed, and each verified there
    assert row["critic"]["diagnoses"] >= 1 and row["critic"]["critic_failures"] == 0
    verdicts = [read_json(root / d)["verdict"] for d in final["diagnoses"]]
    assert verdicts and all(v["status"] in ("validated", "refuted", "inconclusive") for v in verdicts)
    assert all(v["n"] >= 1 and 0.0 <= v["targeted_failure_rate"] <= 1.0 for v in verdicts)
    scenes = sorted((root / "scenes" / "round_01").glob("*.json"))
    assert scenes and all('"libero"' in p.read_text() for p in scenes)
    assert (root / "policy" / "round_01.safetensors").exists() and (root / "report.html").exists()
    assert row["train"].get("retrain") is True  # the round retrained on every demonstration so far
    assert row["train"]["demos"] == len(demos)
