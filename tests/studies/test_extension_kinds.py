"""The extension-kinds study: one kind of the extension's factors is kept as drawn and every other one set to
its default (`none`: the core scene's values; `all`: the draw); placement goes with what it places; bad input
is refused before any work. The measurement itself is `python -m studies.extension_kinds`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.extension import EXTENSION
from sim.families import get_family
from studies import extension_kinds as study

DEFAULTS = {f["name"]: f["default"] for f in EXTENSION}


def _drawn() -> object:
    fam = get_family("pick_place")
    for seed in range(50):  # a draw with distractors and an arm start off its default
        values = fam.sample_factors(np.random.default_rng(seed), ood=True, space="extended")
        flat = fam.flat(values)
        if flat["distractor_count"] > 0 and flat["ee_x"] != 0.0:
            return fam.make_scene(values, seed=seed)
    raise AssertionError("no such draw in 50 seeds")


def test_one_kind_is_kept_as_drawn_and_the_rest_at_defaults() -> None:
    assert "distractor" in study.kinds() and "distractor_pos" not in study.kinds()
    scene, fam = _drawn(), get_family("pick_place")
    drawn = fam.flat(scene.factors)
    kind = {f["name"]: study.kind_of(f) for f in EXTENSION}
    for row in ("none", "distractor", "arm_init", "all"):
        got = fam.flat(study.with_kind(scene, row).factors)
        for name in DEFAULTS:
            as_drawn = row == "all" or kind[name] == row
            assert got[name] == (drawn[name] if as_drawn else DEFAULTS[name]), (row, name)
        assert {k: v for k, v in got.items() if k not in DEFAULTS} == \
            {k: v for k, v in drawn.items() if k not in DEFAULTS}  # the core factors untouched
    assert kind["distractor_dist"] == "distractor"  # placement goes with what it places
    assert len(study.with_kind(scene, "distractor").objects) > len(study.with_kind(scene, "none").objects)


def test_a_kind_can_take_its_values_from_another_draw() -> None:
    fam, scene = get_family("pick_place"), _drawn()
    base = fam.make_scene(fam.sample_factors(np.random.default_rng(999), space="extended"), seed=999)
    got = fam.flat(study.with_kind(base, "distractor", scene).factors)
    drawn, own = fam.flat(scene.factors), fam.flat(base.factors)
    assert got["distractor_count"] == drawn["distractor_count"] > 0 and got["ee_x"] == DEFAULTS["ee_x"]
    assert {k: v for k, v in got.items() if k not in DEFAULTS} == \
        {k: v for k, v in own.items() if k not in DEFAULTS}  # the base scene's own core factors


@pytest.mark.parametrize("args", [["--policy", "no.safetensors", "--label", "x"],
                                  ["--policy", "checkpoints/seed_sft_4fam.safetensors", "--label", "a b"]])
def test_bad_input_is_refused_before_any_work(args: list[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        study.main([*args, "--results", str(tmp_path / "r"), "--out", str(tmp_path / "o")])
    assert exit_.value.code == 2 and not (tmp_path / "r").exists() and not (tmp_path / "o").exists()
