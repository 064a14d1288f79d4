"""What the LLM training writer may answer: the schemas of its two forms (`SubgoalsOut`, the whole list;
`StageOut`, one subgoal inserted into the family's program) and, for the one-stage form, the grammar of its
expressions (`stage_patterns`) that the local server decodes under. `agents.writers.training` asks with
them and turns the answers into checked programs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator

from programs.model import NAME_PATTERN, ROLE_REF, TrainingProgram


def goal_roles(tp: TrainingProgram) -> dict[str, str]:
    """Which role is bound to what: {"subject": role of goal[0].args[0], "target": of args[1], "test":
    of goal[0].fn, "level": of args[1] when the program tests a joint (opened/closed)}."""
    out: dict[str, str] = {}
    for role, ref in tp.roles.items():
        m = ROLE_REF.match(ref)
        if not m or m.group(1) != "0":
            continue
        if m.group(2) == "fn":
            out["test"] = role
        elif m.group(3) == "0":
            out["subject"] = role
        elif m.group(3) == "1":
            out["target"] = role
    if "target" in out and tests_joint(tp):
        out["level"] = out.pop("target")  # opened(joint, level): the second argument is a level
    return out


def tests_joint(tp: TrainingProgram) -> bool:
    """Whether `tp` calls a function of an articulated joint (`opened`, `open_frac`, ...)."""
    from programs.vocab import JOINT_FUNCTIONS

    text = " ".join(g.done + " " + g.progress for g in tp.subgoals)
    return any(f"{fn}(" in text for fn in JOINT_FUNCTIONS)


MAX_SUBGOALS = 7  # `writer_training.j2` asks for 3 to 7 (a test holds the two together)


NAME_CHARS, EXPRESSION_CHARS = 32, 200  # a stage's name and each expression, at most (grammar-bounded)


class SubgoalOut(BaseModel):
    """One stage proposed by the LLM writer. Every field is bounded in length, so a model that loops inside
    an expression runs into the grammar's bound, not the token budget."""

    name: str = Field(pattern=NAME_PATTERN, max_length=NAME_CHARS, description="short snake_case name")
    done: str = Field(max_length=EXPRESSION_CHARS,
                      description="boolean expression: the stage is complete (stays true later on)")
    progress: str = Field(max_length=EXPRESSION_CHARS,
                          description="number expression in [0, 1]: progress within the stage")


class SubgoalsOut(BaseModel):
    """The LLM writer's training program: ordered stages; the last is the task's success test. At most
    `MAX_SUBGOALS`, the number the prompt asks for: with 8 allowed (one more than asked) the 1.5B model
    repeated its five stages towards the schema's bound and ran out of its 800-token budget (FINDINGS #15).
    Seven stages of ~110 tokens fit the budget (`WriterConfig.max_tokens_subgoals`)."""

    subgoals: list[SubgoalOut] = Field(min_length=2, max_length=MAX_SUBGOALS)

    @field_validator("subgoals")
    @classmethod
    def _names_unique(cls, subgoals: list[SubgoalOut]) -> list[SubgoalOut]:
        names = [s.name for s in subgoals]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:  # a grammar cannot forbid it; the error goes back to the model as feedback
            raise ValueError(f"each subgoal needs its own name; repeated: {', '.join(repeated)}")
        return subgoals


class StageOut(BaseModel):
    """The LLM writer's training program in the "stage" form (`WriterConfig.training_form`): one subgoal that
    stages the diagnosed phase more finely, inserted into the family's program before the stage `before`
    (an enum of its stages, `stage_schema`). Its `done` becomes `(<before's done>) or (<condition>)`, so it
    stays true once the next stage is done (the seeds' cumulative style), and the program's other stages
    are the seed's, whose potential already agrees with the demonstrations: what the model writes is one
    condition and one progress, ~50 tokens, where a whole list ran ~300 and its stages were the ones it got
    wrong (FINDINGS #15, #30)."""

    name: str = Field(pattern=NAME_PATTERN, max_length=NAME_CHARS, description="short snake_case name")
    before: str = Field(description="the stage of the program the new subgoal comes just before")
    condition: str = Field(max_length=EXPRESSION_CHARS,
                           description="boolean expression: the new subgoal is reached")
    progress: str = Field(max_length=EXPRESSION_CHARS,
                          description="number expression in [0, 1]: progress towards it")


CLAUSES = 3  # a new subgoal's condition: at most this many clauses joined by `and`
NUMBER = "[0-9]{1,2}([.][0-9]{1,3})?"  # `[.]`: llama.cpp's grammar has no `\.` escape
MATH = ("clip", "sqrt", "exp", "tanh", "abs", "min", "max")  # functions of numbers, not of the scene


