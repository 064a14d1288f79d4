"""A run's factor space (`RunConfig.space`, issue #39 item 4): recorded in config.json (an older file is a
core run), chosen with `agents.run --space`, and what every generator of the loop draws from — the seed
programs, exploration variants, domain randomization — in a whole run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from agents.config import RunConfig
from agents.config.presets import get_preset
from agents.config.run_config import room_for_space
from agents.graph.nodes.arms import editable_factors, variant_program
from agents.run import make_config, parse_args
from programs.factor_space import movable
from programs.seeds import dr_program, seed_generation, seed_library, using_space
from sim.extension import EXTENDED_MAX_OBJECTS, EXTENSION_NAMES
from sim.families import get_family
from tests.agents.test_run_e2e import cli


def _extended(cfg: RunConfig) -> RunConfig:
    return dataclasses.replace(cfg, space="extended", learn=dataclasses.replace(
        cfg.learn, policy=room_for_space(cfg.learn.policy, "extended")))


def test_the_space_round_trips_and_an_older_config_is_core():
    cfg = _extended(get_preset("smoke"))
    assert RunConfig.from_json(cfg.to_json()) == cfg and json.loads(cfg.to_json())["space"] == "extended"
    old = json.loads(get_preset("smoke").to_json())
    del old["space"]
    assert RunConfig.from_json(json.dumps(old)).space == "core" == RunConfig().space
    with pytest.raises(ValueError, match="unknown factor space 'wide'"):
        RunConfig(space="wide")  # type: ignore[arg-type]


def test_the_cli_chooses_the_space():
    extended = make_config(parse_args(["--preset", "smoke", "--space", "extended"]))
    assert extended.space == "extended" and extended.learn.policy.max_objects == EXTENDED_MAX_OBJECTS
    assert make_config(parse_args(["--preset", "smoke"])).space == "core"


def test_the_policy_of_an_extended_run_takes_every_object_a_scene_can_hold():
    """The object-token policy refuses a scene with more object tokens than `max_objects` (16 by default);
    an `ood` scene of the first extended suites held 17 (put_inside: its own 5 and the extension's), which
    stopped the first extended table at its bootstrap's evaluation. An extended run's policy has room for
    the most the extension can add; a config without it is refused before anything runs."""
    import torch

    from coda_policy.object_token.features import featurize
    from coda_policy.object_token.modeling_object_token import ObjectTokenPolicy
    from experiments.table.cells import cell_config
    from experiments.table.presets import TABLES
    from sim.env import SimEnv
    from sim.extension import MOST_ADDED
    from sim.scene import SceneSpec

    with pytest.raises(ValueError, match="max_objects = 16: a scene of the extended space holds up to 20"):
        dataclasses.replace(get_preset("smoke"), space="extended")
    assert MOST_ADDED == 12 and EXTENDED_MAX_OBJECTS >= 5 + MOST_ADDED
    cfg = cell_config(TABLES.get("extended"), "coda", 0, "rules", 1)
    assert cfg.learn.policy.max_objects == EXTENDED_MAX_OBJECTS
    assert cell_config(TABLES.get("core"), "coda", 0, "rules", 1).learn == get_preset("default").learn
    scene = Path(__file__).parent / "fixtures" / "put_inside_17_tokens.json"  # the first extended suites
    spec = SceneSpec.model_validate_json(scene.read_text())
    feats = featurize(SimEnv(spec).state(), spec=spec)
    assert len(feats["objects"]) == 17
    batch = {k: torch.as_tensor(v)[None] for k, v in feats.items()}
    for limit, fits in ((16, False), (EXTENDED_MAX_OBJECTS, True)):
        policy = ObjectTokenPolicy(dataclasses.replace(cfg.learn.policy, max_objects=limit))
        if fits:
            assert policy.encode(batch)[0].shape[1] == 3 + 17
        else:
            with pytest.raises(ValueError, match="17 object tokens exceed max_objects=16"):
                policy.encode(batch)


def test_the_space_in_use_decides_what_seed_library_and_seed_generation_serve():
    assert seed_generation("push") == seed_library("core")["push"][0]
    with using_space("extended"):
        assert seed_generation("push") == seed_library("extended")["push"][0]
        assert seed_library()["push"][0].factors == get_family("push").schema("extended")
        assert seed_generation("push", "core") == seed_library("core")["push"][0]
    assert seed_library()["libero_object"][0] == seed_library("extended")["libero_object"][0]
    assert seed_generation("push") == seed_library("core")["push"][0]


def test_variants_and_domain_randomization_reach_the_extended_factors():
    base = seed_generation("pick_place", "extended")
    names = {f.name for f in editable_factors(base)}
    assert names == {f.name for f in base.factors} and all(movable(base.factor(n)) for n in EXTENSION_NAMES)
    dr = dr_program(base, 0.5)
    assert dr.factor("distractor_count").range != base.factor("distractor_count").range
    assert dr.factor("distractor_kind").choices == ("cube", "cylinder", "twin", "sphere")
    var = variant_program(base, [("obs_noise", "high")], 1)
    assert var.factor("obs_noise").range[0] > base.factor("obs_noise").range[1]


@pytest.mark.integration
def test_a_smoke_run_in_the_extended_space_draws_extended_scenes(tmp_path: Path) -> None:
    out = tmp_path / "ext"
    done = cli("-m", "agents.run", "--preset", "smoke", "--space", "extended", "--rounds", "1",
               "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert json.loads((out / "config.json").read_text())["space"] == "extended"
    seed = json.loads(next((out / "programs" / "round_00").glob("gen_seed_*.json")).read_text())
    assert {f["name"] for f in seed["factors"]} >= EXTENSION_NAMES
    scenes = [json.loads(p.read_text()) for p in (out / "scenes" / "round_01").glob("*.json")]
    assert scenes and all("distractor_count" in s["factors"]["task"] for s in scenes)
    variants = list((out / "programs" / "round_01").glob("gen_var_*.json"))
    assert variants  # exploration variants drawn from the extended program's factors
