"""`pip install -e .` gives a working `coda`: pyproject.toml declares, as ranges, every third-party package
the product packages import, and the tested pins of requirements*.txt lie inside those ranges."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("common", "sim", "programs", "sandbox", "coda_policy", "memory", "agents", "experiments")
# imported only where another environment provides them: lerobot's PI05 backend (.venv-pi05, its own
# requirements-pi05.txt), and threadpoolctl, used when present and skipped otherwise (sim.pool's workers)
ELSEWHERE = {"lerobot", "transformers", "triton", "threadpoolctl"}
# a module whose distribution is named otherwise and may not be installed here (the `llm` extra); and
# typing_extensions, which comes with pydantic
NAMED = {"llama_cpp": "llama-cpp-python", "typing_extensions": "pydantic"}


def _declared() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {canonicalize_name(Requirement(r).name): Requirement(r) for r in reqs}


def _third_party_imports() -> set[str]:
    ours = {p.name for p in ROOT.iterdir() if p.is_dir()} | set(sys.stdlib_module_names) | {"__future__"}
    found = set()
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.add(node.module.split(".")[0])
    return found - ours


def test_every_third_party_import_of_the_product_is_declared():
    dists = packages_distributions()
    declared = _declared()
    missing = sorted(m for m in _third_party_imports() - ELSEWHERE
                     if not {canonicalize_name(d) for d in dists.get(m, [NAMED.get(m, m)])} & declared.keys()
                     and canonicalize_name(NAMED.get(m, m)) not in declared)
    assert not missing, f"imported by the product but not in pyproject.toml's dependencies: {missing}"


def test_the_tested_pins_lie_inside_the_declared_ranges():
    declared = _declared()
    outside = []
    for name in ("requirements.txt", "requirements-nodeps.txt", "requirements-llm.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if "==" not in line:
                continue
            pin = Requirement(line)
            req = declared.get(canonicalize_name(pin.name))
            version = next(iter(pin.specifier)).version
            if req is not None and not req.specifier.contains(version, prereleases=True):
                outside.append(f"{name}: {line} not in {req}")
    assert not outside, outside
    assert {"numpy", "mujoco", "torch", "langgraph", "chromadb", "ray"} <= declared.keys()


def test_make_test_runs_the_suite_while_the_pi05_environment_installs() -> None:
    """`make test` (what .ci/run calls): setup leaves .venv-pi05 installing in the background, the main suite
    runs with the π0.5 suite beside it, whose setup waits for that install (one lock); either failing fails
    the run; an unknown setup option is refused, naming the known ones."""
    import os
    import subprocess

    # .ci/run calls us inside `make test`: without its variables the nested make prints no directory lines
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}

    def dry(target: str) -> list[str]:
        return subprocess.run(["make", "--no-print-directory", "-n", target], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()

    assert dry("test") == ["bash scripts/setup.sh --pi05-background", "bash scripts/test.sh"]
    pi05 = dry("test-pi05")
    assert pi05[0].endswith("setup.sh --pi05"), pi05
    assert pi05[-1].startswith(".venv-pi05/bin/python -m pytest"), pi05
    both = (ROOT / "scripts" / "test.sh").read_text()
    assert "make --no-print-directory test-pi05 > .venv-pi05/test.log 2>&1 &" in both
    assert '.venv/bin/python -m pytest "$@" &' in both and '[ "$main" = 0 ] && [ "$rc" = 0 ]' in both
    script = (ROOT / "scripts" / "setup.sh").read_text()
    assert "flock 9; install_pi05" in script  # a later --pi05 waits for the background install
    bad = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "--nope"], capture_output=True,
                         text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "--pi05-background" in bad.stderr


def test_make_lets_python_write_the_bytecode_the_setup_skipped() -> None:
    """The setup installs with --no-compile; with PYTHONDONTWRITEBYTECODE set (some CI images do), every
    process would compile torch & co. anew. make's recipes and scripts/test.sh run without it."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    probe = subprocess.run(["make", "-s", "--no-print-directory", "-f", "Makefile", "--eval",
                            "probe: ; @echo $${PYTHONDONTWRITEBYTECODE-unset}", "probe"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60, check=True)
    assert probe.stdout.strip() == "unset"
    assert "unset PYTHONDONTWRITEBYTECODE" in (ROOT / "scripts" / "test.sh").read_text()
