"""Table 1's harness: the aggregate follows the documented schema and arithmetic; the smoke preset runs every
method end to end (shared bootstrap checked by hash, equal budget, frozen suites), and a second call skips
the recorded cells. The numbers of the smoke table are not checked: it is far too small to mean anything."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from experiments.table import cells as table_cells
from experiments.table import fork, presets, record, stats, table1
from tests.smoke_table import SMOKE_METHODS


def _cell(method: str, seed: int, ood: float, accepted: dict | None = None) -> dict:
    fams = ["pick_place", "stack_insert"]
    return {"method": method, "seed": seed, "families": fams, "critic": None,
            "ood": {f: ood for f in fams}, "ood_single": {f: ood + 10 for f in fams},
            "instruction": {f: 50.0 for f in fams}, "id": {f: 90.0 for f in fams}, "in": 80.0,
            "accepted_per_round": accepted or {"1": {"pick_place": 6, "stack_insert": 6}},
            "integrity": {"flagged": False, "fallback_slots": 0}, "wall_s": 10.0}


def test_aggregate_is_mean_and_standard_error_over_seeds_in_the_documented_schema():
    table = stats.aggregate([_cell("sft", 0, 10.0), _cell("sft", 1, 20.0), _cell("coda", 0, 40.0)], "x")
    assert table["preset"] == "x" and table["seeds"] == [0, 1] and table["equal_budget"]
    sft = table["methods"]["sft"]
    assert sft["avg_ood"] == {"mean": 15.0, "se": 5.0} and sft["cells"] == 2
    assert sft["ood"]["pick_place"] == {"mean": 15.0, "se": 5.0}
    assert set(sft) >= {"avg_ood", "in", "ood", "ood_single", "instruction", "cells"}
    assert table["methods"]["coda"]["avg_ood"] == {"mean": 40.0, "se": 0.0}
    assert list(table["methods"]) == ["sft", "coda"]  # the paper's row order


def test_change_against_the_bootstrap_and_budget_on_modes():
    fams = ["pick_place", "stack_insert"]
    boot = {0: {"seed": 0, "bootstrap_sha256": "b0", "id": {f: 100.0 for f in fams},
                "ood": {"pick_place": 0.0, "stack_insert": 10.0}}}
    coda = {**_cell("coda", 0, 20.0), "critic": "rules", "bootstrap_shared": True, "bootstrap_sha256": "b0",
            "memory_per_round": {"1": {"arms": ["seed|pick_place×2", "var_obj_x_low|pick_place×2"]},
                                 "2": {"arms": ["seed|pick_place×1", "container_approach|pick_place×3"]}}}
    other_boot = {**_cell("sft", 0, 20.0), "bootstrap_shared": True, "bootstrap_sha256": "not b0"}
    t = stats.aggregate([coda, other_boot], "x", boot)["methods"]
    assert t["coda"]["id_change"] == {"mean": -10.0, "se": 0.0}  # 90 vs 100: forgetting
    assert t["coda"]["ood_change"] == {"mean": 15.0, "se": 0.0}  # 20 vs (0 + 10) / 2
    assert t["coda"]["mode_budget_pct"] == {"mean": 37.5, "se": 0.0}  # 3 of 8 scenes on a mode
    assert t["sft"]["id_change"] is None and t["sft"]["mode_budget_pct"] is None  # another bootstrap
    assert stats.mode_budget_share({"memory_per_round": {}}) is None


def test_compute_sums_the_records_and_says_what_predates_the_timing():
    boots = {0: {"seed": 0, "wall_s": 100.0, "eval_s": 20.0, "run_cpu_s": 150.0}, 1: {"seed": 1}}
    cells = [{**_cell("sft", 0, 10.0), "eval_s": 5.0, "run_cpu_s": 14.4}, _cell("sft", 1, 20.0)]
    table = stats.aggregate(cells, "x", boots)
    assert table["compute"] == {"run_s": 20.0, "eval_s": 5.0, "untimed_eval_cells": 1, "bootstrap_s": 120.0,
                                "untimed_bootstraps": 1, "run_cpu_s": 14.4, "cpu_timed_cells": 1,
                                "bootstrap_cpu_s": 150.0, "cpu_timed_bootstraps": 1}
    note = stats.compute_note(table)
    assert "145 s" in note and "1 cells' suite evaluations, 1 bootstraps" in note
    assert "CPU of the cell runs' processes: 14 s over 1 cells" in note
    assert "CPU of the bootstrap runs' processes: 150 s over 1 bootstraps" in note
    # a cell resumed after a kill: its rounds' own wall seconds, where the harness saw only the last part;
    # a forked cell's rounds include its base's, so it keeps the harness's figure
    resumed = {**_cell("sft", 2, 20.0), "rounds_wall_s": 700.0}
    forked = {**_cell("sft", 3, 20.0), "rounds_wall_s": 900.0, "forked_from": {"run": "x", "after_round": 1}}
    assert stats.aggregate([resumed, forked], "x", {})["compute"]["run_s"] == 710.0


def test_unequal_budgets_are_reported():
    cells = [_cell("sft", 0, 10.0), _cell("coda", 0, 40.0, {"1": {"pick_place": 5, "stack_insert": 6}})]
    assert not stats.aggregate(cells, "x")["equal_budget"]


def test_a_mostly_fallen_back_diagnosis_cell_is_flagged():
    cfg = table_cells.cell_config(presets.TABLES.get("smoke"), "coda", 0, "rules", 1)
    rows = [{"round": 0}, {"round": 1, "generation": {"slots": 4},
                           "fallbacks": {"slots": 3, "reasons": {"writer": 3}}}]
    assert record.integrity(cfg, rows)["flagged"]
    sft = table_cells.cell_config(presets.TABLES.get("smoke"), "sft", 0, "rules", 1)
    assert not record.integrity(sft, rows)["flagged"]


def test_the_dr_background_table_makes_rows_of_its_own_on_the_core_bootstraps():
    """`--preset core_dr`: the core table's cells with `RunConfig.background` "dr", recorded as rows of
    their own (`coda@dr`, `uniform@dr`) in their own folder, on the core table's bootstraps; a method
    without generated arms (domain randomization, SFT) is the same row on any background."""
    core, dr = presets.TABLES.get("core"), presets.TABLES.get("core_dr")
    assert table_cells.boot_home(dr) == "table1_core" == core.table and dr.table != core.table
    methods = ("coda", "uniform", "domain_randomization", "sft")
    got = {m: table_cells.cell_config(dr, m, 0, "rules", 1) for m in methods}
    assert {m: record.row_name(c) for m, c in got.items()} == {
        "coda": "coda@dr", "uniform": "uniform@dr", "domain_randomization": "domain_randomization",
        "sft": "sft"}
    plain = table_cells.cell_config(core, "coda", 0, "rules", 1)
    assert got["coda"] == dataclasses.replace(plain, background="dr")
    assert record.row_name(table_cells.cell_config(dr, "coda", 0, "local", 1)) == "coda+local@dr"


def test_an_llm_critic_makes_rows_of_its_own_with_their_integrity_in_the_table():
    """`--critic local` runs CoDA as `coda+local` (its own record and run folder, beside the rules row on the
    same bootstraps); a method without a critic stays the one row."""
    smoke = presets.TABLES.get("smoke")
    assert record.row_name(table_cells.cell_config(smoke, "coda", 0, "local", 1)) == "coda+local"
    assert record.row_name(table_cells.cell_config(smoke, "coda", 0, "rules", 1)) == "coda"
    assert record.row_name(table_cells.cell_config(smoke, "uniform", 0, "local", 1)) == "uniform"
    llm = {**_cell("coda+local", 0, 30.0), "critic": "llm",
           "integrity": {"flagged": False, "fallback_slots": 2, "slots": 8,
                         "unusable_answers": {"critic_hybrid/schema": 1}}}
    table = stats.aggregate([_cell("coda", 0, 20.0), llm], "x")
    assert table["methods"]["coda+local"]["unusable_answers"] == {"critic_hybrid/schema": 1}
    note = stats.llm_integrity(table)
    assert note == ["**LLM rows** (critic and writers by the model named after `+`): `coda+local` 2 of 8 "
                    "slots fell back, unusable answers: critic_hybrid/schema 1."]


def test_smoke_table_end_to_end(smoke_table: tuple[Path, Path, dict]):
    out, results, table = smoke_table
    assert list(table["methods"]) == list(SMOKE_METHODS) and table["equal_budget"]
    assert set(SMOKE_METHODS) < set(stats.TABLE_METHODS)
    cells = {m: json.loads((results / "table1_smoke" / f"{m}_seed0.json").read_text())
             for m in SMOKE_METHODS}
    for m, c in cells.items():
        assert set(c["ood"]) == {"pick_place"} and 0.0 <= c["ood"]["pick_place"] <= 100.0
        assert set(c["curve"]) == {"round_00", "round_01"}
        assert c["bootstrap_shared"] == (m != "zero_shot"), m
    boot = json.loads((results / "table1_smoke" / "bootstrap" / "seed0.json").read_text())
    assert boot["bootstrap_sha256"] == cells["sft"]["bootstrap_sha256"] and set(boot["id"]) == {"pick_place"}
    # the verdicts of a diagnosing cell's diagnoses, one per diagnosis file; none for a method without
    coda = cells["coda"]
    files = list(Path(coda["run_dir"]).glob("diagnoses/round_*/*.json"))
    assert coda["verdicts"] is None if not files else \
        sum(v for k, v in coda["verdicts"].items() if k != "control_at_ceiling") == len(files)
    assert cells["sft"]["verdicts"] is None
    # each final episode's outcome, by scene: what the per-factor readings (factor_scaling) are made of
    for rec in (boot, *cells.values()):
        for split in ("id", "ood_single", "ood", "instruction"):
            got = table_cells.scene_outcomes(rec, split)
            assert len(got) == 1 and 100.0 * sum(got.values()) == rec[split]["pick_place"], (rec, split)
            assert next(iter(got)).startswith(f"pick_place/{split}/")
    methods = table["methods"]
    assert methods["sft"]["id_change"] is not None and methods["zero_shot"]["id_change"] is None
    hashes = {c["bootstrap_sha256"] for m, c in cells.items() if m != "zero_shot"}
    assert len(hashes) == 1 and cells["zero_shot"]["bootstrap_sha256"] not in hashes
    assert (results / "table1_smoke.md").read_text().startswith("| method |")
    # what the table cost, from its records: every cell's suite evaluation (~0 when the evaluation cache
    # already holds its policy's) and the bootstrap are timed
    assert all(c["eval_s"] >= 0 for c in cells.values()) and sum(c["eval_s"] for c in cells.values()) > 0
    assert boot["wall_s"] > 0 and boot["eval_s"] > 0
    assert table["compute"]["untimed_eval_cells"] == 0 and table["compute"]["untimed_bootstraps"] == 0
    assert table["compute"]["eval_s"] == pytest.approx(sum(c["eval_s"] for c in cells.values()), abs=0.5)
    # each cell's agents.run process tree is charged its own CPU: some, and no more than 2 cores × its wall
    assert all(0 < c["run_cpu_s"] <= 2 * c["wall_s"] + 5 for c in cells.values())
    assert "Compute recorded:" in (results / "table1_smoke.md").read_text()
    for plot in ("ood_vs_envs", "gain", "memory"):
        assert (results / f"table1_smoke_{plot}.png").stat().st_size > 1000
    page = (results / "table1_smoke.html").read_text()
    assert page.count("data:image/png;base64,") == 3 and "<td>coda</td>" in page
    committed = {p.name for p in record.table_files(results, "table1_smoke")}  # what --commit adds
    assert committed == {"table1_smoke.json", "table1_smoke.md", "table1_smoke.html",
                         *(f"table1_smoke_{p}.png" for p in ("ood_vs_envs", "gain", "memory"))}
    saved = json.loads((results / "table1_smoke.json").read_text())
    assert saved["methods"].keys() == table["methods"].keys() and "provenance" in saved
    again: list[str] = []
    table1.run_table("smoke", list(SMOKE_METHODS), [0], critic="rules", workers=1, out=out,
                     results=results, commit=False, command="test", log=again.append)
    assert again == [f"{m} seed 0: recorded, skipped" for m in SMOKE_METHODS]


SAME_ON_ANY_EXECUTOR = ("ood", "ood_single", "instruction", "id", "in", "curve", "accepted_per_round",
                        "memory_per_round", "compiled", "integrity", "bootstrap_sha256", "bootstrap_shared")


def test_smoke_cells_as_ray_tasks_match_the_local_ones(smoke_table: tuple[Path, Path, dict],
                                                       tmp_path: Path):
    """`--executor ray` on a local Ray instance: the SFT cell (the cheapest with a round), removed, runs
    again as a Ray task (its episodes Ray tasks too); the CoDA cell, still on disk, is only evaluated; the
    bootstrap runs as a task (finished already, so nothing to do) and is evaluated. Every record matches the
    local table's."""
    local_out, local_results, _ = smoke_table
    out, results = tmp_path / "runs", tmp_path / "results"
    shutil.copytree(local_out, out, ignore=shutil.ignore_patterns("sft_seed0", "_eval_cache"))
    seen: list[str] = []
    table = table1.run_table("smoke", ["sft", "coda"], [0], critic="rules", workers=2, out=out,
                             results=results, commit=False, command="test", log=seen.append, executor="ray")
    assert table["equal_budget"] and any("cells on Ray" in line for line in seen)
    assert json.loads((out / "sft_seed0" / "config.json").read_text())["executor"] == "ray"
    assert json.loads((out / "coda_seed0" / "config.json").read_text())["executor"] == "local"
    for m in ("sft", "coda"):
        here = json.loads((results / "table1_smoke" / f"{m}_seed0.json").read_text())
        there = json.loads((local_results / "table1_smoke" / f"{m}_seed0.json").read_text())
        assert {k: here[k] for k in SAME_ON_ANY_EXECUTOR} == {k: there[k] for k in SAME_ON_ANY_EXECUTOR}, m
    boot = "table1_smoke/bootstrap/seed0.json"
    here, there = (json.loads((r / boot).read_text()) for r in (results, local_results))
    assert here["id"] == there["id"] and here["bootstrap_sha256"] == there["bootstrap_sha256"]


