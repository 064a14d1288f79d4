"""`experiments.liberopro.run`: a loop run's round policies under the protocol — which files it finds, what
it refuses, how a finished evaluation is kept on resume, and the table's row per evaluated round. The
evaluation itself is `experiments.liberopro.evaluate` (tested with the protocol); here it is replaced by a
double that records what it was asked."""

from __future__ import annotations

import json

import pytest

from experiments.liberopro import evaluate as liberopro
from experiments.liberopro import run as liberopro_run
from experiments.liberopro.table import build, markdown


def _run_dir(tmp_path, families=("libero_object",), rounds=(0, 1)):
    run = tmp_path / "libero_x"
    (run / "policy").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"families": list(families)}))
    for r in rounds:
        (run / "policy" / f"round_{r:02d}.safetensors").write_bytes(b"")
    return run


def test_a_runs_round_policies_and_suite_are_found_and_a_non_libero_run_is_refused(tmp_path):
    run = _run_dir(tmp_path)
    assert sorted(liberopro_run.round_policies(run)) == [0, 1]
    assert liberopro_run.run_suite(run) == "libero_object"
    other = _run_dir(tmp_path / "b", families=("pick_place",))
    with pytest.raises(ValueError, match="not a LIBERO family"):
        liberopro_run.run_suite(other)
    with pytest.raises(FileNotFoundError, match=r"no policy/round_\*\.safetensors"):
        liberopro_run.round_policies(_run_dir(tmp_path / "c", rounds=()))


def _in_process(monkeypatch, ok: dict[str, int], asked: list, stop_after: int | None = None) -> None:
    """The protocol's evaluation with each task's episodes replaced by a double (`ok[perturb]` successes per
    task) run in this process; `stop_after`: the run is killed after that many tasks."""

    def fake_run_task(suite, perturb, name, episodes, policy, seed, first_state=0):
        if stop_after is not None and len(asked) == stop_after:
            raise KeyboardInterrupt("killed")
        asked.append((perturb, policy.rsplit("/", 1)[-1], name))
        return liberopro.TaskResult(suite + liberopro.PERTURB[perturb], name, "words", episodes, ok[perturb],
                                    [10] * episodes, [], 1.0)

    monkeypatch.setattr(liberopro, "run_task", fake_run_task)
    monkeypatch.setattr(liberopro, "spawn_map", lambda fn, jobs, workers: map(fn, jobs))


def test_each_round_and_perturbation_is_one_file_kept_on_resume_and_read_as_one_row(tmp_path, monkeypatch):
    asked: list = []
    _in_process(monkeypatch, {"none": 3, "position": 1}, asked)
    run, out = _run_dir(tmp_path), tmp_path / "libero" / "loop"
    kw = dict(episodes=50, workers=1, out=out, commit=False, log=lambda _: None)
    wrote = liberopro_run.evaluate_run(run, "libero_object", [0, 1], ["none", "position"], **kw)
    assert [p.name for p in wrote] == ["round0_none_50ep.json", "round0_position_50ep.json",
                                       "round1_none_50ep.json", "round1_position_50ep.json"]
    assert asked[0][:2] == ("none", "round_00.safetensors")
    assert asked[-1][:2] == ("position", "round_01.safetensors")
    assert len(asked) == 4 * 10  # every task of the suite
    rec = json.loads(wrote[1].read_text())
    assert (rec["suite"], rec["round"], rec["episodes_per_task"]) == ("libero_object_swap", 0, 50)
    assert (rec["successes"], rec["episodes"], len(rec["tasks_run"])) == (10, 500, 10)
    assert len(list((out / run.name / "round0_position_50ep.tasks").glob("*.json"))) == 10  # per task
    asked.clear()
    assert liberopro_run.evaluate_run(run, "libero_object", [0, 1], ["none", "position"], **kw) == []
    assert asked == []  # a finished evaluation is kept, not rerun
    with pytest.raises(FileNotFoundError, match=r"round\(s\) \[2\]"):
        liberopro_run.evaluate_run(run, "libero_object", [2], ["none"], **kw)
    rows = {r["row"]: r for r in build(tmp_path / "libero")["ours"]}
    one = rows["loop `libero_x`, round 1 (after 1 CoDA round)"]
    assert one["episodes_per_task"] == 50 and one["cells"]["position"]["successes"] == 10
    md = markdown(build(tmp_path / "libero"), "cmd")
    row0 = ("| loop `libero_x`, round 0 (SFT on its seed demonstrations) | 6 % (30/500) | 2 % (10/500) | – "
            "| – |")
    assert row0 in md  # in the protocol's table (no per-task column), not among the earlier ones


