"""The scaling study: per space, factors per family, each method's average OOD and CoDA − uniform and
− learnability paired by seed, from the records of the `core` and `extended` tables."""

from __future__ import annotations

import json
from pathlib import Path

from experiments import factor_scaling as fs
from experiments.table.presets import TABLES
from sim.extension import EXTENDED_MAX_OBJECTS


def _cell(folder: Path, method: str, seed: int, ood: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rec = {"method": method, "seed": seed, "ood": {"a": ood, "b": ood}, "id": {"a": 80.0, "b": 80.0},
           "ood_single": {"a": 2 * ood, "b": 2 * ood},
           "bootstrap_sha256": f"b{seed}", "bootstrap_shared": True}
    (folder / f"{method}_seed{seed}.json").write_text(json.dumps(rec))


def test_each_space_is_its_own_table_with_about_three_times_the_factors() -> None:
    core, ext = TABLES.get("core"), TABLES.get("extended")
    assert (core.suite, ext.suite) == ("frozen50", "extended50b") and ext.overrides["space"] == "extended"
    # the same table but for the space and the policy's room for its objects (`room_for_space`)
    assert {k: v for k, v in ext.overrides.items() if k not in ("space", "learn")} == core.overrides
    assert "learn" not in core.overrides and ext.overrides["learn"].policy.max_objects == EXTENDED_MAX_OBJECTS
    assert 2.5 <= fs.factors_per_family("extended") / fs.factors_per_family("core") <= 3.5


def test_the_table_pairs_coda_with_uniform_and_learnability_in_each_space(tmp_path: Path) -> None:
    for seed in range(3):
        _cell(tmp_path / "table1_core", "coda", seed, 20.0 + seed)
        _cell(tmp_path / "table1_core", "uniform", seed, 19.0 + seed)
        _cell(tmp_path / "table1_extended", "coda", seed, 15.0 + 2 * seed)
        _cell(tmp_path / "table1_extended", "uniform", seed, 5.0 + seed)
    table = fs.write(tmp_path, "cmd")
    core, ext = table["spaces"]["core"]["splits"]["ood"], table["spaces"]["extended"]["splits"]["ood"]
    assert core["coda_minus"]["uniform"]["mean"] == 1.0 and core["coda_minus"]["learnability"] is None
    assert ext["coda_minus"]["uniform"]["diffs"] == [10.0, 11.0, 12.0]
    assert ext["methods"]["coda"]["mean_se"]["mean"] == 17.0 and "sft" not in ext["methods"]
    single = table["spaces"]["extended"]["splits"]["ood_single"]
    assert single["coda_minus"]["uniform"]["diffs"] == [20.0, 22.0, 24.0]  # read on its own split
    factors = table["spaces"]["extended"]["factors"]
    md = (tmp_path / "factor_scaling.md").read_text()
    assert f"| `extended` | {factors} | `extended50b` | `ood` | 17.0 ± 1.1 | 6.0 ± 0.6 | – | – | – |" in md
    assert f"| `extended` | {factors} | `extended50b` | `ood_single` | 34.0 ± 2.3 | 12.0 ± 1.1 |" in md
    assert factors == round(fs.factors_per_family("extended"), 1)
    assert "+11.0 ± 0.6" in md and (tmp_path / "factor_scaling.png").stat().st_size > 1000


def test_ood_single_is_read_by_the_kind_of_factor_each_scene_moves(tmp_path: Path) -> None:
    folder = tmp_path / "table1_extended"
    for method, bits in (("coda", "1" * 50), ("uniform", "0" * 50)):
        _cell(folder, method, 0, 10.0)
        rec = json.loads((folder / f"{method}_seed0.json").read_text())
        rec |= {"suite": "extended50b", "per_split": 50, "scenes": {"ood_single": {"pick_place": bits}}}
        (folder / f"{method}_seed0.json").write_text(json.dumps(rec))
    table = fs.by_kind(tmp_path, "extended")
    kinds = table["kinds"]
    assert sum(kinds.values()) == 50 and {"core", "distractor", "distractor count", "arm_init"} <= set(kinds)
    assert all(table["rows"]["coda"][k] == [n, n] for k, n in kinds.items())
    assert all(table["rows"]["uniform"][k] == [0, n] for k, n in kinds.items())
    md = fs.kind_markdown("extended", table)
    n = kinds["distractor"]
    assert f"| `distractor` | {n} | 100 ({n}) | 0 ({n}) |" in md
    assert fs.by_kind(tmp_path, "core") == {"kinds": {}, "rows": {}}  # no core table here


def test_the_oracle_stands_beside_the_methods_with_the_share_of_its_gain_coda_takes(tmp_path: Path) -> None:
    folder = tmp_path / "table1_core"
    (folder / "bootstrap").mkdir(parents=True)
    oracle = tmp_path / "findings" / "ceiling_core"
    oracle.mkdir(parents=True)
    for seed in range(2):
        _cell(folder, "coda", seed, 14.0 + seed)  # 4 pp over the bootstrap at either seed
        boot = {"seed": seed, **{s: {"a": 10.0 + seed, "b": 10.0 + seed} for s in ("ood", "id")},
                "ood_single": {"a": 60.0, "b": 60.0}}
        (folder / "bootstrap" / f"seed{seed}.json").write_text(json.dumps(boot))
        rec = {"source": "ood", "budget": 6, "replay": True, "seed": seed, "ood": {"a": 30.0, "b": 30.0},
               "id": {"a": 80.0, "b": 80.0}, "ood_single": {"a": 0.0, "b": 0.0}}
        (oracle / f"ood_b6_replay_seed{seed}.json").write_text(json.dumps(rec))
    (oracle / "ood_b6_seed0.json").write_text(json.dumps({**rec, "replay": False, "seed": 7}))  # not read
    table = fs.write(tmp_path, "cmd")
    ood = table["spaces"]["core"]["splits"]["ood"]
    assert ood["methods"]["oracle"]["seeds"] == [0, 1] and ood["methods"]["oracle"]["mean_se"]["mean"] == 30.0
    c = ood["capture"]  # CoDA gains 4 of the oracle's 19.5 on average
    assert c["seeds"] == [0, 1] and c["share"] == 4.0 / 19.5
    assert "ood_single" not in {k for k, v in table["spaces"]["core"]["splits"].items() if "capture" in v}
    md = (tmp_path / "factor_scaling.md").read_text()
    assert "| 30.0 ± 0.0 | – | – | 21 % (+4.0 of +19.5 pp, 2 seeds) |" in md