def test_cli_rejects_bad_input_before_running(capsys: pytest.CaptureFixture[str]):
    assert table1.main(["--preset", "smok"]) == 2
    assert "Did you mean 'smoke'" in capsys.readouterr().err
    assert table1.main(["--methods", "coda,nope"]) == 2
    assert table1.main(["--workers", "0"]) == 2


def test_results_go_to_runs_unless_named_and_commit_needs_them_named(capsys: pytest.CaptureFixture[str]):
    from argparse import Namespace

    a = Namespace(preset="smoke", methods="coda", workers=1, ray_address=None, executor="local", results=None,
                  commit=False)
    table1.checked_cells(presets.TABLES, a)
    assert a.results == record.ROOT / "runs" / "results"
    assert table1.main(["--preset", "smoke", "--commit"]) == 2
    assert "--results" in capsys.readouterr().err
    named = Namespace(**{**vars(a), "results": Path("docs/results"), "commit": True})
    table1.checked_cells(presets.TABLES, named)
    assert named.results == Path("docs/results")


def test_a_seeds_bootstrap_comes_from_the_kept_policy_and_a_lost_one_stops_the_table(tmp_path: Path) -> None:
    """A committed bootstrap policy is used instead of training one (no SFT steps), the shipped pretrained
    policy counts when its hash is the recorded one, and a seed whose record names a policy that is nowhere
    stops with what to do (FINDINGS #18: seed 1's bootstrap was lost)."""
    preset = presets.TABLES.get("default")
    folder = tmp_path / "results" / preset.table / "bootstrap"
    folder.mkdir(parents=True)
    out = tmp_path / "runs"
    shutil.copy2(table_cells.PRETRAINED, folder / "seed3_round_00.safetensors")
    cfg, run = table_cells.kept_bootstrap_cell(preset, 3, "rules", 1, out, tmp_path / "results")
    assert cfg.learn.init_policy == str((folder / "seed3_round_00.safetensors").resolve())
    assert cfg.learn.sft_steps == 0
    shipped = table_cells.PRETRAINED
    (folder / "seed0.json").write_text(json.dumps({"bootstrap_sha256": record.sha256(shipped)}))
    assert table_cells.kept_bootstrap(tmp_path / "results", preset.table, 0) == table_cells.PRETRAINED
    # shipped, not committed again
    assert table_cells.bootstrap_files(tmp_path / "results", preset.table, 0) == []
    (folder / "seed1.json").write_text(json.dumps({"bootstrap_sha256": "0" * 64}))
    with pytest.raises(RuntimeError, match="move the seed's records aside"):
        table_cells.kept_bootstrap_cell(preset, 1, "rules", 1, out, tmp_path / "results")


