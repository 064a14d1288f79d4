"""The Text2potential ablations: every row is CoDA with one training signal changed; the table's arithmetic
(paired by seed, first round reaching the threshold, agreement after refinement); the smoke preset end to
end, sharing Table 1's cells; `coda_no_refine` really skips refinement. Numbers of the smoke table are not
checked: it is far too small to mean anything."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents.config import METHODS, RunConfig
from experiments.table import ablations


def _cell(method: str, seed: int, ood: dict[str, float], curve: list[float] | None = None,
          compiled: list[dict] | None = None) -> dict:
    fams = list(ood)
    curve = curve or [0.0, ood[fams[0]]]
    return {"method": method, "seed": seed, "families": fams, "ood": ood, "id": {f: 80.0 for f in fams},
            "shaping": METHODS.get(method).shaping,
            "curve": {f"round_{r:02d}": {f: {"ood": v} for f in fams} for r, v in enumerate(curve)},
            "compiled": compiled or [], "accepted_per_round": {"1": {f: 6 for f in fams}}}


def test_every_row_is_the_papers_coda_with_only_its_training_signal_changed():
    coda = METHODS.get("coda_text2potential")
    changed = {"coda": {"shaping": "sparse"}, "coda_task_potential": {"shaping": "task_potential"},
               "coda_dense_reward": {"shaping": "dense_reward"}, "coda_no_refine": {"refine": False},
               "coda_unit": {"shaping": "text2potential_unit"},
               "coda_frozen_actor": {"shaping": "frozen_actor"}}
    for name, fields in changed.items():
        assert METHODS.get(name) == dataclasses.replace(coda, **fields), name
    assert set(ablations.ABLATION_METHODS) == {*changed, "coda_text2potential"}


def test_default_preset_shares_table1_cells():
    from experiments.table.cells import cell_config
    from experiments.table.presets import TABLES

    ours = cell_config(ablations.ABLATIONS.get("default"), "coda", 1, "rules", 2)
    assert ours == cell_config(TABLES.get("default"), "coda", 1, "rules", 2)


def test_aggregate_pairs_by_seed_and_reads_multi_stage_families():
    fams = {"pick_place": 50.0, "stack_insert": 10.0, "put_inside": 30.0}
    cells = [
        _cell("coda_text2potential", 0, fams, curve=[0.0, 5.0, 20.0],
              compiled=[{"agreement": 0.6, "agreement_refined": 0.95}, {"agreement": 0.9}]),
        _cell("coda_text2potential", 1, {**fams, "stack_insert": 30.0}, curve=[0.0, 0.0, 0.0]),
        _cell("coda", 0, {**fams, "put_inside": 10.0}),
        _cell("coda", 2, fams),  # no Text2potential cell of seed 2: not in the paired difference
    ]
    t = ablations.aggregate(cells, "x", reach=10.0)
    assert t["multi_stage"] == ["stack_insert", "put_inside"]
    coda = t["methods"]["coda_text2potential"]
    assert coda["multi_stage_ood"] == {"mean": 25.0, "se": 5.0}  # (10+30)/2 and (30+30)/2
    assert coda["reach_rounds"] == [2, None] and coda["agreement"] == 0.925 and coda["programs"] == 2
    # seed 0 only: Text2potential (10+30)/2 = 20 vs sparse (10+10)/2 = 10
    assert t["text2potential_minus_sparse"] == {"mean": 10.0, "se": 0.0, "seeds": 1}
    assert list(t["methods"]) == ["coda", "coda_text2potential"]
    md = ablations.markdown(t, {"command": "c", "cell_commits": ["abc"], "commit": "abc", "versions": "v"})
    assert "+10.0 ± 0.0 pp over 1 paired seed(s) (target ≥ +3 pp: met)" in md
    assert "round 2 (median of 1/2 that reached it)" in md and "0.93 (2)" in md
    # not comparable as is
    assert "**Rows average different seeds** (coda [0, 2]; coda_text2potential [0, 1])" in md


def test_no_refine_uses_the_written_program(monkeypatch: pytest.MonkeyPatch):
    import programs.potential
    import programs.refine
    from agents.graph.nodes import remember
    from agents.graph.nodes.arms import seed_training

    refined = []
    monkeypatch.setattr(programs.potential, "agreement", lambda tp, demos: 0.5)
    monkeypatch.setattr(programs.refine, "refine", lambda tp, ev: refined.append(tp) or tp)
    seed = seed_training("pick_place")
    agents = SimpleNamespace(write_training_program=lambda *a, **k: seed)
    dx = SimpleNamespace(text=lambda: "obj_x high in approach")
    for method, calls in (("coda", 1), ("coda_no_refine", 0)):
        refined.clear()
        deps = SimpleNamespace(config=RunConfig(method=method, llm="rules"), agents=agents, llm=None)
        _, info = remember._training_program(deps, dx, "pick_place", "m", 1, demos=["a demo"])
        assert len(refined) == calls and info["agreement"] == 0.5, method
        assert ("agreement_refined" in info) == bool(calls)


def test_smoke_ablation_end_to_end_shares_the_coda_cells(tmp_path: Path,
                                                         smoke_table: tuple[Path, Path, dict]):
    """On a copy of the smoke table's cells: the bootstrap and the `coda` and `coda_text2potential` cells are
    Table 1's (only the `coda_frozen_actor` cell runs here)."""
    out, results = tmp_path / "runs", tmp_path / "results"
    shutil.copytree(smoke_table[0], out)
    shutil.copytree(smoke_table[1], results)
    assert ablations.main(["--preset", "smoke", "--methods", "coda,coda_frozen_actor,coda_text2potential",
                           "--out", str(out), "--results", str(results)]) == 0
    table = json.loads((results / "ablations_smoke.json").read_text())
    assert list(table["methods"]) == ["coda", "coda_frozen_actor", "coda_text2potential"]
    assert table["equal_budget"]
    # the frozen actor ran through the loop: its round's checkpoint is the bootstrap actor with a critic,
    # and the suites evaluated it as the Q-selecting policy
    import torch

    from coda_policy.awr import Q_SELECT
    from coda_policy.checkpoint import load_checkpoint

    frozen = load_checkpoint(out / "coda_frozen_actor_seed0" / "policy" / "round_01.safetensors")
    boot = load_checkpoint(out / "coda_frozen_actor_seed0" / "policy" / "round_00.safetensors")
    assert Q_SELECT in frozen and all(torch.equal(frozen["state_dict"][k], v)
                                      for k, v in boot["state_dict"].items())
    shared = ablations.SHARED_METHODS
    assert set(shared) == {"coda", "coda_text2potential"}
    cells = {m: json.loads((results / ("table1_smoke" if m in shared else "ablations_smoke")
                            / f"{m}_seed0.json").read_text()) for m in table["methods"]}
    assert not any((results / "ablations_smoke" / f"{m}_seed0.json").exists() for m in shared)  # Table 1's
    assert cells["coda"]["shaping"] == "sparse"
    assert cells["coda_text2potential"]["shaping"] == "text2potential"
    assert cells["coda"]["bootstrap_sha256"] == cells["coda_frozen_actor"]["bootstrap_sha256"]
    config = json.loads((out / "coda_seed0" / "config.json").read_text())
    assert config["preset"] == "smoke+table1_smoke"  # the very cell experiments.table --preset smoke runs
    md = (results / "ablations_smoke.md").read_text()
    assert "Text2potential − sparse on the multi-stage families" in md


