"""The `libero` backend on real LIBERO (robosuite 1.4, the package's BDDL files and init states)."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.liberopro import init_states, run_task, tasks


@pytest.fixture(scope="module")
def spatial_env():
    from sim.libero.env import LiberoEnv

    task = tasks("libero_spatial")[0]
    env = LiberoEnv(task)
    yield task, env
    env.close()


def test_the_scripted_expert_solves_a_libero_spatial_task_from_its_first_init_state(spatial_env):
    from sim.libero.expert import PHASES, PickPlaceExpert

    task, env = spatial_env
    env.reset(init_states(task)[0], seed=0)
    assert env.steps == 0 and env.goal == [["on", "akita_black_bowl_1", "plate_1"]]
    bowl, plate = env.box("akita_black_bowl_1"), env.box("plate_1")
    assert np.linalg.norm(bowl.center[:2] - plate.center[:2]) > 0.05  # not on the plate yet
    expert = PickPlaceExpert(env)
    seen = []
    while env.steps < task.max_steps and not env.success():
        env.step(expert.act())
        if not seen or seen[-1] != expert.phase:
            seen.append(expert.phase)
    assert env.success() and env.steps < task.max_steps and expert.lifted
    assert seen == [p for p in PHASES if p in seen] and seen[:3] == ["approach", "grasp", "lift"]
    with pytest.raises(ValueError, match="7 numbers"):
        env.step(np.zeros(6))


def test_goals_the_expert_cannot_reach_are_reported_not_scored():
    """libero_goal's first task opens a drawer (no object to carry): the task is skipped with the reason."""
    task = tasks("libero_goal")[0]
    assert "open" in task.instruction.lower()
    res = run_task("libero_goal", "none", task.name, episodes=1, policy="expert", seed=0)
    assert res.skipped is not None and "is not (On|In" in res.skipped and res.episodes == 0
