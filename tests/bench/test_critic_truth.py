"""The critic benchmark's ground truth: each drawn scene moves k distinct factors out of distribution and
each counterfactual twin moves exactly one of them back (everything else equal); scoring counts what it
should."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from bench.agents.critic_truth import Case, _draws, main, score
from programs.factor_space import variant_edit
from programs.seeds import seed_library


@pytest.mark.parametrize("family", sorted(seed_library()))
def test_twins_differ_from_the_moved_scene_in_one_factor_only(family: str) -> None:
    gen = seed_library()[family][0]
    for d in _draws([family], draws=3, k=3, seed0=123):
        moved, twins = d["tasks"][0], d["tasks"][1:]
        assert len(set(d["moved"])) == len(d["moved"]) == len(twins) == min(3, len(d["moved"]))
        assert all(t.seed == moved.seed for t in twins)
        base = gen.sample_factors(np.random.default_rng(d["seed"]))
        for name, twin in zip(d["moved"], twins, strict=True):
            differ = {k for k in moved.factors if twin.factors[k] != moved.factors[k]}
            assert differ <= {name} and twin.factors[name] == base[name]
        for name in d["moved"]:  # every moved factor lies where Table 1's variants move it
            band, v = variant_edit(gen.factor(name), d["sides"][name]), moved.factors[name]
            assert v == band if gen.factor(name).type == "choice" else band[0] <= v <= band[1]


def test_scores_count_right_factors_phases_and_unusable_answers(monkeypatch) -> None:
    import bench.agents.critic_truth as ct

    monkeypatch.setattr(ct, "_stuck", lambda case: "grasp")
    dx = lambda factor, phase: SimpleNamespace(factor=factor, phase=phase)  # noqa: E731
    cases = [Case(family="pick_place", factor="size", side="low", seed=1, episode=None,
                  diagnoses={"rules/alone": dx("size", "grasp"), "random": "mass",
                             "local/alone": "unusable: x"}),
             Case(family="stack_insert", factor="piece_x", side="high", seed=2, episode=None,
                  diagnoses={"rules/alone": dx("piece_y", "approach"), "random": "piece_x",
                             "local/alone": dx("piece_x", "grasp")})]
    s = score(cases)
    assert s["rules/alone"] | {"by_family": None} == {"factor_right": 1, "of": 2, "phase_right": 1,
                                                     "phase_of": 2, "unusable": 0, "by_family": None}
    assert s["rules/alone"]["by_family"] == {"pick_place": {"right": 1, "of": 1},
                                             "stack_insert": {"right": 0, "of": 1}}
    assert s["random"]["factor_right"] == 1 and s["random"]["phase_of"] == 0
    assert s["local/alone"]["unusable"] == 1 and s["local/alone"]["factor_right"] == 1


@pytest.mark.slow  # covered by `python -m bench.agents.critic_truth` (docs/benchmarks.md)
def test_the_benchmark_end_to_end(tmp_path) -> None:
    out = tmp_path / "r.json"
    assert main(["--families", "pick_place", "--draws", "8", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    c = res["counts"]
    assert c["cases"] == c.get("failures_fixed_by_1", 0) >= 1
    assert res["scores"]["rules/peers"]["of"] == c["cases"]


def test_bad_arguments_are_argparse_errors(capsys) -> None:
    for argv, msg in ((["--critics", "rule"], "rule"), (["--families", "pick_plate"], "pick_plate"),
                      (["--draws", "0"], "--draws")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and msg in capsys.readouterr().err


def test_spread_takes_the_families_in_turn() -> None:
    from bench.agents.critic_truth import spread

    cs = [Case(family=f, factor="x", side="low", seed=i, episode=None)
          for i, f in enumerate(["a", "a", "a", "b", "c", "c"])]
    assert [c.family for c in spread(cs, 4)] == ["a", "b", "c", "a"]
    assert spread(cs, None) == cs and spread(cs, 10) == cs


def test_saved_cases_load_back_with_their_episodes(tmp_path) -> None:
    from bench.agents.critic_truth import load_cases, save_cases
    from sim.episode import run_episode
    from sim.families import get_family

    ep = run_episode(get_family("pick_place").sample_scene(3))
    path = ep.save(tmp_path / "ep.npz")
    case = Case(family="pick_place", factor="size", side="low", seed=3, episode=ep, episode_path=path,
                moved=["size", "obj_x", "color"], peers=[({"size": 0.02}, True), ({"size": 0.05}, False)])
    save_cases([case], {"cases": 1}, tmp_path / "cases")
    (back,), counts = load_cases(tmp_path / "cases")
    assert counts == {"cases": 1} and back.peers == case.peers and back.moved == case.moved
    assert back.episode.scene == ep.scene and len(back.episode.states) == len(ep.states)
