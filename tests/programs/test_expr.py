"""The expression language: what it accepts, what it rejects (with the column), and that compiled
closures compute what Python would."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from programs.expr import ExprError, Memo, compile_expr, parse
from programs.vocab import FUNCTIONS
from sim.predicates import PREDICATES
from tests.programs.helpers import synthetic_state

STATE = synthetic_state(3, np.array([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6], [0.0, 0.0, 0.0]]), gripper=0.05)


def run(text: str, roles: dict | None = None, expect: str = "any"):
    return compile_expr(parse(text, expect=expect, roles=roles or {}), roles)(STATE)


@pytest.mark.parametrize("text, want", [
    ("1 + 2 * 3 - 4 / 2", 5.0),
    ("2 ** 3", 8.0),
    ("-x('o0') + +y('o1')", -0.6),
    ("1 < 2 < 3", True),
    ("1 < 3 < 2", False),
    ("'a' == 'a' and not 'a' != 'a'", True),
    ("clip(5, 0, 1) + min(3, 1, 2) + max(-1, -2) + abs(-2)", 3.0),
    ("sqrt(-1) + sqrt(4) + exp(0) + tanh(0)", 3.0),
    ("z('o1') if x('o0') > 0 else 7", 0.6),
    ("gripper()", 0.05),
    ("dist('o0', 'o2')", math.sqrt(0.14)),
    ("xy_dist('o0', 'o1')", math.hypot(0.3, 0.7)),
    ("pi > 3.14", True),
    ("True or 1 / 0 > 0", True),  # short-circuit: the right side never runs
])
def test_evaluates_like_python(text, want):
    assert run(text) == pytest.approx(want)


def test_roles_bind_to_constants_and_division_by_zero_is_ieee():
    assert run("x(thing) * k", {"thing": "o1", "k": 2.0}) == pytest.approx(0.8)
    assert run("1 / 0") == math.inf and run("-1 / 0") == -math.inf and math.isnan(run("0 / 0"))
    assert run("10 ** 400") == math.inf  # overflow saturates instead of raising


def test_predicates_are_the_sim_predicates():
    assert set(PREDICATES) <= set(FUNCTIONS)
    for name, fn in PREDICATES.items():
        assert FUNCTIONS[name].impl is fn


@pytest.mark.parametrize("text, message, col", [
    ("foo(1)", "unknown function 'foo'", 1),
    ("1 + clipp(1, 0, 1)", "did you mean 'clip'", 5),
    ("s.gripper", "attribute access", 1),
    ("__import__('os')", "unknown function '__import__'", 1),
    ("x('o0').real", "attribute access", 1),
    ("(lambda: 1)()", "only plain function names", 1),
    ("1 + (lambda s: 1)", "lambdas", 6),
    ("[a for a in 'xy']", "comprehensions", 1),
    ("sum(a for a in 'xy')", "unknown function 'sum'", 1),
    ("max(1, *[1, 2])", "starred", 8),
    ("clip(1, lo=0, hi=1)", "keyword arguments", 12),
    ("STATE", "unknown name 'STATE'", 1),
    ("__builtins__", "not allowed", 1),
    ("dist('ee')", "takes 2 argument(s), got 1", 1),
    ("dist('ee', 3)", "argument 2 of dist() must be a str", 12),
    ("grasped('a') + 'b'", "arithmetic operand must be a num", 16),
    ("'a' < 'b'", "only be compared with ==", 1),
    ("not 3", "operand of `not` must be a bool", 5),
    ("(y := 3)", "assignment expressions", 2),
    ("f'{1}'", "f-strings", 1),
    ("x('o0')[0]", "subscripts", 1),
    ("1 if 2 else 3", "condition of `if` must be a bool", 6),
    ("1 & 2", "not allowed", 1),
    ("clip", "is a function: call it", 1),
])
def test_rejects_with_column(text, message, col):
    with pytest.raises(ExprError, match=re.escape(message)) as e:
        parse(text, roles=(), where="subgoal 1 'x' .done")
    assert e.value.col == col
    assert str(e.value).startswith(f"subgoal 1 'x' .done, col {col}: ")


@pytest.mark.parametrize("text", ["import os", "x = 1", "def f(): pass", "1 +", "lambda: (", ""])
def test_statements_and_broken_syntax_are_syntax_errors(text):
    with pytest.raises(ExprError, match="syntax error"):
        parse(text)


def test_done_must_be_boolean_and_progress_numeric():
    with pytest.raises(ExprError, match="must be true/false"):
        parse("dist('ee', 'o0')", expect="bool")
    with pytest.raises(ExprError, match="must be a number"):
        parse("'o0'", expect="num")
    parse("grasped('o0')", expect="num")  # a bool is a number (0/1)
    parse("r", expect="bool", roles={"r"})  # a role's type is known only once bound


def test_size_limits():
    with pytest.raises(ExprError, match="longer than"):
        parse("1 + " * 600 + "1")
    with pytest.raises(ExprError, match="more than"):
        parse("+".join(["x('o0')"] * 150))


def test_entities_are_collected_for_scene_checks():
    c = parse("on(a, 'plate') or dist('ee', b) < 0.1 or lifted('cube', 0.05)", roles={"a", "b"})
    assert c.entities == {"plate", "ee", "cube"} and c.entity_roles == {"a", "b"} and c.roles == {"a", "b"}


def test_unbound_role_is_an_error():
    with pytest.raises(ExprError, match="no binding"):
        compile_expr(parse("x(a) > 0", roles={"a"}), {})


def test_memo_shares_calls_within_a_state_and_clears_between():
    memo = Memo()
    f = compile_expr(parse("x('o0') + x('o0')"), {}, memo)
    g = compile_expr(parse("x('o0') * 10"), {}, memo)
    assert len(memo.slots) == 1
    assert f(STATE) == pytest.approx(0.2) and g(STATE) == pytest.approx(1.0)
    other = synthetic_state(3, np.ones((3, 3)))
    assert f(other) == pytest.approx(0.2)  # stale until cleared: the owner clears per state
    memo.clear()
    assert f(other) == pytest.approx(2.0)


def test_an_if_the_bindings_decide_builds_and_names_only_the_branch_taken():
    """One program for goals of two kinds (libero_goal: a drawer's `opened(joint, level)`, an object's
    `on(a, b)`): the branch a scene's goal rules out is neither built (a number divided as a level, or
    passed as an entity) nor checked for its entities."""
    from programs.expr import live

    text = "open_frac(subject) > target / 3 if test == 'opened' else xy_dist(subject, target) < 0.05"
    c = parse(text, expect="bool", roles=("subject", "target", "test"))
    assert c.entity_roles == {"subject", "target"}
    drawer = {"subject": "cab/joint", "target": 0.9, "test": "opened"}
    assert live(c, drawer).entity_roles == {"subject"}
    objects = {"subject": "bowl", "target": "plate", "test": "on"}
    assert live(c, objects).entity_roles == {"subject", "target"}
    compile_expr(c, objects)  # builds: 'plate' / 3 is in the branch not taken
    with pytest.raises(KeyError):  # built: it reads the drawer's joint, which this state has not
        compile_expr(c, drawer)(synthetic_state(1, np.zeros((1, 3))))
    assert compile_expr(parse("1 if 'a' == 'a' else 2"), {})(None) == 1
