"""Worked examples for the LLM generation writer from procedural memory (`agents.writers.examples`)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from agents.config import RunConfig, WriterConfig
from agents.graph.nodes.arms import writer_examples
from agents.writers import write_generation_program
from memory.types import DifficultyMode, ProgramEntry
from programs.edits import edit_many
from programs.seeds import seed_library
from tests.fakes.agents_fakes import queued_llm

LIB = seed_library()
PICK, STACK = LIB["pick_place"][0], LIB["stack_insert"][0]


def _mode(mid: str, factor: str, family: str) -> DifficultyMode:
    return DifficultyMode(id=mid, description=f"{factor} low breaks grasp", factor_group="spatial",
                          factor=factor, phase="grasp", side="low", families=(family,))


class StoredPrograms:
    """Procedural memory as `procedural_examples` reads it: modes and their stored program entries."""

    def __init__(self, stored: list[tuple[DifficultyMode, ProgramEntry]]) -> None:
        self.stored = stored

    def modes(self) -> list[DifficultyMode]:
        return [m for m, _ in self.stored]

    def programs_for(self, mode_id: str) -> list[ProgramEntry]:
        return [e for m, e in self.stored if m.id == mode_id]


def _stored(mode: DifficultyMode, family: str, round_no: int) -> tuple[DifficultyMode, ProgramEntry]:
    path = f"programs/round_{round_no:02d}/gen_{mode.id}.py"
    return mode, ProgramEntry(mode_id=mode.id, family=family, generation_program_id="g",
                              training_program_id="t", generation_path=path, round=round_no)


PROGRAMS = {
    "programs/round_01/gen_piece_x_grasp.py": edit_many(STACK, {"piece_x": (-0.02, 0.01)},
                                                        mode_id="piece_x_grasp"),
    "programs/round_02/gen_obj_yaw_grasp.py": edit_many(PICK, {"obj_yaw": (0.4, 0.6), "shape": ("cube",)},
                                                        mode_id="obj_yaw_grasp"),
    "programs/round_02/gen_obj_x_grasp.py": edit_many(PICK, {"obj_x": (-0.04, -0.01)}, mode_id="obj_x_grasp"),
}
MEMORY = StoredPrograms([_stored(_mode("piece_x_grasp", "piece_x", "stack_insert"), "stack_insert", 1),
                         _stored(_mode("obj_yaw_grasp", "obj_yaw", "pick_place"), "pick_place", 2),
                         _stored(_mode("obj_x_grasp", "obj_x", "pick_place"), "pick_place", 2)])


def test_examples_are_other_modes_stored_edits_same_factor_role_first() -> None:
    from agents.writers.examples import procedural_examples

    writing = _mode("obj_x_grasp", "obj_x", "pick_place")
    lines = procedural_examples(MEMORY, writing, PROGRAMS.__getitem__, k=5)
    assert len(lines) == 2 and not any("mode obj_x_grasp " in x for x in lines)  # never its own example
    assert lines[0].startswith("stack_insert mode piece_x_grasp")  # the factor that plays obj_x's role
    edits = json.loads(lines[0].split("edits ", 1)[1])
    assert edits == [{"factor": "piece_x", "low": -0.02, "high": 0.01}]
    assert json.loads(lines[1].split("edits ", 1)[1]) == [{"factor": "obj_yaw", "low": 0.4, "high": 0.6},
                                                          {"factor": "shape", "choices": ["cube"]}]
    assert procedural_examples(MEMORY, writing, PROGRAMS.__getitem__, k=1) == lines[:1]
    assert procedural_examples(MEMORY, writing, PROGRAMS.__getitem__, k=0) == []


def test_the_llm_writer_is_shown_the_examples_and_the_rules_writer_ignores_them() -> None:
    llm, completer = queued_llm({"rationale": "far left", "edits": [{"factor": "obj_x", "low": -0.1,
                                                                     "high": -0.06}]})
    example = 'stack_insert mode piece_x_grasp (piece_x low breaks grasp): edits [{"factor": "piece_x"}]'
    mode = _mode("obj_x_grasp", "obj_x", "pick_place")
    p = write_generation_program(mode, PICK, llm, examples=[example], config=WriterConfig(allow_ood=True))
    assert p.factor("obj_x").range == (-0.1, -0.06)
    user = completer.requests[0].user
    assert "kept after their diagnoses were validated" in user and f"- {example}" in user
    llm2, completer2 = queued_llm({"rationale": "x", "edits": [{"factor": "obj_x", "low": -0.1,
                                                                "high": -0.06}]})
    write_generation_program(mode, PICK, llm2, config=WriterConfig(allow_ood=True))
    assert "kept after their diagnoses" not in completer2.requests[0].user  # none given: no section
    rules = write_generation_program(mode, PICK, None, examples=[example])
    assert rules.factor("obj_x").range != PICK.factor("obj_x").range


def test_the_loop_asks_memory_only_when_configured_and_an_llm_writes(tmp_path) -> None:
    from programs.render import write_program

    stored = []  # the run's programs on disk, as `remember` writes them, and memory's entries for them
    for (mode, entry), rel in zip(MEMORY.stored, PROGRAMS, strict=True):
        py = write_program(PROGRAMS[rel], tmp_path / entry.generation_path.rsplit("/", 1)[0])
        stored.append((mode, entry.model_copy(update={"generation_path": str(py.relative_to(tmp_path))})))
    mode = _mode("obj_x_grasp", "obj_x", "pick_place")
    run = SimpleNamespace(abs=lambda p: tmp_path / p)

    def deps(examples: int, llm: object | None, memory: object | None) -> SimpleNamespace:
        cfg = RunConfig(writer=WriterConfig(examples=examples))
        return SimpleNamespace(config=cfg, llm=llm, memory=memory, run=run)

    on_disk = StoredPrograms(stored)
    assert writer_examples(deps(0, object(), on_disk), mode) == []  # the default: none
    assert writer_examples(deps(2, None, on_disk), mode) == []  # the rules writer reads no examples
    assert writer_examples(deps(2, object(), None), mode) == []  # no memory (critic without memory)
    got = writer_examples(deps(2, object(), on_disk), mode)
    assert [x.split(" (")[0] for x in got] == ["stack_insert mode piece_x_grasp",
                                               "pick_place mode obj_yaw_grasp"]
