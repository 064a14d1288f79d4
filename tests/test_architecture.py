"""The import arrows of docs/architecture.md hold: every `import` between our packages (module level or
inside a function) points the way the map says."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {
    "common": set(),
    "sim": {"common"},
    "programs": {"sim", "common"},
    "sandbox": {"sim", "common"},
    "coda_policy": {"programs", "sim", "common"},
    "memory": {"sim", "common"},
    "agents": {"memory", "programs", "sandbox", "coda_policy", "sim", "common"},
    "experiments": {"agents", "memory", "programs", "sandbox", "coda_policy", "sim", "common"},
}


def imports_of(package: str) -> set[tuple[str, str]]:
    """(file, imported package) for every import of another of our packages inside `package`."""
    out = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            for name in names:
                top = name.split(".")[0]
                if top in ALLOWED and top != package:
                    out.add((str(path.relative_to(ROOT)), top))
    return out


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_the_documented_way(package):
    wrong = sorted((f, top) for f, top in imports_of(package) if top not in ALLOWED[package])
    assert not wrong, f"{package} may import only {sorted(ALLOWED[package])}; found {wrong}"


def test_nothing_imports_experiments():
    users = [(f, top) for p in ALLOWED if p != "experiments"
             for f, top in imports_of(p) if top == "experiments"]
    assert not users, users


def test_readme_needs_nothing_outside_the_repository():
    text = (ROOT / "README.md").read_text()
    assert "../shared" not in text, "the README points outside the repository (a clone has no ../shared)"
