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
        {"suite": "libero_object_swap", "successes": 3, "episodes": 50, "wall_s": 9.0}))
    (d / "coda_round1_libero_object.json").write_text(json.dumps(
        {"evaluation": {"none": {"successes": 30, "episodes": 50},
                        "task": {"successes": 5, "episodes": 50}}}))
    (d / "sft_dart_libero_spatial_position.json").write_text(json.dumps(
        {"suite": "libero_spatial_swap", "successes": 7, "episodes": 50}))
    assert cells(d / "coda_round1_libero_object.json")["task"]["successes"] == 5
    table = build(d)
    spatial = {r["row"]: r["cells"] for r in table["ours"] if r["suite"] == "libero_spatial"}
    assert spatial["SFT, DART demonstrations"]["position"]["successes"] == 7
    rows = {r["row"]: r["cells"] for r in table["ours"] if r["suite"] == "libero_object"}
    assert rows["SFT, DART demonstrations (the seed policy)"] == {
        "position": {"successes": 3, "episodes": 50, "wall_s": 9.0}}
    md = markdown(table, "cmd")
    assert "| seed policy + 1 CoDA round | 60 % (30/50) | – | – | 10 % (5/50) |" in md
    assert "| scripted expert | – | – | – | – |" in md and "theirs, not measured here" in md
    assert "## Ours: libero_spatial" in md and "| SFT, DART demonstrations | – | 14 % (7/50) | – | – |" in md
    assert "| CoDA (π0.5), 15 rounds | 91 % | 88 % | 78 % | 76 % | 84 % | 76 % |" in md  # theirs, per suite