def test_a_killed_evaluation_resumes_at_its_next_task_and_refuses_other_settings(tmp_path, monkeypatch):
    asked: list = []
    _in_process(monkeypatch, {"none": 2}, asked, stop_after=3)
    run, out = _run_dir(tmp_path), tmp_path / "loop"
    kw = dict(episodes=50, workers=1, out=out, commit=False, log=lambda _: None)
    with pytest.raises(KeyboardInterrupt):
        liberopro_run.evaluate_run(run, "libero_object", [0], ["none"], **kw)
    folder = out / run.name / "round0_none_50ep.tasks"
    first = sorted(p.name for p in folder.glob("*.json"))
    assert len(first) == 3 and not (out / run.name / "round0_none_50ep.json").exists()
    kept = [json.loads((folder / n).read_text()) for n in first]
    assert all(k["episodes_per_task"] == 50 and k["task"]["successes"] == 2 for k in kept)
    done = [a[2] for a in asked]
    asked.clear()
    _in_process(monkeypatch, {"none": 2}, asked)
    liberopro_run.evaluate_run(run, "libero_object", [0], ["none"], **kw)
    assert len(asked) == 7 and not {a[2] for a in asked} & set(done)  # the rest, nothing redone
    rec = json.loads((out / run.name / "round0_none_50ep.json").read_text())
    assert [t["name"] for t in rec["tasks_run"]] == [t.name for t in liberopro.tasks("libero_object")]
    assert rec["episodes"] == 500 and rec["successes"] == 20
    # the same records under other settings (a retrained policy file) are refused, not mixed in
    (out / run.name / "round0_none_50ep.json").unlink()
    (run / "policy" / "round_00.safetensors").write_bytes(b"retrained")
    with pytest.raises(ValueError, match="other settings"):
        liberopro_run.evaluate_run(run, "libero_object", [0], ["none"], **kw)


def test_an_earlier_five_episode_file_is_kept_only_for_five_episodes(tmp_path, monkeypatch):
    asked: list = []
    _in_process(monkeypatch, {"none": 1}, asked)
    run, out = _run_dir(tmp_path), tmp_path / "loop"
    (out / run.name).mkdir(parents=True)
    (out / run.name / "round0_none.json").write_text(json.dumps(
        {"suite": "libero_object", "episodes_per_task": 5, "successes": 3, "episodes": 50}))
    kw = dict(workers=1, out=out, commit=False, log=lambda _: None)
    assert liberopro_run.evaluate_run(run, "libero_object", [0], ["none"], episodes=5, **kw) == []
    assert [p.name for p in liberopro_run.evaluate_run(run, "libero_object", [0], ["none"], episodes=2,
                                                        **kw)] == ["round0_none_2ep.json"]
    sizes = sorted(r["episodes_per_task"] for r in build(tmp_path)["ours"] if r["row"].startswith("loop"))
    assert sizes == [2, 5]  # one row per size, never merged


def test_bad_arguments_are_clear_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        liberopro_run.main(["--run", str(tmp_path)])
    assert "not a run directory" in capsys.readouterr().err
    run = _run_dir(tmp_path)
    with pytest.raises(SystemExit):
        liberopro_run.main(["--run", str(run), "--perturb", "upside_down"])
    assert "choose from none, position, instruction, task" in capsys.readouterr().err
    out = tmp_path / "results"
    assert liberopro_run.main(["--run", str(run), "--rounds", "5", "--out", str(out)]) == 2
    assert "no policy for round(s) [5]" in capsys.readouterr().err
    assert not out.exists()  # a refused command writes nothing
    with pytest.raises(SystemExit):  # committed files are written only where --out says
        liberopro_run.main(["--run", str(run), "--commit"])
    assert "--commit commits the files where --out puts them" in capsys.readouterr().err


def test_the_protocol_table_is_written_to_runs_unless_out_names_a_place(tmp_path, monkeypatch):
    from experiments.liberopro import table as liberopro_table

    (tmp_path / "libero").mkdir()
    monkeypatch.setattr(liberopro_table, "RUNS_RESULTS", tmp_path / "runs")
    assert liberopro_table.main(["--results", str(tmp_path)]) == 0
    assert (tmp_path / "runs" / "liberopro.md").exists() and not (tmp_path / "liberopro.md").exists()
    assert liberopro_table.main(["--results", str(tmp_path), "--out", str(tmp_path)]) == 0
    written = (tmp_path / "liberopro.md").read_text()
    assert f"`python -m experiments.liberopro.table --out {tmp_path}`" in written


