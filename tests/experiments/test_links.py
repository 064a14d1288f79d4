"""The loop-link ablations' table: each row's cost against CoDA paired by seed, and what it shows about
the ≥ 2 pp bar; the command refuses rows that are not link ablations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.table import links


def _cell(folder: Path, method: str, seed: int, ood: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    fams = ("pick_place", "articulated")
    rec = {"method": method, "seed": seed, "ood": dict.fromkeys(fams, ood), "id": dict.fromkeys(fams, 80.0),
           "bootstrap_sha256": f"boot{seed}", "bootstrap_shared": True}
    (folder / f"{method}_seed{seed}.json").write_text(json.dumps(rec))


def test_costs_are_paired_by_seed_and_judged_against_the_bar(tmp_path: Path) -> None:
    preset = links.LINKS.get("core")
    for seed, base in enumerate((20.0, 30.0, 25.0, 35.0, 40.0)):
        _cell(tmp_path / preset.label, "coda", seed, base)  # CoDA's cells stay in the shared table's folder
        _cell(tmp_path / preset.table, "coda_random_critic", seed, base - 10 + seed % 2)  # costs ~10 pp
        _cell(tmp_path / preset.table, "coda_no_verify", seed, base + 0.5 * (-1) ** seed)  # costs ~0
        _cell(tmp_path / preset.table, "coda_no_compose", seed, base - 2 + 4 * (seed % 2))  # wide
    rows = links.aggregate(tmp_path, preset)["rows"]
    assert list(rows) == ["coda", "coda_random_critic", "coda_no_verify", "coda_no_compose"]
    assert rows["coda"]["cost"] is None and rows["coda"]["avg_ood"]["mean"] == 30.0
    rc = rows["coda_random_critic"]["cost"]
    assert rc["seeds"] == [0, 1, 2, 3, 4] and rc["diffs"] == [10.0, 9.0, 10.0, 9.0, 10.0]
    assert rows["coda_random_critic"]["verdict"] == "costs ≥ 2 pp: shown"
    assert rows["coda_no_verify"]["verdict"] == "measured not to cost 2 pp"
    assert rows["coda_no_compose"]["verdict"] == "≥ 2 pp not shown (the interval holds it)"
    table = links.write_table(tmp_path, preset, "core", "cmd")
    md = (tmp_path / f"{preset.table}.md").read_text()
    assert "| critic → a random factor of the failing scene | `coda_random_critic` |" in md
    assert "+9.6 ± 0.2" in md and table["rows"].keys() == rows.keys()


def test_fewer_than_three_seeds_is_no_verdict() -> None:
    """Two seeds whose differences tie (0.5 pp steps) have SE 0 and an interval of a point: no verdict."""
    assert links.verdict(None) == "fewer than 3 paired seeds"
    tied = {"seeds": [0, 1], "diffs": [-0.5, -0.5], "mean": -0.5, "se": 0.0, "ci95": [-0.5, -0.5]}
    assert links.verdict(tied) == "fewer than 3 paired seeds"
    assert links.verdict({**tied, "seeds": [0, 1, 2]}) == "measured not to cost 2 pp"


def test_a_row_that_is_not_a_link_ablation_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert links.main(["--preset", "smoke", "--methods", "coda,uniform"]) == 2
    assert "uniform: not a row of this table (coda, coda_random_critic" in capsys.readouterr().err
