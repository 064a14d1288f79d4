"""Memory records: content ids survive a JSON round trip and catch edits; edit sides."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memory.types import Diagnosis, ProgramEntry, edit_side, slug
from tests.memory.helpers import diag


def test_diagnosis_id_survives_json_round_trip() -> None:
    d = diag(edit={"obj_yaw": (1.0, 1.5), "color": ("red", "blue"), "mass": 1, "paraphrase": True})
    back = Diagnosis.model_validate_json(d.model_dump_json())
    assert back == d and back.id == d.id and back.edit["obj_yaw"] == (1.0, 1.5)


def test_stored_id_must_match_content() -> None:
    data = diag().model_dump(mode="json")
    with pytest.raises(ValidationError, match="does not match"):
        Diagnosis.model_validate({**data, "explanation": "changed after the fact"})


def test_phase_and_factor_are_normalised() -> None:
    assert diag(phase=" Grasp ").phase == "grasp"
    assert diag(phase="Grasp").id == diag(phase="grasp").id


def test_program_entry_id_ignores_paths_and_round() -> None:
    a = ProgramEntry(mode_id="m_x", family="pick_place", generation_program_id="g", training_program_id="t")
    b = a.model_copy(update={"generation_path": "programs/round_02/gen.py", "round": 2})
    assert ProgramEntry.model_validate(b.model_dump()).id == a.id


def test_edit_side() -> None:
    assert edit_side((1.0, 1.5), -0.6, 0.6) == "high"
    assert edit_side(-1.2, -0.6, 0.6) == "low"
    assert edit_side("cylinder") == "values"
    assert edit_side(0.3) == "values"  # no range known
    assert edit_side(("red", "blue"), 0, 1) == "values"


def test_slug_makes_file_name_fragments() -> None:
    assert slug("Obj Yaw/ grasp!") == "obj_yaw_grasp"
