"""The extended seed programs (`programs.seeds.extended_source`): the core library unchanged, each family's
extended program its scene builder's text with `sim.extension`'s factors added, clean for the sandbox and
run by it; the critic's lookups by family see the extended factors."""

from __future__ import annotations

import numpy as np
import pytest

from programs.checks import check_generation
from programs.factor_space import family_factors, kind_of
from programs.seeds import seed_library, seed_paths
from sandbox.policy import check_source
from sim.extension import EXTENSION_NAMES
from sim.families import get_family

OURS = ("pick_place", "articulated", "put_inside", "stack_insert", "push")
# the seed generation programs' ids before the extension existed (commit 2635c8c)
CORE_IDS = {"pick_place": "1f6f31042bc82782", "articulated": "73f9090dec559c98",
            "put_inside": "d2122d850149f32b", "stack_insert": "bb24c98398f2760d", "push": "04949a6936dc0076"}


@pytest.mark.parametrize("family", OURS)
def test_the_core_seed_programs_are_their_scene_builders_as_before(family):
    gen = seed_library("core")[family][0]
    assert gen.id.startswith(CORE_IDS[family])
    assert gen.source == seed_paths(family)[0].read_text() and seed_library()[family][0] == gen


@pytest.mark.parametrize("family", OURS)
def test_an_extended_seed_program_is_checked_clean_and_declares_the_extended_schema(family):
    gen, core = seed_library("extended")[family][0], seed_library("core")[family][0]
    assert gen.factors == get_family(family).schema("extended") and gen.id != core.id
    assert check_generation(gen) == [] and check_source(gen.source) is None
    assert "def core_generate(" in gen.source and "from sim.extension import extend" in gen.source
    assert seed_library("extended")[family][1] == seed_library("core")[family][1]  # the same training program


def test_the_critic_looks_up_extended_factors_by_family():
    assert kind_of("articulated", "distractor_count") == "distractor"
    assert kind_of("push", "damping") == "damping"
    assert {f.name for f in family_factors("stack_insert")} >= EXTENSION_NAMES
    assert not EXTENSION_NAMES & {f.name for f in family_factors("libero_object")}

def test_live_factors_of_a_family_include_the_extended_ones_that_change_its_scene():
    from agents.critic.factors import live_under

    live = live_under("pick_place", {})
    assert {"distractor_count", "obs_noise", "table_height"} <= live
    assert "distractor_kind" not in live  # no distractor in the default scene: its shape changes nothing
    assert "distractor_kind" in live_under("pick_place", {"distractor_count": 2})


@pytest.mark.integration
def test_the_sandbox_runs_every_extended_seed_program_as_make_scene():
    from sandbox import PoolConfig, SandboxPool

    lib = seed_library("extended")
    with SandboxPool(PoolConfig(workers=1)) as pool:
        for family in OURS:
            fam, gen = get_family(family), lib[family][0]
            for ood in (False, True):
                values = fam.sample_factors(np.random.default_rng([3, int(ood)]), ood, "extended")
                values["task"].update(distractor_count=2, obstacle_count=1)
                result = pool.run(gen.source, fam.flat(values), seed=0)
                assert result.ok, f"{family}: {result.error}"
                scene = result.scenes[0]
                assert scene == fam.make_scene(values, seed=0)
                assert {"distractor0", "distractor1", "obstacle0"} <= {o.name for o in scene.objects}
