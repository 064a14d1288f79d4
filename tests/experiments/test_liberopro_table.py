"""`experiments.liberopro.table`: docs/results/liberopro.md from the committed evaluation files."""

from __future__ import annotations

import json

import pytest

from experiments.liberopro.table import build, cells, markdown, perturb_of


def test_the_table_reads_evaluations_and_round_records_and_leaves_missing_cells_empty(tmp_path):
    assert perturb_of("libero_object") == "none" and perturb_of("libero_object_swap") == "position"
    with pytest.raises(ValueError, match="unknown perturbation"):
        perturb_of("libero_object_upside_down")
    d = tmp_path / "libero"
    d.mkdir()
    (d / "sft_dart_libero_object_position.json").write_text(json.dumps(
        {"suite": "libero_object_swap", "successes": 3, "episodes": 50, "episodes_per_task": 5,
         "wall_s": 9.0}))
    (d / "coda_round1_libero_object.json").write_text(json.dumps(  # the standalone round's: no per-task
        {"evaluation": {"none": {"successes": 30, "episodes": 50, "tasks": 10},
                        "task": {"successes": 5, "episodes": 50, "tasks": 10}}}))
    (d / "sft_dart_libero_spatial_position.json").write_text(json.dumps(
        {"suite": "libero_spatial_swap", "successes": 7, "episodes": 50, "episodes_per_task": 5}))
    assert cells(d / "coda_round1_libero_object.json")["task"] == {"successes": 5, "episodes": 50,
                                                                   "wall_s": None, "per_task": 5}
    table = build(d)
    spatial = {r["row"]: r["cells"] for r in table["ours"] if r["suite"] == "libero_spatial"}
    assert spatial["SFT, DART demonstrations"]["position"]["successes"] == 7
    rows = {r["row"]: r["cells"] for r in table["ours"] if r["suite"] == "libero_object"}
    assert rows["SFT, DART demonstrations (the seed policy)"] == {
        "position": {"successes": 3, "episodes": 50, "wall_s": 9.0, "per_task": 5}}
    assert "scripted expert" not in rows  # no file, no row
    md = markdown(table, "cmd")
    assert "| seed policy + 1 CoDA round | 5 | 60 % (30/50) | – | – | 10 % (5/50) |" in md
    assert "theirs, not measured here" in md and "reads camera images" in md
    assert "## Ours: libero_spatial" in md
    assert "| SFT, DART demonstrations | 5 | – | 14 % (7/50) | – | – |" in md
    assert "| CoDA (π0.5), 15 rounds | 91 % | 88 % | 78 % | 76 % | 84 % | 76 % |" in md  # theirs, per suite


def test_protocol_rows_and_earlier_smaller_ones_are_kept_apart(tmp_path):
    """A row whose files hold 5 and 50 episodes per task becomes two rows: the 50 in the protocol's table,
    the 5 in the labelled table of earlier evaluations below it; the object perturbation gets its column; the
    protocol's evaluations say their wall time."""
    d = tmp_path / "libero"
    d.mkdir()
    files = (("sft_dart_libero_object.json", "libero_object", 28, 50, 5),
             ("sft_dart_libero_object_position.json", "libero_object_swap", 40, 500, 50),
             ("sft_dart_libero_object_task.json", "libero_object_object", 50, 500, 50))
    for (name, suite, k, n, per), wall in zip(files, (60.0, 1500.0, 2700.0), strict=True):
        (d / name).write_text(json.dumps({"suite": suite, "successes": k, "episodes": n,
                                          "episodes_per_task": per, "wall_s": wall}))
    table = build(d)
    sizes = {r["episodes_per_task"]: r for r in table["ours"] if r["row"].startswith("SFT, DART")}
    assert set(sizes) == {5, 50}
    assert set(sizes[50]["cells"]) == {"position", "object"} and set(sizes[5]["cells"]) == {"none"}
    md = markdown(table, "cmd")
    main, before = md.split("### libero_object: 5 episodes per task (before the protocol's 50)")
    assert "| policy | original | position | instruction | task | object | what |" in main
    assert "| SFT, DART demonstrations (the seed policy) | – | 8 % (40/500) | – | – | 10 % (50/500) |" in main
    assert "| SFT, DART demonstrations (the seed policy) | 5 | 56 % (28/50) | – | – | – |" in before
    assert "56 %" not in main and "8 % (40/500)" not in before.split("## Ours: libero_spatial")[0]
    assert "took 25–45 min of wall time here (2 of them;" in main  # the protocol's files only
    assert "No evaluation at the protocol's size yet." in md.split("## Ours: libero_spatial")[1]


