"""The extended bootstrap's recipe study: a recipe changes only the extended table's bootstrap's
demonstrations and SFT steps; its development scenes are drawn in the extended space; the table keeps recipes
apart; bad input is refused before any work. The measurement itself (a bootstrap per recipe) is `python -m
studies.extended_bootstrap_dev`."""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from experiments.table.cells import bootstrap_cell
from experiments.table.presets import TABLES
from sim.extension import EXTENSION
from studies import extended_bootstrap_dev as study
from studies import update_dev


def test_a_recipe_changes_only_the_extended_bootstrap_s_demonstrations_and_steps(tmp_path: Path) -> None:
    base, _ = bootstrap_cell(TABLES.get("extended"), 1, "rules", 2, tmp_path)
    cfg, run = study.recipe_config(120, 3000, 1, tmp_path)
    assert run == tmp_path / "120x3000_seed1"
    assert cfg.space == "extended" and cfg.rounds == 0 and cfg.seed == 1
    assert (cfg.seed_demos, cfg.learn.sft_steps) == (120, 3000)
    assert dataclasses.replace(cfg, seed_demos=base.seed_demos, learn=base.learn) == base


@pytest.mark.parametrize("bad", ["120", "x1500", "0x1500", "120x-1", "ax1500"])
def test_a_malformed_recipe_is_refused_before_any_work(bad: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        study.main(["--recipes", f"40x1500,{bad}", "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2 and "--recipes" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


class _Accepting:
    """An episode pool whose validity check accepts every draw (the draws themselves are real)."""

    class executor:  # noqa: N801 - mirrors EpisodePool.executor
        @staticmethod
        def submit(fn: Any, *args: Any) -> Future:
            done: Future = Future()
            done.set_result((True, ""))
            return done


def test_the_development_scenes_are_drawn_in_the_space_asked(tmp_path: Path) -> None:
    extension = {f["name"] for f in EXTENSION}
    for space, has_extension in (("core", False), ("extended", True)):
        scenes = update_dev.dev_scenes(["pick_place"], 1, tmp_path / space, _Accepting(), space=space)
        assert [(s.family, s.split) for s in scenes] == [("pick_place", "id"), ("pick_place", "ood")]
        for s in scenes:
            drawn = {name for group in s.load().factors.values() for name in group}
            assert bool(drawn & extension) is has_extension


def test_a_draw_that_cannot_be_built_is_rejected_like_an_invalid_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sim.families import get_family

    fam, real = get_family("pick_place"), get_family("pick_place").make_scene
    calls: list[int] = []

    def first_has_no_room(values: Any, seed: int = 0) -> Any:
        calls.append(seed)
        if len(calls) == 1:
            raise ValueError("no free spot for an obstacle")
        return real(values, seed=seed)

    monkeypatch.setattr(fam, "make_scene", first_has_no_room)
    scenes = update_dev.dev_scenes(["pick_place"], 1, tmp_path, _Accepting(), space="extended")
    # two candidates a try: the first could not be built, the second is the scene; then two for `ood`
    assert len(scenes) == 2 and scenes[0].load().seed == calls[1] and len(calls) == 4


def test_the_table_keeps_recipes_apart() -> None:
    def cell(r: str, seed: int, id_: float) -> dict:
        return {"recipe": r, "seed": seed, "id": {"a": id_, "b": id_ + 10}, "ood": {"a": 0.0, "b": 2.0}}

    md = study.markdown([cell("120x1500", 0, 40), cell("40x1500", 0, 10), cell("40x1500", 1, 20)], "cmd", 25)
    lines = md.splitlines()
    assert lines[2] == "| `40x1500` | 20.0 ± 5.0 | 1.0 ± 0.0 | 15 / 25 | [0, 1] |"
    assert lines[3] == "| `120x1500` | 45.0 ± 0.0 | 1.0 ± 0.0 | 40 / 50 | [0] |"
    assert "25 per family and split" in md and "Command: `cmd`" in md
