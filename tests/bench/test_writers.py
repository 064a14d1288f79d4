"""The writer benchmark's bookkeeping: diagnoses read validated-first and one per kind, attempts with the
error fed back, and the rules writers end to end on one diagnosis."""

from __future__ import annotations

import json

from bench.agents.writers import _attempts, load_diagnoses, main
from memory.types import Diagnosis


def _record(path, family, factor, status, phase="approach"):
    dx = Diagnosis(episode_id=f"e_{factor}_{status}", factor_group="spatial", factor=factor, phase=phase,
                   explanation="x", edit={factor: [0.0, 0.01]}, side="low", critic_id="rules", confidence=0.5)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"diagnosis": dx.model_dump(mode="json"), "family": family,
                                "verdict": {"status": status}}))


def test_diagnoses_are_read_validated_first_one_per_kind(tmp_path) -> None:
    d = tmp_path / "run" / "diagnoses"
    _record(d / "round_01" / "a.json", "pick_place", "obj_x", "refuted")
    _record(d / "round_01" / "b.json", "pick_place", "obj_y", "refuted")
    _record(d / "round_02" / "c.json", "pick_place", "obj_y", "validated")
    _record(d / "round_02" / "d.json", "put_inside", "obj_y", "inconclusive")
    got = load_diagnoses([tmp_path / "run"], 10)
    assert [(f, dx.factor, dx.episode_id) for f, dx in got] == [
        ("pick_place", "obj_y", "e_obj_y_validated"), ("pick_place", "obj_x", "e_obj_x_refuted"),
        ("put_inside", "obj_y", "e_obj_y_inconclusive")]
    assert len(load_diagnoses([tmp_path / "run"], 2)) == 2


def test_attempts_feed_each_error_back() -> None:
    seen = []

    def make(feedback):
        seen.append(feedback)
        return ("ok", "") if len(seen) == 3 else (None, f"error {len(seen)}")

    assert _attempts(make, 3) == ("ok", 3, ["error 1", "error 2"])
    assert seen == [None, "error 1", "error 2"]
    seen.clear()
    assert _attempts(make, 2) == (None, None, ["error 1", "error 2"])


def test_rules_writers_on_one_diagnosis(tmp_path) -> None:
    d = tmp_path / "run" / "diagnoses" / "round_01" / "a.json"
    _record(d, "pick_place", "obj_x", "validated")
    out = tmp_path / "w.json"
    assert main(["--runs", str(tmp_path / "run"), "--max", "1", "--demos", "2", "--out", str(out)]) == 0
    s = json.loads(out.read_text())["summary"]["rules"]
    assert s["n"] == 1 and s["generation_first_try"] == 1 and s["training_first_try"] == 1
    # the rules writer's emphasis stage is reached before the stage after it (the family's own declaration)
    row = json.loads(out.read_text())["rows"][0]["training"]
    assert row["new_stages_reached"] is not None and row["new_stages_reached"] >= 0.5
    assert s["training_new_stages_reached"] == 1


def test_a_condition_that_never_holds_is_not_a_reached_stage() -> None:
    """A new stage whose condition cannot hold agrees as well as the seed (its `done` is the next one's)
    but is never reached before it."""
    from bench.agents.writers import new_stages_reached
    from programs.model import Subgoal
    from programs.seeds import seed_library
    from sim.episode import run_episode
    from sim.families import get_family

    seed = seed_library()["pick_place"][1]
    demos = [run_episode(get_family("pick_place").seed_scenes()[0])]
    k = [g.name for g in seed.subgoals].index("grasp")

    def with_stage(cond: str):
        sub = Subgoal(name="added", done=f"({seed.subgoals[k].done}) or ({cond})", progress="0.5")
        return seed.model_validate({**seed.model_dump(exclude={"id"}),
                                    "subgoals": [*seed.subgoals[:k], sub, *seed.subgoals[k:]]})

    assert new_stages_reached(with_stage("gripper() > 0.28"), seed, demos) == 0.0
    assert new_stages_reached(with_stage("dist('ee', object) < 0.1"), seed, demos) == 1.0
    assert new_stages_reached(seed, seed, demos) is None


def test_a_rerun_keeps_finished_rows_and_refuses_another_benchmarks_file(tmp_path, capsys) -> None:
    import pytest

    d = tmp_path / "run" / "diagnoses" / "round_01"
    _record(d / "a.json", "pick_place", "obj_x", "validated")
    _record(d / "b.json", "pick_place", "obj_y", "validated")
    out = tmp_path / "w.json"
    assert main(["--runs", str(tmp_path / "run"), "--max", "1", "--demos", "2", "--out", str(out)]) == 0
    first = json.loads(out.read_text())
    assert first["complete"] and len(first["rows"]) == 1
    assert main(["--runs", str(tmp_path / "run"), "--max", "2", "--demos", "2", "--out", str(out)]) == 0
    second = json.loads(out.read_text())
    assert len(second["rows"]) == 2 and second["rows"][0] == first["rows"][0]  # kept, not run again
    assert "rules 1/2" not in capsys.readouterr().out
    with pytest.raises(SystemExit, match="other runs or attempts"):
        main(["--runs", str(tmp_path / "run"), "--max", "2", "--attempts", "1", "--demos", "2",
              "--out", str(out)])


def test_examples_are_for_llm_writers_and_come_from_each_runs_own_programs(tmp_path, capsys) -> None:
    import pytest

    from bench.agents.writers import run_examples
    from memory.store import found_mode
    from memory.types import ProgramEntry
    from programs.edits import edit_many
    from programs.render import write_program
    from programs.seeds import seed_library
    from tests.agents.test_writer_examples import StoredPrograms, _mode

    _record(tmp_path / "run" / "diagnoses" / "round_01" / "a.json", "pick_place", "obj_x", "validated")
    with pytest.raises(SystemExit):
        main(["--runs", str(tmp_path / "run"), "--examples", "2"])
    assert "--examples is for LLM writers" in capsys.readouterr().err
    runs = []
    for k, factor in enumerate(("obj_yaw", "obj_y")):  # one stored program in each of two runs
        run = tmp_path / f"run{k}"
        program = edit_many(seed_library()["pick_place"][0], {factor: (0.0, 0.02)}, mode_id=f"{factor}_grasp")
        py = write_program(program, run / "programs" / "round_01")
        mode = _mode(f"{factor}_grasp", factor, "pick_place")
        entry = ProgramEntry(mode_id=mode.id, family="pick_place", generation_program_id="g",
                             training_program_id="t", generation_path=str(py.relative_to(run)), round=1)
        runs.append((run, StoredPrograms([(mode, entry)])))
    dx = Diagnosis(episode_id="e", factor_group="spatial", factor="obj_x", phase="grasp", explanation="x",
                   edit={"obj_x": [0.0, 0.01]}, side="low", critic_id="rules", confidence=0.5)
    writing = found_mode(dx, "pick_place", 1)
    got = run_examples(runs, writing, 2)
    assert [x.split(" (")[0] for x in got] == ["pick_place mode obj_yaw_grasp", "pick_place mode obj_y_grasp"]
    assert run_examples(runs, writing, 1) == got[:1] and run_examples(runs, writing, 0) == []


def test_the_reached_count_needs_a_finished_result(tmp_path, capsys) -> None:
    from bench.agents.writers_reached import main as reached

    assert reached([str(tmp_path / "none.json")]) == 2
    assert "bench.agents.writers result" in capsys.readouterr().err
