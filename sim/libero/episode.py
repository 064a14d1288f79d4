"""Episodes and validity in LIBERO's world (families whose `world` is "libero"; their scenes name a
LIBERO task, `SceneSpec.libero`): what `sim.mujoco_episode` and `sim.mujoco_validity` do for our world, on
a real LIBERO environment. `sim.episode.run_episode` and `sim.validity.check_scene` come here through
`sim.worlds`.

An episode starts from LIBERO's own sampled start for the scene's seed (`LiberoEnv.reset(seed=...)`: each
object somewhere in its BDDL region), then the policy acts in LIBERO's action space until LIBERO's goal
check passes or the step limit; every state is read as a `WorldState` (`sim.libero.world.LiberoReader`) and
labelled by the scene's family. The expert is the scripted one over privileged state
(`sim.libero.drawer.expert_for`). Its demonstrations are DART-style (`dart_noise`): the environment
executes the expert's action plus Gaussian noise on the six arm dimensions while the episode records the
expert's own action, so the data shows how to come back from a drift — without it an object-token policy
cloned from LIBERO's expert copies it open loop and drifts off closed loop (FINDINGS #19, #21: 0/50 → 28/50
on libero_object at σ = 0.3).

A scene is valid when its BDDL builds and the expert solves it without noise; the demonstration kept is
the first of `demo_tries` noisy runs that also succeeds (else the clean one).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from sim.families import get_family
from sim.records import Episode, Policy, ValidityReport, make_observation
from sim.scene import SceneSpec
from sim.world import WorldState

DART_NOISE = 0.3  # σ of the executed-action noise of expert demonstrations (FINDINGS #21)


def dart_rng(spec: SceneSpec, noise_seed: int) -> np.random.Generator:
    """The executed-action noise of try `noise_seed` of a DART demonstration in `spec`: its own stream per
    scene. (Seeded by the try alone, every demonstration drifted the same way at the same step, and a policy
    cloned from them never saw the way back from any other drift — FINDINGS #37.)"""
    return np.random.default_rng([int(spec.seed) % (2**63), noise_seed, 17])


def libero_env(spec: SceneSpec, tmp: str) -> Any:
    """A LiberoEnv of the scene a LIBERO spec names (its BDDL written under `tmp`)."""
    from sim.libero.env import LiberoEnv
    from sim.libero.world import libero_scene

    scene = libero_scene(spec)
    return LiberoEnv(scene.write(Path(tmp) / "scene.bddl"), name=scene.problem)


def _labels(spec: SceneSpec, states: list[WorldState], success: bool) -> tuple[list[str], str | None]:
    """The family's phase labels; LIBERO's goal check decides success (a state the labels call "done"
    without it ends in "place")."""
    fam = get_family(spec.family)
    labels, _ = fam.label(spec, states)
    if success:
        labels[-1] = "done"
        return labels, None
    if labels and labels[-1] == "done":
        labels[-1] = "place"
    return labels, fam.stuck_phase([p for p in labels if p != "done"])


def run_libero_episode(spec: SceneSpec, policy: Policy | None = None, *, max_steps: int | None = None,
                       record_every: int = 1, policy_name: str | None = None, dart_noise: float = 0.0,
                       noise_seed: int = 0) -> Episode:
    """One episode of `policy` (None: the scripted expert, with `dart_noise`) in a LIBERO scene."""
    from sim.libero.drawer import expert_for
    from sim.libero.world import LiberoReader

    limit = max_steps or spec.max_steps
    with tempfile.TemporaryDirectory(prefix="coda-libero-") as tmp:
        env = libero_env(spec, tmp)
        try:
            env.reset(seed=int(spec.seed) % (2**32))
            reader = LiberoReader(env)
            s = reader.read()
            states, steps, actions = [s], [0], []
            expert = expert_for(env) if policy is None else None
            rng = dart_rng(spec, noise_seed)
            t, success, read_at = 0, env.success(), 0
            while t < limit and not success:
                if expert is not None:
                    chunk = expert.act()[None]
                else:
                    if read_at != t:  # the policy sees the state it acts from, recorded or not
                        s, read_at = reader.read(), t
                    chunk = np.atleast_2d(np.asarray(policy(make_observation(spec, s, t)), float))
                if chunk.shape[1] != 7 or not np.isfinite(chunk).all():
                    raise ValueError(f"policy returned an action chunk of shape {chunk.shape} (need (h, 7), "
                                     "finite)")
                for a in chunk[: limit - t]:
                    run = a.copy()
                    if dart_noise > 0:
                        run[:6] += rng.normal(0.0, dart_noise, 6)
                    env.step(run)
                    actions.append(a)
                    t += 1
                    success = env.success()
                    if t % record_every == 0 or success:
                        s, read_at = reader.read(), t
                        states.append(s)
                        steps.append(t)
                    if success:
                        break
                if expert is not None and expert.done:
                    break
            if steps[-1] != t:
                states.append(reader.read())
                steps.append(t)
        finally:
            env.close()
    labels, failing = _labels(spec, states, success)
    if not success and expert is not None and failing is not None:
        failing = expert.failure_phase() if expert.failure_phase() in get_family(spec.family).phases \
            else failing
    name = policy_name or ("expert" if policy is None else type(policy).__name__)
    if policy is None and dart_noise > 0:
        name = f"expert_dart{dart_noise:g}"
    return Episode(scene=spec, actions=np.asarray(actions, float).reshape(-1, 7), states=states,
                   state_steps=np.asarray(steps), phases=labels, success=success, failing_phase=failing,
                   policy=name)


def check_libero_scene(spec: SceneSpec, *, solve: bool = True, demo_tries: int = 3) -> ValidityReport:
    """The `ValidityReport` of a LIBERO scene: it builds ("compile"), and the expert solves it
    without noise ("solvability"); the demonstration is the first noisy run that succeeds."""
    from sim.libero.expert import UnsupportedGoal
    from sim.libero.world import libero_scene

    checks = {"compile": False}
    try:  # the task file exists and the edits apply (a swap partner the task has, words LIBERO can parse)
        libero_scene(spec)
    except (FileNotFoundError, KeyError, ValueError) as e:
        return ValidityReport(ok=False, reason="compile", message=f"compile: {e}", checks=checks)
    try:
        clean = run_libero_episode(spec)
    except UnsupportedGoal as e:  # a goal no scripted expert reaches: nothing can demonstrate it
        return ValidityReport(ok=False, reason="compile", message=f"compile: {e}", checks=checks)
    checks["compile"] = True
    if not solve:
        return ValidityReport(ok=True, reason=None, message="ok: compile passed", checks=checks)
    checks["solvability"] = clean.success
    if not clean.success:
        return ValidityReport(ok=False, reason="solvability",
                              message=f"solvability: the expert did not solve it (stuck in "
                                      f"{clean.failing_phase})", checks=checks, attempt=clean)
    demo = clean
    for k in range(demo_tries):
        noisy = run_libero_episode(spec, dart_noise=DART_NOISE, noise_seed=k)
        if noisy.success:
            demo = noisy
            break
    return ValidityReport(ok=True, reason=None, message="ok: compile, solvability passed", checks=checks,
                          demo=demo, attempt=clean)