def test_the_shared_row_is_read_from_table1_only(tmp_path: Path):
    """`coda` has one record, Table 1's: the ablation table reads every seed of it there, and a stale copy
    left in the ablations' own folder is not read."""
    results = tmp_path / "results"
    fams = {"pick_place": 10.0, "stack_insert": 20.0}
    for s in (0, 1):
        (results / "table1").mkdir(parents=True, exist_ok=True)
        (results / "table1" / f"coda_seed{s}.json").write_text(json.dumps(_cell("coda", s, fams)))
    (results / "table1" / "sft_seed0.json").write_text(json.dumps(_cell("sft", 0, fams)))
    (results / "ablations").mkdir()
    stale = _cell("coda", 0, {f: 90.0 for f in fams})
    (results / "ablations" / "coda_seed0.json").write_text(json.dumps(stale))
    (results / "ablations" / "coda_unit_seed0.json").write_text(json.dumps(_cell("coda_unit", 0, fams)))
    cells = ablations.table_cells(results, ablations.ABLATIONS.get("default"))
    got = sorted((c["method"], c["seed"], c["ood"]["pick_place"]) for c in cells)
    assert got == [("coda", 0, 10.0), ("coda", 1, 10.0), ("coda_unit", 0, 10.0)]
    assert ablations.table1_preset(ablations.ABLATIONS.get("default")).table == "table1"


def test_cli_rejects_rows_that_are_not_ablations(capsys: pytest.CaptureFixture[str]):
    assert ablations.main(["--methods", "sft"]) == 2
    assert "not an ablation" in capsys.readouterr().err
    assert ablations.main(["--preset", "smok"]) == 2
    assert ablations.main(["--reach", "120"]) == 2
