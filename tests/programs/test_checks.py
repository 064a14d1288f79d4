"""Static checks: each problem is found before anything runs and points at the program's line, or at
the subgoal and column."""

from __future__ import annotations

import pytest

from programs.checks import ProgramCheckError, assert_valid, check_generation, check_program, check_training
from programs.model import GenerationProgram, TrainingProgram
from programs.seeds import seed_library
from sim.families.base import FactorDef
from sim.scene import ObjectSpec, Predicate, SceneSpec

GEN, TRAIN = seed_library()["pick_place"]
F = (FactorDef(name="a", group="spatial", type="float", default=0.5, range=(0, 1)),
     FactorDef(name="b", group="task", type="choice", default="x", choices=("x", "y")))


def gen(source: str, factors=F) -> GenerationProgram:
    return GenerationProgram(family="pick_place", source=source, factors=factors)


def kinds(errors) -> list[tuple[str, int | None]]:
    return [(e.kind, e.line) for e in errors]


def test_seeds_pass():
    for g, t in seed_library().values():
        assert check_program(g) == [] and check_program(t) == []


def test_syntax_error_has_line_and_column():
    (e,) = check_generation(gen("import math\n\ndef generate(rng, **f)\n    return 1\n"))
    assert (e.kind, e.line) == ("syntax", 3) and e.col
    assert str(e).startswith("[syntax] line 3, col")


@pytest.mark.parametrize("source, kind, line, message", [
    ("x = 1\n", "structure", None, "no module-level `def generate"),
    ("async def generate(rng, **f):\n    return 1\n", "structure", 1, "not async"),
    ("def generate(rng, **f):\n    x = 1\n", "structure", 1, "never returns a value"),
    ("def generate():\n    return 1\n", "signature", 1, "`rng` as its first parameter"),
    ("\n\ndef generate(rng, a, c):\n    return 1\n", "signature", 3, "parameter 'c' is no factor"),
    ("def generate(rng, a):\n    return 1\n", "signature", 1, "does not accept factors ['b']"),
    ("def generate(rng, a, /, b):\n    return 1\n", "signature", 1, "only `rng` may be positional-only"),
])
def test_structure_and_signature(source, kind, line, message):
    errors = check_generation(gen(source))
    assert (kind, line) in kinds(errors), errors
    assert any(message in e.message for e in errors), errors


def test_acceptable_signatures():
    for sig in ("rng, **factors", "rng, *, a, b='x'", "rng, a=0.5, b='x', extra=1", "rng, a, b, *rest"):
        assert check_generation(gen(f"def generate({sig}):\n    return 1\n")) == [], sig


def test_schema_errors_point_at_the_factor_entry():
    source = ('FAMILY = "pick_place"\nFACTORS = (\n'
              '    {"name": "a", "group": "spatial", "type": "float", "default": 3.0, "range": (0.0, 1.0)},\n'
              '    {"name": "n", "group": "task", "type": "int", "default": 0.5, "range": (0.0, 2.0)},\n'
              ')\n\n\ndef generate(rng, **factors):\n    return 1\n')
    bad = (FactorDef(name="a", group="spatial", type="float", default=3.0, range=(0, 1)),
           FactorDef(name="n", group="task", type="int", default=0.5, range=(0, 2)))
    errors = check_generation(gen(source, bad))
    assert ("schema", 3) in kinds(errors) and ("schema", 4) in kinds(errors)
    assert any("default 3.0 is outside (0.0, 1.0)" in e.message for e in errors)
    assert any("int factor needs an int default" in e.message for e in errors)


def test_factors_literal_must_agree_with_the_schema():
    base = GEN.model_dump(exclude={"id"})
    drifted = GenerationProgram.model_validate({**base, "factors": GEN.factors[:-1]})
    (e,) = check_generation(drifted)
    assert e.kind == "schema" and "disagrees" in e.message and "friction" in e.message
    assert e.line == GEN.source.splitlines().index("FACTORS = (") + 1
    wrong = GenerationProgram.model_validate({**GEN.model_dump(exclude={"id"}), "family": "put_inside"})
    assert any("FAMILY = 'pick_place'" in e.message for e in check_generation(wrong))


def _train(**subgoal_over) -> TrainingProgram:
    data = TRAIN.model_dump(exclude={"id"})
    data["subgoals"][1].update(subgoal_over)
    return TrainingProgram.model_validate(data)


def test_training_expression_errors_name_subgoal_and_column():
    errors = check_training(_train(done="grasped(object) and foo(object)", progress="gripper().x"))
    assert [(e.kind, e.where, e.col) for e in errors] == [
        ("expression", "subgoal 2 'grasp' .done", 21), ("expression", "subgoal 2 'grasp' .progress", 1)]
    assert "unknown function 'foo'" in errors[0].message
    with pytest.raises(ProgramCheckError, match="subgoal 2 'grasp' .done, col 21"):
        assert_valid(_train(done="grasped(object) and foo(object)"))


def test_unknown_name_suggests_a_role():
    (e,) = check_training(_train(done="grasped(objet)"))
    assert "unknown name 'objet'" in e.message and "did you mean 'object'" in e.message


def test_roles_and_entities_against_a_scene():
    scene = SceneSpec(family="pick_place", instruction="put the cube on the bowl", goal=(
        Predicate(fn="on", args=("cube", "bowl")),), objects=(
        ObjectSpec(name="cube", kind="box", category="cube", size=(0.02,) * 3, pos=(0, 0)),
        ObjectSpec(name="bowl", kind="box", category="bowl", size=(0.05,) * 3, pos=(0, 0.2))))
    assert check_training(TRAIN, scene) == []
    errors = check_training(_train(done="grasped('mug')"), scene)
    assert [(e.kind, e.where) for e in errors] == [("entity", "subgoal 2 'grasp' .done")]
    bad_ref = TrainingProgram.model_validate({**TRAIN.model_dump(exclude={"id"}),
                                              "roles": {"object": "goal[0].arg[0]", "target": "goal[3].fn"}})
    assert [e.kind for e in check_training(bad_ref)] == ["role"]
    roles = {"object": "goal[0].args[0]", "target": "goal[3].fn"}
    out_of_range = TrainingProgram.model_validate({**TRAIN.model_dump(exclude={"id"}), "roles": roles})
    assert [e.kind for e in check_training(out_of_range, scene)] == ["role"]
