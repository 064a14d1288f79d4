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
    # apart from the product: studies answer FINDINGS entries, bench measures; both may use the harness
    "studies": {"experiments", "agents", "memory", "programs", "sandbox", "coda_policy", "sim", "common"},
    "bench": {"experiments", "agents", "memory", "programs", "sandbox", "coda_policy", "sim", "common"},
}
# what a run needs; nothing in it may import the lab (experiments, studies, bench)
PRODUCT = ("common", "sim", "programs", "sandbox", "coda_policy", "memory", "agents")


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
    users = [(f, top) for p in ALLOWED if p not in ("experiments", "studies", "bench")
             for f, top in imports_of(p) if top == "experiments"]
    assert not users, users


def test_the_product_imports_no_experiment_study_or_benchmark():
    lab = ("experiments", "studies", "bench")
    users = [(f, top) for p in PRODUCT for f, top in imports_of(p) if top in lab]
    assert not users, users
    assert set(ALLOWED) == {*PRODUCT, "experiments", "studies", "bench"}  # every package is one or the other


def test_readme_needs_nothing_outside_the_repository():
    text = (ROOT / "README.md").read_text()
    assert "../shared" not in text, "the README points outside the repository (a clone has no ../shared)"


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    p = ROOT / name.replace(".", "/")
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def module_graph(package: str) -> dict[str, set[str]]:
    """module → the modules of the same package it imports, module level or inside a function (a type-only
    import under `if TYPE_CHECKING:` too), relative imports resolved; `from a import b` is an import of the
    module `a.b` when there is one, else of `a`. A package's `__init__` is not an implicit edge: importing
    `sim.a.b` runs `sim/a/__init__.py` first, which by itself closes no cycle."""
    graph: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        me = _module(path)
        here = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
        deps = graph.setdefault(me, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here[: len(here) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base for a in node.names]
            else:
                continue
            for t in targets:
                while t and not _is_module(t):
                    t = t.rpartition(".")[0]
                if t.split(".")[0] == package and t != me:
                    deps.add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_sees_function_level_and_relative_imports():
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}
    assert cycles(graph) == [["p.a", "p.b", "p.c"]]
    sim = module_graph("sim")
    assert "sim.render" in sim["sim.mujoco_episode"] and "sim.libero.episode" in sim["sim.worlds"]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_import_cycle_inside_a_package(package):
    found = cycles(module_graph(package))
    assert not found, f"import cycles inside {package}: {found}"
