"""The static policy, the attribute-guard rewrite, result types and presets (no worker processes)."""

from __future__ import annotations

import ast

import pytest

from common.registry import UnknownNameError
from sandbox import SandboxLimits, SandboxResult, check_source, find_violations, get_preset
from sandbox.policy import GUARD_NAME, attr_allowed, guard_tree
from tests.sandbox.programs import OK_PROGRAM


def test_normal_programs_pass_the_check() -> None:
    assert check_source(OK_PROGRAM) is None
    extra = ("from __future__ import annotations\nfrom typing import Any\nimport numpy.random\n"
             "from sim import SceneSpec\nimport itertools, random\n")
    assert check_source(extra + OK_PROGRAM) is None
    with_class = OK_PROGRAM + "\n\nclass Box:\n    def __init__(self, s):\n        super().__init__()\n" \
        "        self.s = s\n\n    def __repr__(self):\n        return type(self).__name__\n"
    assert check_source(with_class) is None


def test_every_violation_is_listed_with_its_line() -> None:
    source = "import os\n\ndef generate(rng):\n    x = ().__class__\n    return eval('1')\n"
    _, found = find_violations(source)
    assert [(v.kind, v.line) for v in found] == [("rejected_import", 1), ("rejected_code", 4),
                                                 ("rejected_code", 5)]
    error = check_source(source)
    assert error is not None and error.kind == "rejected_import" and error.line == 1
    assert "line 4: access to attribute '__class__'" in error.traceback
    assert "    x = ().__class__" in error.traceback


def test_syntax_errors_point_at_the_line() -> None:
    error = check_source("def generate(rng):\n    return (1,\n\nx = 2 +\n")
    assert error is not None and error.kind == "syntax" and error.line is not None


@pytest.mark.parametrize("name, ok", [("uniform", True), ("__init__", True), ("__name__", True),
                                      ("__class__", False), ("_private", False), ("gi_frame", False),
                                      ("format", False), ("ctypeslib", False)])
def test_attr_allowed(name: str, ok: bool) -> None:
    assert attr_allowed(name) is ok


def test_guard_rewrites_attribute_reads_only_and_keeps_lines() -> None:
    tree = guard_tree(ast.parse("a = np.random.uniform\nobj.x = 1\ndel obj.y\n"))
    first = tree.body[0].value
    assert isinstance(first, ast.Call) and first.func.id == GUARD_NAME and first.args[1].value == "uniform"
    assert first.lineno == 1
    assert isinstance(tree.body[1].targets[0], ast.Attribute)  # stores stay plain
    compile(tree, "<program>", "exec")


def test_result_exit_codes() -> None:
    assert SandboxResult().exit_code() == 0
    assert SandboxResult.failure("runtime", "boom").exit_code() == 1
    for kind in ("syntax", "rejected_import", "rejected_code"):
        result = SandboxResult.failure(kind, "no")
        assert result.rejected and result.exit_code() == 2
    assert str(SandboxResult.failure("memory", "big", line=3).error) == "[memory] (line 3) big"


def test_presets_and_limits_validate() -> None:
    assert get_preset("smoke").workers == 1
    with pytest.raises(UnknownNameError, match="did you mean|Did you mean"):
        get_preset("smok")
    with pytest.raises(ValueError):
        SandboxLimits(cpu_s=0)