def test_a_table_with_more_rounds_forks_the_finished_cells(smoke_table: tuple[Path, Path, dict],
                                                          tmp_path: Path) -> None:
    """A table that extends another (`TablePreset.extends`) starts each cell (here CoDA's) as a fork of
    that table's finished cell after its last round and runs only the rounds added; the shared rounds are
    the base cell's own (same policies, same curve), its bootstraps are read where the base keeps them."""
    import dataclasses

    local_out, local_results, _ = smoke_table
    smoke = presets.TABLES.get("smoke")
    name = "smoke_extended_by_a_test"
    if name not in presets.TABLES.names():
        presets.TABLES.register(name, dataclasses.replace(
            smoke, table="table1_smoke_extended", label="table1_smoke", extends="smoke",
            overrides={**smoke.overrides, "rounds": 2}))
    base = tmp_path / "table1_smoke"
    shutil.copytree(local_out, base, ignore=shutil.ignore_patterns("_eval_cache"))
    results = tmp_path / "results"
    shutil.copytree(local_results / "table1_smoke" / "bootstrap", results / "table1_smoke" / "bootstrap")
    seen: list[str] = []
    table1.run_table(name, ["coda"], [0], critic="rules", workers=1, out=tmp_path / "ext",
                     results=results, commit=False, command="test", log=seen.append)
    assert any("coda_seed0: forked from" in line for line in seen), seen
    m = "coda"
    rec = json.loads((results / "table1_smoke_extended" / f"{m}_seed0.json").read_text())
    was = json.loads((local_results / "table1_smoke" / f"{m}_seed0.json").read_text())
    assert set(rec["curve"]) == {"round_00", "round_01", "round_02"}
    assert {k: rec["curve"][k] for k in was["curve"]} == was["curve"]
    assert rec["forked_from"] == {"run": str(base / f"{m}_seed0"), "after_round": 1}
    assert rec["bootstrap_shared"] and rec["bootstrap_sha256"] == was["bootstrap_sha256"]
    cell = tmp_path / "ext" / f"{m}_seed0"
    assert record.sha256(cell / "policy" / "round_01.safetensors") == record.sha256(
        base / f"{m}_seed0" / "policy" / "round_01.safetensors")
    assert json.loads((cell / "config.json").read_text())["rounds"] == 2
    assert not (results / "table1_smoke_extended" / "bootstrap").exists()  # one home: the base table's
    # its compute is its own cells' (the forked rounds and the base's bootstraps are the base table's)
    compute = json.loads((results / "table1_smoke_extended.json").read_text())["compute"]
    assert compute["bootstrap_s"] == 0 and compute["untimed_bootstraps"] == 0 and compute["eval_s"] >= 0