def test_the_runs_record_is_copied_beside_its_evaluations_and_named_in_its_row(tmp_path):
    run = _run_dir(tmp_path)
    cfg = {"families": ["libero_object"], "preset": "libero", "seed_demos": 300, "budget": 4,
           "learn": {"policy": {"target_loss": 1.0}, "awr_steps": 60, "awr_lr": 1e-4}}
    (run / "config.json").write_text(json.dumps(cfg))
    (run / "metrics.jsonl").write_text(json.dumps({"round": 0, "cost": {"train": {"wall_s": 600.0}}}) + "\n")
    d = run / "diagnoses" / "round_01"
    d.mkdir(parents=True)
    verdict = {"status": "inconclusive", "targeted_failure_rate": 1.0, "control_failure_rate": 1.0, "n": 6}
    ep = "episodes/round_01/roll_a.npz"
    (d / "roll_a.json").write_text(json.dumps({"diagnosis": {"factor": "shift", "phase": "approach"},
                                               "episode": ep, "verdict": verdict}))
    (d / "roll_b.json").write_text(json.dumps({"diagnosis": {"factor": "start", "phase": "grasp"},
                                               "episode": "episodes/round_01/roll_b.npz", "verdict": None}))
    out = tmp_path / "libero" / "loop"
    written = liberopro_run.record_run(run, out)
    # no trace in this run directory: nothing to count its training scenes from, so no run_trained.json
    assert [p.name for p in written] == ["run_config.json", "run_metrics.jsonl", "run_verdicts.json"]
    assert json.loads(written[0].read_text()) == cfg
    assert json.loads(written[2].read_text()) == [
        {"round": 1, "episode": "roll_a", "factor": "shift", "phase": "approach", **verdict},
        {"round": 1, "episode": "roll_b", "factor": "start", "phase": "grasp", "status": "unverified"}]
    (out / "libero_x" / "round0_none.json").write_text(json.dumps(
        {"suite": "libero_object", "successes": 3, "episodes": 50, "episodes_per_task": 5, "tasks_run": []}))
    row = next(r for r in build(tmp_path / "libero")["ours"] if r["row"].startswith("loop"))
    want = ("libero preset, 300 seed demonstrations, target loss 1, 4 training scenes a round, round updates "
            "60 steps at lr 0.0001")
    assert want in row["what"]
    assert row["loop_wall_s"] == 600.0
    # a run whose rounds retrain (learn.retrain, FINDINGS #56) says that instead of the update's steps
    retrains = {**cfg, "budget": 128, "learn": {**cfg["learn"], "retrain": True}}
    (out / "libero_x" / "run_config.json").write_text(json.dumps(retrains))
    row = next(r for r in build(tmp_path / "libero")["ours"] if r["row"].startswith("loop"))
    assert ("128 training scenes a round, each round retrains the bootstrap's recipe on every demonstration "
            "at the bootstrap's steps" in row["what"]) and "round updates" not in row["what"]
    # at steps scaled to the data (FINDINGS #61), and a control run of another method, named in its label
    (out / "libero_x" / "round3_none.json").write_text(json.dumps(
        {"suite": "libero_object", "successes": 4, "episodes": 50, "episodes_per_task": 5, "tasks_run": []}))
    scaled = {**retrains, "method": "sft", "learn": {**retrains["learn"], "retrain_steps": "scaled"}}
    (out / "libero_x" / "run_config.json").write_text(json.dumps(scaled))
    rows = build(tmp_path / "libero")["ours"]
    row = next(r for r in rows if r["row"].startswith("loop `libero_x`, round 3"))
    assert row["row"] == "loop `libero_x`, round 3 (after 3 `sft` rounds)"
    assert "on every demonstration at steps scaled to them" in row["what"]