def stage_functions(base: TrainingProgram) -> list[str]:
    """The functions a new stage's expressions may call in `base` (`stage_patterns`' shapes): the scene's
    predicates and read-outs, a joint's only where the program tests one, and `clip`. The prompt lists
    these alone: the rest of the vocabulary, none of it usable, was 183 of the contract case's 1,529
    prompt tokens."""
    from programs.vocab import FUNCTIONS, JOINT_FUNCTIONS

    joints = tests_joint(base)
    return [fn.name for fn in FUNCTIONS.values()
            if fn.name == "clip" or (fn.name not in MATH and not fn.variadic
                                     and (joints or fn.name not in JOINT_FUNCTIONS))]


def stage_patterns(base: TrainingProgram) -> tuple[str, str]:
    """Regular expressions of a new subgoal's (condition, progress) over `base`, in the shapes the family's
    declared emphases take (`EMPHASIS`): the condition 1 to `CLAUSES` clauses joined by `and`, each a
    predicate of the program's entities (`grasped(object)`, `not on(object, target)`) or a read-out compared
    with a number (`dist('ee', object) < 0.1`, `bottom(object) > top(target) + 0.02`); the progress
    `[1 - ]clip(<read-out>[ - <number>] / <number>, 0, 1)`; where the goal's test is a role, either may be
    `A if test == 'opened' else B`. Typed by the functions' signatures: a predicate or read-out takes the
    roles bound to the goal's arguments (and 'ee'), a level role stands for a number.

    They go in the answer's JSON schema only (no validation by them: an endpoint's richer expression is
    judged by `check_training`, whose messages name the problem), so the local server's grammar cannot
    write a name the program lacks or an expression of the wrong type: the 1.5B wrote the scene's factor
    names (`obj_yaw`, `piece_x`) into 7 of 8 expressions, and tuples and sets (FINDINGS #44). What the
    shapes leave out (arithmetic of read-outs and of levels) the seeds' stages keep."""
    from programs.vocab import FUNCTIONS

    roles = goal_roles(base)
    level = roles.get("level")
    entities = [r for r, ref in base.roles.items()
                if (m := ROLE_REF.match(ref)) and m.group(2) != "fn" and r != level]
    ent = "(" + "|".join([*entities, "'ee'"]) + ")"
    num = f"({NUMBER}|{level})" if level else NUMBER

    usable = set(stage_functions(base)) - {"clip"}

    def calls(returns: str) -> str:
        out = []
        for fn in FUNCTIONS.values():
            if fn.returns != returns or fn.name not in usable:
                continue
            kinds = [ent if t == "str" else num for t in fn.params]
            need = ", ".join(kinds[:fn.required])
            more = ", ".join(kinds)
            args = need if more == need else f"{need}(, {', '.join(kinds[fn.required:])})?"
            out.append(f"{fn.name}\\({args}\\)")
        return "(" + "|".join(out) + ")"

    read = calls("num")
    term = f"{read}( [-+] ({read}|{NUMBER}))?"
    clause = f"((not )?{calls('bool')}|{term} (<|>|<=|>=) ({term}|{num}))"
    condition = f"{clause}( and {clause}){{0,{CLAUSES - 1}}}"
    progress = f"(1 - )?clip\\(({read}|\\({read} - {NUMBER}\\)) / {NUMBER}, 0, 1\\)"
    if test := roles.get("test"):  # either form on the goal's test: `A if test == 'opened' else B`
        tests = "|".join(fn.name for fn in FUNCTIONS.values() if fn.returns == "bool")
        condition, progress = (f"{e}( if {test} == '({tests})' else {e})?" for e in (condition, progress))
    return f"^{condition}$", f"^{progress}$"


def stage_schema(base: TrainingProgram, before: str | None = None) -> type[BaseModel]:
    """`StageOut` for `base`: `before` an enum of its stages (the last, the task's test, included), or only
    `before` when the failing phase fixes it (`agents.writers.training.phase_stage`), the expressions
    patterned by `stage_patterns` in the JSON schema (the grammar of the local server)."""
    names = tuple(g.name for g in base.subgoals)
    if before is not None and before not in names:
        raise ValueError(f"{before!r} is not a stage of the program ({', '.join(names)})")
    before_t: Any = Literal[(before,) if before is not None else names]
    patterns = dict(zip(("condition", "progress"), stage_patterns(base), strict=True))

    def patterned(name: str) -> tuple[Any, Any]:
        field = StageOut.model_fields[name]
        return str, Field(max_length=EXPRESSION_CHARS, description=field.description,
                          json_schema_extra={"pattern": patterns[name]})

    return create_model("StageOut", __base__=StageOut, __doc__=StageOut.__doc__,
                        before=(before_t, StageOut.model_fields["before"]),
                        condition=patterned("condition"), progress=patterned("progress"))