def test_a_token_budget_no_model_reads_does_not_make_another_cell() -> None:
    import dataclasses

    cfg = table_cells.cell_config(presets.TABLES.get("default"), "coda", 0, "rules", 1)
    older = dataclasses.replace(cfg, writer=dataclasses.replace(cfg.writer, max_tokens_subgoals=800))
    assert fork._without_model_budgets(older) == fork._without_model_budgets(cfg)
    other = dataclasses.replace(cfg, writer=dataclasses.replace(cfg.writer, band=0.5))
    assert fork._without_model_budgets(other) != fork._without_model_budgets(cfg)
    asked = dataclasses.replace(older, llm="local")
    local = dataclasses.replace(cfg, llm="local")
    assert fork._without_model_budgets(asked) != fork._without_model_budgets(local)


def test_the_committed_records_find_their_converted_bootstraps() -> None:
    """Table 1's seed records name each bootstrap by its old `.pt` file's sha256; the committed results
    (`docs/results`) keep their policies in `checkpoints/` as .safetensors, found through the manifest."""
    from coda_policy import pretrained

    results = record.ROOT / "docs" / "results"
    assert table_cells.kept_dir(results, "table1") == pretrained.ROOT / "table1"
    assert table_cells.kept_bootstrap(results, "table1", 0) == pretrained.SEED_SFT_4FAM
    assert table_cells.bootstrap_files(results, "table1", 0) == []
    for seed in (1, 2, 3, 4):
        kept = table_cells.kept_bootstrap(results, "table1", seed)
        assert kept == pretrained.table_bootstrap("table1", seed)
        assert table_cells.bootstrap_files(results, "table1", seed) == [kept, pretrained.MANIFEST]
        rec = results / "table1" / "bootstrap" / f"seed{seed}.json"
        old = json.loads(rec.read_text())["bootstrap_sha256"]
        assert old != record.sha256(kept) and pretrained.canonical_sha256(old) == record.sha256(kept)


