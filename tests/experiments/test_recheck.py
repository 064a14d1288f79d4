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