def test_each_later_round_and_the_oracle_face_the_bootstrap_they_started_from(tmp_path, monkeypatch):
    """Issue #41's targets under each suite's protocol table: a round > 0 against its run's round 0 (or, for
    a run on another's bootstrap, that run's), the oracle against `libero_t1`'s; a perturbation with no
    bootstrap file has no row; task is reported, with no target."""
    from experiments.liberopro import table as tbl

    loop = tmp_path / "libero" / "loop"

    def evaluation(path, successes, suite="libero_object_swap"):
        path.parent.mkdir(parents=True, exist_ok=True)
        tasks = [{"name": f"t{i}", "episodes": 50, "successes": k} for i, k in enumerate(successes)]
        path.write_text(json.dumps({"suite": suite, "episodes": 500, "successes": sum(successes),
                                    "episodes_per_task": 50, "tasks_run": tasks}))

    evaluation(loop / "libero_p" / "round0_position_50ep.json", [10] * 10)
    evaluation(loop / "libero_p" / "round0_task_50ep.json", [5] * 10, "libero_object_task")
    evaluation(loop / "libero_x" / "round5_position_50ep.json", [30, 31, 29, 30, 32, 28, 30, 31, 29, 30])
    evaluation(loop / "libero_x" / "round5_task_50ep.json", [6] * 10, "libero_object_task")
    evaluation(loop / "libero_x" / "round5_none_50ep.json", [20] * 10, "libero_object")  # no bootstrap file
    evaluation(tmp_path / "libero" / "oracle" / "o256_position_50ep.json", [11] * 10)
    monkeypatch.setattr(tbl, "BOOTSTRAP_FROM", {"libero_x": ("libero_p", "forked")})
    monkeypatch.setattr(tbl, "AGAINST_BOOTSTRAP", (("position oracle", "oracle/o256", "libero_p"),))
    table = tbl.build(tmp_path / "libero")
    got = {(r["row"], r["perturb"]): r for r in table["against_bootstrap"]}
    assert set(got) == {("loop `libero_x`, round 5", "position"), ("loop `libero_x`, round 5", "task"),
                        ("position oracle", "position")}
    x = got[("loop `libero_x`, round 5", "position")]
    assert x["against"] == "`libero_p` round 0" and x["diff_pp"] == pytest.approx(40.0)
    assert x["verdict"] == "shown" and x["target_pp"] == 20.0
    assert got[("position oracle", "position")]["verdict"] == "measured not to hold"
    assert got[("loop `libero_x`, round 5", "task")]["verdict"] == "reported"
    md = tbl.markdown(table, "cmd")
    assert "| loop `libero_x`, round 5 | `libero_p` round 0 | position | +40.0 | [" in md
    assert "| position oracle | `libero_p` round 0 | position | +2.0 | [" in md
    assert md.count("≥ +20: ") == 2 and "| reported |" in md


def test_a_libero_goal_run_gets_its_own_section_with_its_steps(tmp_path):
    """Every suite with a loop family has a section (a `libero_goal` file once stopped the build), its step
    limit the evaluator's."""
    from experiments.liberopro import table as tbl
    from experiments.liberopro.evaluate import MAX_STEPS

    path = tmp_path / "libero" / "loop" / "libero_g" / "round0_none_50ep.json"
    path.parent.mkdir(parents=True)
    tasks = [{"name": f"t{i}", "episodes": 50, "successes": 2} for i in range(10)]
    path.write_text(json.dumps({"suite": "libero_goal", "episodes": 500, "successes": 20,
                                "episodes_per_task": 50, "tasks_run": tasks}))
    md = tbl.markdown(tbl.build(tmp_path / "libero"), "cmd")
    goal = md.split("## Ours: libero_goal")[1].split("## Reported in the CoDA paper")[0]
    assert "| loop `libero_g`, round 0 (SFT on its seed demonstrations) | 4 % (20/500) |" in goal
    assert f"its BDDL, {MAX_STEPS['libero_goal']} steps;" in goal and "standalone SFT" not in goal