def test_the_extended_table_starts_from_the_core_bootstrap_with_room_for_its_objects(tmp_path: Path) -> None:
    """A table whose policy has room for more object tokens than the lent bootstrap (the extended table from
    the core table's) starts from a copy with the bound raised — the same tensors — kept as its own."""
    from coda_policy import pretrained
    from coda_policy.checkpoint import load_checkpoint, split

    results = tmp_path / "results"
    lent = results / "table1_core" / "bootstrap" / "seed0.json"
    lent.parent.mkdir(parents=True)
    lent.write_text(json.dumps({"bootstrap_sha256": record.sha256(pretrained.SEED_SFT_4FAM)}))
    ext = presets.TABLES.get("extended")
    assert presets.lender(ext.bootstraps) is presets.TABLES.get("core")
    cfg, _ = table_cells.kept_bootstrap_cell(ext, 0, "rules", 1, tmp_path / "out", results)
    own = results / "table1_extended" / "bootstrap" / "seed0_round_00.safetensors"
    assert cfg.learn.init_policy == str(own.resolve()) and cfg.learn.sft_steps == 0
    was, now = load_checkpoint(pretrained.SEED_SFT_4FAM), load_checkpoint(own)
    assert (was["config"]["max_objects"], now["config"]["max_objects"]) == (16, 20)
    a, b = split(was)[0], split(now)[0]
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)
    assert table_cells.table_bootstrap(ext, results, 0) == own  # its own from now on
    # the core table itself needs no room: it starts from the lent policy as it is
    cfg, _ = table_cells.kept_bootstrap_cell(presets.TABLES.get("core"), 0, "rules", 1, tmp_path / "o2",
                                             results)
    assert cfg.learn.init_policy == str(pretrained.SEED_SFT_4FAM.resolve())
