"""The graph: its shape, routing, a CoDA round that founds a difficulty mode and reuses its programs (and a
fork of that run at a round boundary), the bounded writer retries with the exact error fed back. What one
node decides for every method (the same budget, the update kind, diagnose or not) is checked at node level
in tests/agents/nodes/; `test_replay_trains_each_round_on_every_demo_so_far` runs the graph of methods
without a critic (rollout → train)."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from agents.graph import routing
from agents.graph.build import build_graph
from agents.graph.deps import open_deps
from agents.graph.nodes import NODES
from agents.graph.nodes.arms import load_program
from agents.graph.rundir import read_metrics
from programs.seeds import seed_generation
from tests.agents.graphkit import accepted_per_family, config, files, run_graph
from tests.fakes.agents import ScriptedAgents
from tests.fakes.trainer import FakeTrainer

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests

ALWAYS_FAILS = -1.0  # yaw limit of the fake policy: every rollout fails, so the critic has work


@pytest.fixture
def deps_for(tmp_path: Path):
    stack = ExitStack()

    def make(method: str = "coda", agents=None, trainer=None, **over):
        cfg = config(method, **over)
        trainer = trainer or FakeTrainer(ALWAYS_FAILS)
        return stack.enter_context(open_deps(cfg, tmp_path / method, trainer=trainer,
                                             agents=agents or ScriptedAgents()))

    yield make
    stack.close()


def test_routing_is_pure_and_covers_the_loop() -> None:
    slot = {"status": "retry"}
    assert routing.after_validate({"slots": [slot, {"status": "accepted"}]}) == "generate"
    assert routing.after_validate({"slots": [{"status": "failed"}, {"status": "accepted"}]}) == "rollout"
    assert routing.after_rollout({}, diagnose=True) == "diagnose"
    assert routing.after_rollout({}, diagnose=False) == "train"
    assert routing.after_report({"round": 1, "rounds": 2}) == "allocate"
    assert routing.after_report({"round": 2, "rounds": 2}) == routing.END


def test_graph_has_every_node_and_compiles_without_a_checkpointer() -> None:
    from agents.graph.deps import Deps
    from agents.graph.rundir import RunDir

    deps = Deps(config=config(), run=RunDir("unused"), sandbox=None, episodes=None, trainer=FakeTrainer())
    graph = build_graph(deps)
    assert set(graph.nodes) == set(NODES)
    app = graph.compile()
    drawn = app.get_graph().draw_mermaid()
    for a, b in (("validate", "generate"), ("rollout", "diagnose"), ("rollout", "train"),
                 ("report", "allocate")):
        assert a in drawn and b in drawn


def test_coda_founds_a_mode_reuses_its_programs_and_forks(deps_for, tmp_path: Path) -> None:
    deps = deps_for("coda", rounds=2)
    final = run_graph(deps)
    root = deps.run.root
    rows = read_metrics(root / "metrics.jsonl")
    assert [r["round"] for r in rows] == [0, 1, 2]
    mode = "obj_yaw_approach_high"
    assert rows[1]["critic"]["verdicts"]["validated"] == 1 and rows[1]["critic"]["validated_modes"] == \
        [f"{mode}|pick_place"]
    assert deps.memory.counts()["modes"] == 1 and deps.memory.counts()["programs"] == 1
    gen = files(root, f"programs/round_01/gen_{mode}_*.py")
    assert gen and files(root, f"programs/round_01/train_{mode}_*.py")
    # the generation writer recreates what verification confirmed: it gets the validated diagnosis
    assert [d.factor for d in deps.agents.generation_diagnoses if d is not None] == ["obj_yaw"]
    # round 2 spends part of the budget on the mode, running the program compiled in round 1
    arm = next(s for s in final["slots"] if s["mode_id"] == mode)
    assert arm["program"].startswith("programs/round_01/gen_") and arm["status"] == "accepted"
    assert accepted_per_family(final["slots"]) == {"pick_place": deps.config.budget}
    for kind in ("scenes/round_02/*.json", "episodes/round_02/roll_*.npz", "episodes/round_02/demo_*.npz",
                 "policy/round_02.safetensors", "memory/chroma.sqlite3", "report.html", "trace.sqlite"):
        assert files(root, kind), kind
    assert set(rows[2]["cost"]) >= {"allocate", "generate", "validate", "rollout", "diagnose", "verify",
                                    "remember", "compile", "train", "measure"}
    assert rows[2]["cost_total"]["sim_steps"] > 0
    _fork_round_one(deps, tmp_path)


def _fork_round_one(deps, tmp_path: Path) -> None:
    """Fork the finished run at the end of round 1 and replay round 2 in the copy."""
    from rich.console import Console

    from agents.replay import fork, history, open_app

    with open_app(deps.run) as app:
        ends = [s for s in history(app) if s.values.get("node") == "report" and s.values["round"] == 1]
        step = str(ends[0].metadata["step"])
        copy = fork(app, deps.run, step, tmp_path / "fork", None, Console(quiet=True))
    assert [r["round"] for r in read_metrics(copy.metrics)] == [0, 1]
    assert not (copy.root / "episodes/round_02").exists()
    assert not (copy.root / "policy/round_02.safetensors").exists()
    assert (deps.run.root / "policy/round_02.safetensors").exists()  # the original is untouched
    trainer = FakeTrainer(ALWAYS_FAILS)
    with open_deps(deps.config, copy.root, trainer=trainer, agents=ScriptedAgents()) as forked:
        assert forked.memory.counts()["programs"] == 1  # memory as it was at the end of round 1
        final = run_graph(forked, resume=True)
    assert final["round"] == 2 and [r["round"] for r in read_metrics(copy.metrics)] == [0, 1, 2]
    assert files(copy.root, "episodes/round_02/roll_*.npz")


def test_validation_error_goes_back_to_the_writer_verbatim(deps_for) -> None:
    agents = ScriptedAgents(bad_programs=1)  # the mode's first program puts the object out of reach
    deps = deps_for("coda", agents=agents, rounds=2, max_retries=2)
    final = run_graph(deps)
    arm = next(s for s in final["slots"] if s["mode_id"] != "seed")
    assert arm["status"] == "accepted" and arm["attempts"] == 2
    feedback = [fb for kind, fb in agents.calls if kind == "write_generation" and fb]
    assert len(feedback) == 1 and "scenes failed validation" in feedback[0]
    checked = [json.loads(p.read_text()) for p in (deps.run.root / "validity/round_02").glob("*.json")]
    reasons = [row["message"] for row in checked if not row["ok"]]
    assert reasons and any(msg in feedback[0] for msg in reasons)  # the exact checker message


def test_a_slot_that_keeps_failing_is_reported_and_backfilled(deps_for) -> None:
    agents = ScriptedAgents(bad_programs=99)
    deps = deps_for("coda", agents=agents, rounds=2, max_retries=1)
    final = run_graph(deps)
    failed = [s for s in final["slots"] if s["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["attempts"] == 2 and "failed validation" in failed[0]["error"]
    fill = [s for s in final["slots"] if s["backfill_for"] == failed[0]["mode_id"]]
    assert fill and fill[0]["status"] == "accepted"
    assert accepted_per_family(final["slots"]) == {"pick_place": deps.config.budget}  # same budget
    row = read_metrics(deps.run.root / "metrics.jsonl")[-1]
    assert len(row["generation"]["slots_failed"]) == 1 and row["generation"]["backfilled"] > 0


def test_presets_round_trip_and_typos_get_a_hint() -> None:
    from agents.config import PRESETS, RunConfig, get_preset

    for name in PRESETS.names():
        cfg = get_preset(name)
        assert RunConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(KeyError, match="Did you mean 'coda'"):
        RunConfig(method="cdoa")
    with pytest.raises(KeyError, match="smoke"):
        get_preset("smok")


@pytest.mark.parametrize("method", ["coda", "critic_no_memory"])
def test_diagnosis_driven_methods_explore_past_the_training_ranges(deps_for, method: str) -> None:
    """With no difficulty mode yet, the free arm is a single-factor variant beyond the seed's ID range: a
    policy that solves its training distribution still meets failures the critic can diagnose."""
    deps = deps_for(method, rounds=1)
    final = run_graph(deps)
    probe = [s for s in final["slots"] if s["mode_id"].startswith("var_")]
    assert len(probe) == 1 and probe[0]["status"] == "accepted"
    program = load_program(deps, probe[0]["program"])
    seed = {f.name: f for f in seed_generation("pick_place").factors}
    moved = [f for f in program.factors if (f.choices, f.range) != (seed[f.name].choices, seed[f.name].range)]
    assert len(moved) == 1
    f, ref = moved[0], seed[moved[0].name]
    if f.type == "choice":
        assert set(f.choices) <= set(ref.ood_choices or ref.choices)
    else:
        assert f.range[1] <= ref.range[0] or f.range[0] >= ref.range[1]  # outside the ID range


@pytest.mark.parametrize("method", ["uniform", "coda"])
def test_variants_move_variant_factors_factors_at_once(deps_for, method: str) -> None:
    """`variant_factors` = 3: every variant (uniform's arms, CoDA's exploration arm) is the seed program
    with three distinct factors moved past their training ranges, and its id names all three."""
    deps = deps_for(method, rounds=1, variant_factors=3, budget=4)
    final = run_graph(deps)
    probes = [s for s in final["slots"] if s["mode_id"].startswith("var_")]
    assert probes
    seed = {f.name: f for f in seed_generation("pick_place").factors}
    for slot in probes:
        program = load_program(deps, slot["program"])
        moved = [f for f in program.factors
                 if (f.choices, f.range) != (seed[f.name].choices, seed[f.name].range)]
        assert len(moved) == 3 and slot["mode_id"].count("__") == 2
        for f in moved:
            ref = seed[f.name]
            if f.type == "choice":
                assert set(f.choices) <= set(ref.ood_choices or ref.choices)
            else:  # past the ID range, or its outer third on a side with no OOD part (friction's top)
                third = (ref.range[1] - ref.range[0]) / 3 + 1e-9
                assert f.range[1] <= ref.range[0] + third or f.range[0] >= ref.range[1] - third
    with pytest.raises(ValueError, match="variant_factors"):
        config("uniform", variant_factors=0)


@pytest.mark.parametrize("method", ["sft", "scalar"])
def test_replay_trains_each_round_on_every_demo_so_far(deps_for, method: str) -> None:
    import dataclasses

    from agents.config import LearnConfig, get_preset

    assert LearnConfig().replay  # every method replays by default; this test compares it with the round alone
    trainer = FakeTrainer(ALWAYS_FAILS)
    plain = deps_for(method, trainer=trainer, rounds=2,
                     learn=dataclasses.replace(get_preset("smoke").learn, replay=False))
    final = run_graph(plain)
    boot = next(n for kind, n in trainer.calls if kind == "bootstrap")
    hist = final["demo_history"]["pick_place"]  # kept whether or not replay is on
    n2 = sum(len(s["demos"]) for s in final["slots"])
    n1 = len(hist) - boot - n2
    assert n1 > 0 and n2 > 0 and len(set(hist)) == len(hist)
    plain_calls = [n for kind, n in trainer.calls if kind != "bootstrap"]
    replayed = FakeTrainer(ALWAYS_FAILS)
    cfg = dataclasses.replace(plain.config, learn=dataclasses.replace(plain.config.learn, replay=True))
    with open_deps(cfg, plain.run.root.parent / f"{method}_replay", trainer=replayed,
                   agents=ScriptedAgents()) as deps:
        again = run_graph(deps)
    got = [n for kind, n in replayed.calls if kind != "bootstrap"]
    # the same scenes and rollouts; round 1 adds the bootstrap's demos, round 2 those and round 1's
    assert [g - p for g, p in zip(got, plain_calls, strict=True)] == [boot, boot + n1]
    assert again["demo_history"] == final["demo_history"]  # relative paths: the same files in each run


def test_the_bootstrap_validates_only_the_scenes_its_demonstrations_need(deps_for) -> None:
    """Oversampled seed scenes are validated in order until `seed_demos` demonstrations are in; the kept
    ones are those validating every scene would keep (the first valid ones, in order)."""
    from agents.graph.nodes.learn import first_demos
    from agents.graph.nodes.work import generate_scenes, validate_scenes

    deps = deps_for("coda", seed_demos=2, oversample=3.0)
    run_graph(deps)
    validated = files(deps.run.root, "validity/round_00/*.json")
    assert len(validated) == 2  # all 6 scenes were validated before: 4 thrown away
    got = generate_scenes(deps, seed_generation("pick_place"), 5, round_no=0, tag="check", attempt=0)
    assert len(got.scenes) == 5
    kept = first_demos(deps, got.scenes, 3, lambda _: None)
    everything = [r["demo"] for r in validate_scenes(deps, got.scenes, round_no=0) if r.get("ok")][:3]
    assert kept == everything and len(kept) == 3
