"""The oracle ceiling: its training scenes come from the source it names, with seeds disjoint from the
frozen suites'; the table's arithmetic; bad input is refused before any work. The measurement itself
(minutes per cell) is `python -m studies.ceiling`, whose results are committed under
docs/results/findings/."""

from __future__ import annotations

import pytest

from experiments.table import suites as frozen
from experiments.table.record import oracle_folder
from sim.extension import ADDED_COUNTS
from studies import ceiling


def _outside(family: str, spec) -> list[str]:
    from sim.families import get_family

    fam = get_family(family)
    flat = fam.flat(spec.factors)
    return [f.name for f in fam.factors if not f.contains(flat[f.name], ood=False)]


def test_sources_draw_the_distribution_they_name():
    for family in frozen.FAMILIES:
        assert _outside(family, ceiling.draw(family, "id", 1, 0, 0)) == []
        assert len(_outside(family, ceiling.draw(family, "ood", 1, 0, 0))) >= 2
        mixed = [len(_outside(family, ceiling.draw(family, "mixed", 1, i, 0))) for i in range(4)]
        assert mixed[0] == mixed[2] == 0 and mixed[1] >= 2 and mixed[3] >= 2


def test_ood_single_moves_one_factor_the_frozen_split_moves_in_either_space():
    from sim.families import get_family

    for family in frozen.FAMILIES:
        assert len(_outside(family, ceiling.draw(family, "ood_single", 1, 0, 0))) == 1
        fam = get_family(family)
        movable = {f.name for f in frozen.movable_ood(fam, "extended")}
        moved = set()
        for i in range(12):
            spec = ceiling.draw(family, "ood_single", 1, i, 0, space="extended")
            flat = fam.flat(spec.factors)
            out = [f.name for f in fam.schema("extended") if not f.contains(flat[f.name], ood=False)]
            assert len(out) == 1 and out[0] in movable
            moved |= set(out)
        assert len(moved) > 3  # drawn at random, not always the same factor
        for i in range(6):  # one count moved out of its point range (0), nothing else
            flat = fam.flat(ceiling.draw(family, "ood_added", 1, i, 0, space="extended").factors)
            out = [f.name for f in fam.schema("extended") if not f.contains(flat[f.name], ood=False)]
            assert len(out) == 1 and out[0] in ADDED_COUNTS and flat[out[0]] >= 1
    with pytest.raises(ValueError, match="needs --table extended"):
        ceiling.draw("pick_place", "ood_added", 1, 0, 0)


def test_training_scenes_are_never_suite_scenes():
    suite_seeds = {s.load().seed for name in frozen.SETS for s in frozen.suite(set_name=name)}
    ours = {ceiling.draw(f, src, r, i, a, "extended" if src == "ood_added" else "core").seed
            for f in frozen.FAMILIES for src in ceiling.SOURCES for r in (1, 2) for i in range(3)
            for a in range(2)}
    assert not ours & suite_seeds
    assert ceiling.draw("pick_place", "ood", 2, 1, 0) == ceiling.draw("pick_place", "ood", 2, 1, 0)


def test_markdown_averages_families_over_seeds():
    def cell(seed: int, ood: float, replay: bool) -> dict:
        fams = ("pick_place", "stack_insert")
        return {"source": "ood", "budget": 6, "replay": replay, "seed": seed, "code_commit": "abc",
                **{s: {f: (ood if s == "ood" else 50.0) for f in fams} for s in frozen.SPLITS}}

    md = ceiling.markdown([cell(0, 10.0, False), cell(1, 30.0, False), cell(0, 40.0, True)], "cmd")
    assert "| ood | 6 | the round's demos | 20.0 ± 10.0 | 50.0 ± 0.0 |" in md
    assert "| ood | 6 | every demo so far | 40.0 ± 0.0 |" in md


@pytest.mark.parametrize("args", [["--sources", "odd"], ["--budgets", "0"], ["--replay", "maybe"],
                                  ["--seeds", "0"], ["--table", "core", "--sources", "ood_added"]])
def test_cli_refuses_bad_input(args: list[str], capsys: pytest.CaptureFixture[str]):
    assert ceiling.main(args) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_another_table_size_keeps_its_records_apart():
    assert oracle_folder("default") == "ceiling" and oracle_folder("core") == "ceiling_core"
