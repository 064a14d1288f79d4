"""`experiments.table.recheck`: a table's final policies and bootstraps on a never-read suite set, checked to
be the policies the records scored, resumable, paired like the table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coda_policy.pretrained import sha256
from experiments.table import recheck as rc
from experiments.table.presets import TABLES

pytestmark = pytest.mark.integration  # reads the smoke table (tests/smoke_table.py)


def _results(smoke_table: tuple[Path, Path, dict], tmp_path: Path) -> Path:
    _, results, _ = smoke_table
    mine = tmp_path / "results"
    shutil.copytree(results, mine)
    return mine


def test_a_recheck_plays_the_final_policies_and_the_bootstrap_on_the_other_set(
        smoke_table: tuple[Path, Path, dict], tmp_path: Path) -> None:
    results = _results(smoke_table, tmp_path)
    preset = TABLES.get("smoke")
    written = rc.recheck(preset, ["coda", "sft"], [0], "frozen50", results, workers=1, commit=False,
                         per_split=1, log=lambda _: None)
    folder = results / "frozen50" / preset.table
    assert sorted(p.name for p in written) == ["bootstrap_seed0.json", "coda_seed0.json", "sft_seed0.json"]
    cell = json.loads((results / preset.table / "coda_seed0.json").read_text())
    run = Path(cell["run_dir"])
    again = json.loads((folder / "coda_seed0.json").read_text())
    assert again["policy_sha256"] == sha256(run / "policy" / f"{max(cell['curve'])}.safetensors")
    boot = json.loads((folder / "bootstrap_seed0.json").read_text())
    assert boot["policy_sha256"] == cell["bootstrap_sha256"] == again["bootstrap_sha256"]
    assert again["suite"] == "frozen50" and again["rechecks"] == f"{preset.table}/coda_seed0.json"
    assert set(again["ood"]) == set(cell["families"])
    assert all(len(bits) == 1 for split in again["scenes"].values() for bits in split.values())
    # resumable: the same policies are not played again
    assert rc.recheck(preset, ["coda", "sft"], [0], "frozen50", results, workers=1, commit=False,
                      per_split=1, log=lambda _: None) == []
    text = rc.page(results, preset, "frozen50", "coda", "a test", "test")
    assert "Why: a test" in text and "| bootstrap |" in text and "| coda |" in text


def test_a_run_that_no_longer_holds_the_recorded_policy_is_refused(smoke_table: tuple[Path, Path, dict],
                                                                   tmp_path: Path) -> None:
    results = _results(smoke_table, tmp_path)
    path = results / "table1_smoke" / "coda_seed0.json"
    cell = json.loads(path.read_text())
    family = next(iter(cell["ood"]))
    cell["ood"][family] = cell["ood"][family] + 1.0  # the run directory now scores another policy
    with pytest.raises(rc.RecheckError, match="not its record's"):
        rc.final_policy(cell)
    cell["run_dir"] = str(tmp_path / "gone")
    with pytest.raises(rc.RecheckError, match="not on this machine"):
        rc.final_policy(cell)


def test_cli_refuses_the_tables_own_set_and_missing_cells(smoke_table: tuple[Path, Path, dict],
                                                          tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    results = _results(smoke_table, tmp_path)
    args = ["--preset", "smoke", "--seeds", "1", "--results", str(results)]  # seed 0
    assert rc.main([*args, "--rows", "coda", "--set", "frozen10"]) == 2
    assert "the table's own suite set" in capsys.readouterr().err
    assert rc.main([*args, "--rows", "coda", "--seeds", "0,3", "--set", "frozen50"]) == 2
    assert "no record for coda seed 3" in capsys.readouterr().err
    assert rc.main([*args, "--rows", "coda", "--set", "frozen7"]) == 2
    assert "no suite set 'frozen7'" in capsys.readouterr().err


def test_the_oracle_row_is_the_policy_its_ceiling_record_scored(smoke_table: tuple[Path, Path, dict],
                                                                 tmp_path: Path) -> None:
    """`--oracle`: each seed's headroom oracle joins the re-check once its policy scores its record's first
    family's `ood` split again; a record that says otherwise, or another bootstrap, is refused. The
    oracle here is a stand-in (the smoke table's SFT policy with a ceiling record written for it)."""
    from agents.config import RunConfig
    from experiments.table import suites as frozen
    from experiments.table.cells import evaluate
    from experiments.table.record import oracle_folder, oracle_name
    from sim.pool import EpisodePool

    results = _results(smoke_table, tmp_path)
    preset = TABLES.get("smoke")
    sft = json.loads((results / preset.table / "sft_seed0.json").read_text())
    run = Path(sft["run_dir"])
    name = oracle_name(*rc.ORACLE_CELL, 0)
    runs = tmp_path / "ceiling_runs"
    (runs / name).mkdir(parents=True)
    shutil.copy(run / "policy" / f"{max(sft['curve'])}.safetensors", runs / name / "round_01.safetensors")
    family = sft["families"][0]
    scenes = frozen.suite([family], splits=("ood",), per_split=1, set_name=preset.suite)
    steps = RunConfig.from_json((run / "config.json").read_text()).rollout_max_steps
    with EpisodePool(1) as pool:
        ood = evaluate(runs / name / "round_01.safetensors", scenes, 0, pool, steps)[family]["ood"]
    record = results / "findings" / oracle_folder("smoke") / f"{name}.json"
    record.parent.mkdir(parents=True)
    rec = {"rounds": 1, "families": sft["families"], "per_split": 1, "suite": preset.suite,
           "bootstrap_sha256": sft["bootstrap_sha256"], "ood": {f: 0.0 for f in sft["families"]}}
    rec["ood"][family] = 100.0 - ood  # not what the policy scores
    record.write_text(json.dumps(rec))
    with pytest.raises(rc.RecheckError, match="not the policy the record scored"):
        rc.recheck(preset, ["coda"], [0], "frozen50", results, workers=1, commit=False, per_split=1,
                   log=lambda _: None, oracle=runs)
    rec["ood"][family] = ood
    record.write_text(json.dumps(rec))
    written = rc.recheck(preset, ["coda"], [0], "frozen50", results, workers=1, commit=False, per_split=1,
                         log=lambda _: None, oracle=runs)
    assert "oracle_seed0.json" in {p.name for p in written}
    again = json.loads((results / "frozen50" / preset.table / "oracle_seed0.json").read_text())
    assert again["method"] == "oracle"
    assert again["rechecks"] == f"findings/{oracle_folder('smoke')}/{name}.json"
    assert "| oracle |" in rc.page(results, preset, "frozen50", "coda", "", "test")
    (results / "frozen50" / preset.table / "oracle_seed0.json").unlink()
    rec["bootstrap_sha256"] = "0" * 64
    record.write_text(json.dumps(rec))
    with pytest.raises(rc.RecheckError, match="another bootstrap"):
        rc.recheck(preset, ["coda"], [0], "frozen50", results, workers=1, commit=False, per_split=1,
                   log=lambda _: None, oracle=runs)
    # a record that keeps its policy's hash is checked by it, without playing the policy again
    rec["bootstrap_sha256"], rec["policy_sha256"] = sft["bootstrap_sha256"], "f" * 64
    record.write_text(json.dumps(rec))
    with pytest.raises(rc.RecheckError, match="is not the policy its record scored"):
        rc.recheck(preset, ["coda"], [0], "frozen50", results, workers=1, commit=False, per_split=1,
                   log=lambda _: None, oracle=runs)
    rec["policy_sha256"], rec["ood"][family] = sha256(runs / name / "round_01.safetensors"), 100.0 - ood
    record.write_text(json.dumps(rec))
    written = rc.recheck(preset, ["coda"], [0], "frozen50", results, workers=1, commit=False, per_split=1,
                         log=lambda _: None, oracle=runs)
    assert [p.name for p in written] == ["oracle_seed0.json"]
