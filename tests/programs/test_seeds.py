"""The seed library: every family has a generation and a training program; the generation programs run
(imported here as modules — test code only) and mirror their family's `make_scene`."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from programs.potential import compile_potential
from programs.seeds import SEED_FAMILIES, seed_library, seed_paths
from sim.scene import SceneSpec
from tests.programs.helpers import import_file, registered

ALLOWED_IMPORTS = {"numpy", "math", "random", "sim.scene"}


def test_library_has_every_registered_family():
    lib = seed_library()
    assert set(lib) == {"pick_place", "articulated", "put_inside", "stack_insert", "push", "libero_object",
                        "libero_spatial", "libero_goal"}
    for family, (gen, train) in lib.items():
        assert gen.family == train.family == family and gen.mode_id == train.mode_id == "seed"
        assert gen.parent_id is None and train.parent_id is None and gen.factors


@pytest.mark.parametrize("family", SEED_FAMILIES)
def test_generation_seed_imports_only_what_the_sandbox_allows(family):
    tree = ast.parse(seed_library()[family][0].source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= ALLOWED_IMPORTS
        elif isinstance(node, ast.ImportFrom):
            assert node.module in ALLOWED_IMPORTS


@pytest.mark.parametrize("family", SEED_FAMILIES)
def test_generation_seed_returns_a_valid_scene_for_default_factors(family):
    gen, _ = seed_library()[family]
    module = import_file(seed_paths(family)[0])
    spec = module.generate(np.random.default_rng(0), **gen.default_factors())
    assert isinstance(spec, SceneSpec) and spec.family == family
    assert SceneSpec.from_json(spec.to_json()) == spec
    assert spec.factors == gen.grouped(gen.default_factors())
    with pytest.raises(ValueError, match="unknown factors"):
        module.generate(np.random.default_rng(0), not_a_factor=1)


@pytest.mark.parametrize("family", SEED_FAMILIES)
def test_generation_seed_mirrors_the_family(family):
    if not registered(family):
        pytest.skip(f"family {family!r} is not registered yet")
    from sim.families import get_family

    fam = get_family(family)
    gen, _ = seed_library()[family]
    assert gen.factors == fam.factors  # same factor names, groups, ranges and defaults
    module = import_file(seed_paths(family)[0])
    rng = np.random.default_rng(1)
    for i in range(40):
        values = fam.sample_factors(rng, ood=bool(i % 2))
        assert module.generate(rng, **fam.flat(values)) == fam.make_scene(values, seed=0)


@pytest.mark.parametrize("family", SEED_FAMILIES)
def test_training_seed_compiles_for_sampled_scenes(family):
    if not registered(family):
        pytest.skip(f"family {family!r} is not registered yet")
    from programs.checks import check_training
    from sim.families import get_family

    _, tp = seed_library()[family]
    for seed in range(6):
        scene = get_family(family).sample_scene(seed, ood=bool(seed % 2))
        assert check_training(tp, scene) == []
        assert compile_potential(tp, scene).m == tp.m


@pytest.mark.integration
@pytest.mark.parametrize("family", SEED_FAMILIES)
def test_generation_seed_and_its_rendered_file_pass_the_sandbox_policy(family):
    policy = pytest.importorskip("sandbox.policy")
    from programs.edits import edit
    from programs.render import render

    gen, _ = seed_library()[family]
    edited = edit(gen, gen.factors[0].name, gen.factors[0].default, mode_id="pinned")
    for source in (gen.source, render(edited)):
        _, found = policy.find_violations(source)
        assert found == [], found