def test_a_record_with_rounds_the_run_directory_lacks_is_kept_not_shrunk(tmp_path, capsys):
    """A run directory rebuilt to fewer rounds (a bootstrap reproduced after a machine reset) evaluated
    again: its committed record of rounds 0-3 stays as it is, nothing is rewritten."""
    run = _run_dir(tmp_path)
    (run / "metrics.jsonl").write_text(json.dumps({"round": 0}) + "\n")
    folder = tmp_path / "loop" / run.name
    folder.mkdir(parents=True)
    record = "".join(json.dumps({"round": r}) + "\n" for r in range(4))
    (folder / "run_metrics.jsonl").write_text(record)
    (folder / "run_config.json").write_text('{"rounds": 3}')
    assert liberopro_run.record_run(run, tmp_path / "loop") == []
    assert (folder / "run_metrics.jsonl").read_text() == record
    assert (folder / "run_config.json").read_text() == '{"rounds": 3}'
    assert "records round(s) [1, 2, 3] that" in capsys.readouterr().out
    # the same run grown past its record is recorded again
    (run / "metrics.jsonl").write_text(record + json.dumps({"round": 4}) + "\n")
    assert [p.name for p in liberopro_run.record_run(run, tmp_path / "loop")][:2] == ["run_config.json",
                                                                                     "run_metrics.jsonl"]
    assert liberopro_run.recorded_rounds(folder / "run_metrics.jsonl") == {0, 1, 2, 3, 4}


def test_rounds_on_another_runs_bootstrap_say_so_and_count_its_wall_clock(tmp_path, monkeypatch):
    from experiments.liberopro import table as liberopro_table

    loop = tmp_path / "libero" / "loop"
    for run, walls in (("libero_p", [3000.0, 200.0]), ("libero_x", [12.0, 250.0])):
        (loop / run).mkdir(parents=True)
        (loop / run / "run_metrics.jsonl").write_text("".join(
            json.dumps({"round": r, "cost": {"node": {"wall_s": w}}}) + "\n" for r, w in enumerate(walls)))
        (loop / run / "round1_none.json").write_text(json.dumps(
            {"suite": "libero_object", "successes": 3, "episodes": 50, "episodes_per_task": 5,
             "tasks_run": []}))
    monkeypatch.setattr(liberopro_table, "BOOTSTRAP_FROM", {"libero_x": ("libero_p", "forked")})
    rows = {r["row"]: r for r in build(tmp_path / "libero")["ours"]}
    forked = rows["loop `libero_x`, round 1 (after 1 CoDA round)"]
    own = rows["loop `libero_p`, round 1 (after 1 CoDA round)"]
    assert forked["loop_wall_s"] == 3000.0 + 250.0 and own["loop_wall_s"] == 3200.0
    assert "`libero_p`'s bootstrap (forked)" in forked["what"] and "bootstrap" not in own["what"]


def test_a_bootstrap_resumed_part_way_has_no_wall_clock(tmp_path):
    """A bootstrap killed while collecting its seed demonstrations and resumed records the resuming
    invocation's cost only (fewer episodes than the demonstrations it trained on): the row says its wall
    clock is not known instead of a figure that leaves out the first part."""
    loop = tmp_path / "libero" / "loop"
    for run, episodes in (("libero_whole", 460), ("libero_resumed", 41)):
        (loop / run).mkdir(parents=True)
        rounds = [{"round": 0, "train": {"demos": 300},
                   "cost": {"bootstrap": {"wall_s": 562.0, "episodes": episodes}}},
                  {"round": 1, "train": {}, "cost": {"train": {"wall_s": 60.0}}}]
        (loop / run / "run_metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rounds))
        (loop / run / "round1_none.json").write_text(json.dumps(
            {"suite": "libero_object", "successes": 3, "episodes": 50, "episodes_per_task": 5,
             "tasks_run": []}))
    rows = {r["row"]: r for r in build(tmp_path / "libero")["ours"]}
    whole, resumed = (rows[f"loop `{run}`, round 1 (after 1 CoDA round)"]
                      for run in ("libero_whole", "libero_resumed"))
    assert whole["loop_wall_s"] == 622.0 and "not known" not in whole["what"]
    assert resumed["loop_wall_s"] is None
    assert "its bootstrap was resumed after a kill, so the loop's wall clock is not known" in resumed["what"]


def test_a_training_scene_file_gone_from_the_run_is_counted_missing_not_guessed(tmp_path):
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "a.json").write_text(json.dumps(
        {"factors": {"spatial": {"start": "swap2", "shift": "none"}, "task": {"task": "milk"}}}))
    slots = [{"accepted": ["scenes/a.json", "scenes/gone.json"]}]
    assert liberopro_run.factor_counts(2, slots, tmp_path) == {
        "round": 2, "scenes": 2, "missing_scene_files": 1,
        "factors": {"shift": {"none": 1}, "start": {"swap2": 1}, "task": {"milk": 1}}}
