"""One registry per axis of variation in sim: worlds (`sim.worlds.WORLDS`: MuJoCo, LIBERO) and executors of
episodes (`sim.jobs.EXECUTORS`: the local pool, Ray). Code asks the registry, chosen from the family for
worlds and by name for executors; nothing branches on a scene's `libero` field or an executor's name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sim.episode
import sim.validity
from sim.families import FAMILIES, get_family
from sim.jobs import EXECUTORS, Executor, fits_here
from sim.pool import EpisodePool, make_pool
from sim.records import Episode, ValidityReport
from sim.worlds import WORLDS, World, world_of

ROOT = Path(__file__).resolve().parents[2]


def test_every_registered_family_lives_in_a_registered_world():
    assert set(WORLDS.names()) >= {"mujoco", "libero"}
    for name in FAMILIES.names():
        fam = FAMILIES.get(name)
        assert fam.world in WORLDS, f"family {name!r} declares world {fam.world!r}, which is not registered"
        assert WORLDS.get(fam.world).name == fam.world


def test_the_world_is_the_familys():
    ours, libero = get_family("pick_place"), get_family("libero_object")
    assert world_of(ours.seed_scenes()[0]) is WORLDS.get("mujoco")
    assert world_of(libero.seed_scenes()[0]) is WORLDS.get("libero")


class _Toy:
    """A family in a world of its own: everything the world returns is marked, so the test sees who ran."""

    world = "toy"


def _toy_world(calls: list) -> World:
    def run(spec, policy=None, **kw):
        calls.append(("run", spec.scene_id, policy, kw))
        return "toy episode"

    def check(spec, *, solve=True, config=None):
        calls.append(("check", spec.scene_id, solve, config))
        return "toy report"

    return World(name="toy", build=lambda spec: "toy scene", run_episode=run, check_scene=check,
                 expert=lambda spec, env: "toy expert")


def test_episodes_and_validity_ask_the_world_registry(monkeypatch):
    """A family in a new world needs only a `WORLDS` entry: `run_episode` and `check_scene` reach it."""
    spec = get_family("pick_place").seed_scenes()[0]
    calls: list = []
    monkeypatch.setitem(WORLDS._items, "toy", _toy_world(calls))
    monkeypatch.setitem(FAMILIES._items, "pick_place", _Toy)
    assert sim.episode.run_episode(spec, max_steps=3, dart_noise=0.1) == "toy episode"
    assert sim.validity.check_scene(spec, solve=False) == "toy report"
    assert calls == [("run", spec.scene_id, None, {"max_steps": 3, "record_every": 1, "policy_name": None,
                                                   "dart_noise": 0.1}),
                     ("check", spec.scene_id, False, None)]


def test_a_family_of_an_unknown_world_is_refused_by_name(monkeypatch):
    spec = get_family("pick_place").seed_scenes()[0]
    monkeypatch.setitem(FAMILIES._items, "pick_place", type("Moon", (), {"world": "mujocoo"}))
    with pytest.raises(KeyError, match="unknown world 'mujocoo'. Did you mean 'mujoco'"):
        sim.episode.run_episode(spec)


def test_our_world_runs_and_checks_a_scene():
    spec = get_family("pick_place").seed_scenes()[0]
    report = sim.validity.check_scene(spec)
    assert isinstance(report, ValidityReport) and report.ok and report.demo.success
    ep = sim.episode.run_episode(spec, max_steps=5)
    assert isinstance(ep, Episode) and ep.steps == 5 and ep.policy == "expert"
    assert WORLDS.get("mujoco").build(spec).spec == spec
    assert WORLDS.get("mujoco").expert(spec, None).finished is False


def test_a_libero_check_takes_no_mujoco_tolerances():
    spec = get_family("libero_object").seed_scenes()[0]
    with pytest.raises(ValueError, match="MuJoCo tolerances"):
        sim.validity.check_scene(spec, config=sim.validity.ValidityConfig())


def test_executors_register_and_make_pool_asks_the_registry(monkeypatch):
    assert EXECUTORS.names() == ["local", "ray"]
    made = []
    toy = Executor(name="toy", make=lambda workers, **kw: made.append((workers, kw)) or "toy pool",
                   check=lambda workers, address: None)
    monkeypatch.setitem(EXECUTORS._items, "toy", toy)
    assert make_pool("toy", 3, job_timeout_s=5) == "toy pool"
    assert made == [(3, {"address": None, "job_timeout_s": 5})]
    assert isinstance(make_pool("local", 0), EpisodePool)


def _branches_on_world(path: Path) -> list[str]:
    """`x.libero is (not) None` tests and comparisons with an executor name, outside the scene's own
    validation (`sim/scene.py`) and our builder's guard against a LIBERO scene (`sim/builder.py`)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        left = node.left
        if isinstance(left, ast.Attribute) and left.attr == "libero" and any(
                isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if any(isinstance(c, ast.Constant) and c.value == "ray" for c in node.comparators):
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


def test_no_code_branches_on_a_scenes_world_or_an_executors_name():
    allowed = {"sim/scene.py", "sim/builder.py"}
    found = [hit for package in ("sim", "agents", "coda_policy", "programs", "memory", "sandbox")
             for path in sorted((ROOT / package).rglob("*.py")) if str(path.relative_to(ROOT)) not in allowed
             for hit in _branches_on_world(path)]
    assert not found, f"dispatch on the world or the executor outside the registries: {found}"


def test_workers_beyond_the_machine_are_refused_before_anything_starts():
    from common.machine import machine_workers

    fits_here(machine_workers())
    with pytest.raises(ValueError, match=r"--workers 100000: this machine runs at most \d+ episode workers"):
        fits_here(100_000)
    for name in EXECUTORS.names():
        with pytest.raises(ValueError, match="--workers 100000"):
            EXECUTORS.get(name).preflight(100_000, None)
