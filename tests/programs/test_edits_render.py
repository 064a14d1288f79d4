"""Program identity, factor edits with lineage, and rendering to files (write → load round trip)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pydantic import ValidationError

from programs.checks import check_generation
from programs.edits import edit, edit_many
from programs.model import GenerationProgram, Subgoal, TrainingProgram, program_from_dict
from programs.render import load_program, render, source_offset, write_program
from programs.seeds import seed_library
from programs.source import schema_from_source, schema_literal, training_from_source

GEN, TRAIN = seed_library()["pick_place"]


def test_id_is_a_content_hash_and_fingerprint_ignores_lineage():
    again = GenerationProgram.model_validate(GEN.model_dump(exclude={"id"}))
    assert again.id == GEN.id and len(GEN.id) == 64
    base = GEN.model_dump(exclude={"id"})
    child = GenerationProgram.model_validate({**base, "round": 2, "parent_id": GEN.id})
    assert child.id != GEN.id and child.fingerprint == GEN.fingerprint
    assert GEN.file_stem == f"gen_seed_{GEN.id[:8]}" and TRAIN.file_stem.startswith("train_seed_")


def test_stored_id_must_match_content():
    data = json.loads(GEN.model_dump_json())
    assert program_from_dict(data) == GEN
    data["source"] += "\n# changed\n"
    with pytest.raises(ValueError, match="does not match its content"):
        program_from_dict(data)


def test_models_validate():
    with pytest.raises(ValidationError, match="duplicate factor names"):
        GenerationProgram(family="x", source="s", factors=(GEN.factors[0], GEN.factors[0]))
    with pytest.raises(ValidationError, match="duplicate subgoal names"):
        TrainingProgram(family="x", subgoals=(Subgoal(name="a", done="True"), Subgoal(name="a", done="True")))
    with pytest.raises(ValidationError):
        TrainingProgram(family="x", subgoals=())
    with pytest.raises(ValidationError):
        GenerationProgram(family="x", source="s", mode_id="Bad Mode")


def test_pin_edit_makes_a_child_with_a_synced_source():
    child = edit(GEN, "obj_yaw", 1.2, diagnosis="grasp fails at large yaw", mode_id="yaw_grasp", round_no=3)
    f = child.factor("obj_yaw")
    assert (f.default, f.range) == (1.2, (1.2, 1.2)) and f.ood_range == (-1.5, 1.5)
    assert child.parent_id == GEN.id and child.id != GEN.id
    assert (child.mode_id, child.round, child.diagnosis) == ("yaw_grasp", 3, "grasp fails at large yaw")
    assert schema_from_source(child.source) == child.factors  # the FACTORS literal follows the edit
    assert check_generation(child) == []
    others = [(a, b) for a, b in zip(GEN.factors, child.factors, strict=True) if a.name != "obj_yaw"]
    assert all(a == b for a, b in others)


def test_range_edit_clips_default_and_widens_ood():
    child = edit(GEN, "mass", (0.3, 0.6))
    f = child.factor("mass")
    assert f.range == (0.3, 0.6) and f.default == 0.3 and f.ood_range == (0.05, 0.6)
    rng = np.random.default_rng(0)
    assert all(0.3 <= child.sample_factors(rng)["mass"] <= 0.6 for _ in range(50))


def test_choice_edits():
    pinned = edit(GEN, "shape", "block")
    f = pinned.factor("shape")
    assert (f.default, f.choices, f.ood_choices) == ("block", ("block",), ("tall_cylinder",))
    widened = edit(GEN, "color", ["red", "yellow"])
    assert widened.factor("color").choices == ("red", "yellow") and widened.factor("color").default == "red"


def test_targeted_and_control_edits_share_a_parent():
    targeted = edit(GEN, "obj_yaw", (1.0, 1.5), diagnosis="yaw")
    control = edit(GEN, "mass", (0.15, 0.2), diagnosis="yaw (control)")
    assert targeted.parent_id == control.parent_id == GEN.id and targeted.id != control.id
    grandchild = edit(targeted, "size", 0.018)
    assert grandchild.parent_id == targeted.id
    both = edit_many(GEN, {"obj_yaw": 1.0, "size": 0.018})
    assert both.parent_id == GEN.id and both.factor("size").default == 0.018


def test_bad_edits_are_refused():
    with pytest.raises(KeyError, match="Did you mean 'obj_yaw'"):
        edit(GEN, "obj_yw", 1.0)
    with pytest.raises(ValueError, match="lo > hi"):
        edit(GEN, "mass", (0.5, 0.1))
    with pytest.raises(ValueError, match="a range is"):
        edit(GEN, "mass", (0.1, 0.2, 0.3))


def _programs():
    out = []
    for gen, train in seed_library().values():
        out += [gen, train]
    out.append(edit(GEN, "obj_yaw", (1.0, 1.5), diagnosis="a long diagnosis " * 12, mode_id="m1", round_no=3))
    out.append(TrainingProgram.model_validate({**TRAIN.model_dump(exclude={"id"}), "parent_id": TRAIN.id,
                                               "diagnosis": "line one\nline 'two' \"quoted\"", "beta": 0.5}))
    return out


@pytest.mark.parametrize("program", _programs(), ids=lambda p: f"{p.family}-{p.file_stem}")
def test_write_then_load_gives_the_same_program(program, tmp_path):
    path = write_program(program, tmp_path / "round_03")
    assert path.name == f"{program.file_stem}.py" and path.with_suffix(".json").exists()
    assert load_program(path) == program and load_program(path.with_suffix(".json")) == program
    text = path.read_text()
    for needle in (program.mode_id, program.family, program.id, f"round       {program.round}"):
        assert needle in text
    compile(text, str(path), "exec")  # the rendered file is valid Python


def test_rendered_training_file_reads_back_without_its_sidecar(tmp_path):
    path = write_program(TRAIN, tmp_path)
    assert training_from_source(path.read_text()) == TRAIN
    path.with_suffix(".json").unlink()
    assert load_program(path) == TRAIN


def test_hand_edited_file_is_reported(tmp_path):
    path = write_program(GEN, tmp_path)
    path.write_text(path.read_text().replace("put the {obj} on the {tgt}", "put it there"))
    with pytest.raises(ValueError, match="edited by hand"):
        load_program(path)


def test_header_shows_lineage_and_factor_table():
    child = edit(GEN, "obj_yaw", (1.0, 1.5), diagnosis="grasp fails at large yaw", mode_id="yaw", round_no=3)
    text = render(child)
    assert f"parent      {GEN.id[:8]} ({GEN.id})" in text
    assert "diagnosis   grasp fails at large yaw" in text
    assert any(line.split()[1:5] == ["obj_yaw", "spatial", "float", "1.0"] for line in text.splitlines()
               if line.startswith("#   obj_yaw"))
    assert text.endswith(child.source)
    offset = source_offset(child)
    assert text.splitlines()[offset] == child.source.splitlines()[0]  # maps source lines to file lines


def test_factors_literal_round_trips_and_fits_the_line_length():
    from sim.families.base import FactorDef

    long_doc = FactorDef(name="a", group="task", type="float", default=0.0, range=(0, 1), doc="word " * 70)
    for factors in (*(g.factors for g, _ in seed_library().values()), (long_doc,)):
        text = schema_literal(factors)
        assert schema_from_source(text) == factors
        assert max(len(line) for line in text.splitlines()) <= 110
