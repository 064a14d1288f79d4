"""`experiments.libero_coda` (the parts that need no LIBERO episode) and `experiments.liberopro_table`."""

from __future__ import annotations

import json

import pytest

from experiments.libero_coda import allocate, layouts, modes, reuse_count
from experiments.liberopro_table import build, cells, markdown, perturb_of


@pytest.fixture(scope="module")
def object_layouts():
    return layouts("libero_object")


def test_the_partner_libero_pro_swaps_with_is_held_out_of_every_task(object_layouts):
    """Every libero_object task: the object of interest, its swap partners (never the basket), and the
    partner of LIBERO-Pro's `_swap` file excluded from them."""
    from experiments.liberopro import tasks
    from sim.libero.scene import LiberoScene

    assert len(object_layouts) == 10
    pro = {t.name: t for t in tasks("libero_object", "position")}
    for lay in object_layouts:
        assert lay.held_out and lay.held_out not in lay.partners and len(lay.partners) == 4
        assert not any(p.startswith("basket") for p in lay.partners)
        moved_to = LiberoScene.from_bddl(pro[lay.task].bddl).start_region(lay.subject).full_name
        assert moved_to not in lay.partners.values()


def test_a_validated_mode_reaches_the_other_tasks_through_its_region(object_layouts):
    probes = [{"task": object_layouts[0].task, "diagnoses": [{"region": "floor_other_object_region_2",
                                                             "phase": "grasp"}],
               "verdict": {"status": "validated", "diagnosis": 0}},
              {"task": object_layouts[1].task, "diagnoses": [{"region": "floor_other_object_region_3",
                                                             "phase": "grasp"}],
               "verdict": {"status": "refuted", "diagnosis": 0}}]
    found = modes(probes)
    assert found == [{"region": "floor_other_object_region_2", "phase": "grasp",
                      "founded_on": object_layouts[0].task}]
    plan = allocate(object_layouts, found, "coda", 10, 0.3, 0)
    for lay in object_layouts:
        scenes = plan[lay.task]
        assert len(scenes) == 10 and scenes.count(None) == 3 and lay.held_out not in scenes
        reached = lay.partner_in("floor_other_object_region_2")
        if reached is not None:  # half of the generated scenes (rounded up) on the mode, the rest exploring
            assert scenes.count(reached) >= 4
    assert reuse_count(object_layouts, found) == sum(
        lay.partner_in("floor_other_object_region_2") is not None for lay in object_layouts[1:])
    assert all(s == [None] * 10 for s in allocate(object_layouts, found, "original", 10, 0.3, 0).values())


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
