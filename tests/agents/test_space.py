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
from agents.graph.nodes.arms import dr_program, editable_factors, seed_generation, variant_program
from agents.run import make_config, parse_args
from programs.factor_space import movable
from programs.seeds import seed_library, using_space
from sim.extension import EXTENSION_NAMES
from sim.families import get_family
from tests.agents.test_run_e2e import cli


def test_the_space_round_trips_and_an_older_config_is_core():
    cfg = dataclasses.replace(get_preset("smoke"), space="extended")
    assert RunConfig.from_json(cfg.to_json()) == cfg and json.loads(cfg.to_json())["space"] == "extended"
    old = json.loads(get_preset("smoke").to_json())
    del old["space"]
    assert RunConfig.from_json(json.dumps(old)).space == "core" == RunConfig().space
    with pytest.raises(ValueError, match="unknown factor space 'wide'"):
        RunConfig(space="wide")  # type: ignore[arg-type]


def test_the_cli_chooses_the_space():
    assert make_config(parse_args(["--preset", "smoke", "--space", "extended"])).space == "extended"
    assert make_config(parse_args(["--preset", "smoke"])).space == "core"


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
