"""The phase vocabulary a family declares its phases from (`TaskFamily.phase_table`).

A phase is more than its label: the agents read, for each phase of a family, which kinds of factor
plausibly break it (the rules critic's prior, `agents.critic.rules`), which stages of the family's seed
training program cover it, and which subgoal the rules training writer inserts to stage it more finely
(`agents.writers.training.EMPHASIS`). The phases several families share are here; a phase only one family
has lives in that family's folder (`push` in `articulated/`, `slide` in `push/`).

The relevance rows are priors about the scripted expert's physics (object yaw and size break grasps, mass
and friction break lifts and carries, the target's position breaks transport, ...); a kind a row does not
list gets the critic's default, and the round's peers can lift a factor the row ranks low (FINDINGS #3).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Phase:
    """One phase of a family's task, as the agents read it."""

    # the label `TaskFamily.phase` gives a state in this phase
    name: str
    # factor kind → how plausibly a factor of that kind breaks this phase, in (0, 1]
    relevance: Mapping[str, float]
    # the seed training program's stages that cover it (the first one the program has wins); None: the
    # verifier (the last stage)
    stages: tuple[str, ...] | None = None
    # the subgoal the rules training writer inserts before those stages (a key of
    # `agents.writers.training.EMPHASIS`); None: the writer stages this phase no finer
    emphasis: str | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a phase needs a name")
        bad = {k: v for k, v in self.relevance.items() if not 0.0 < v <= 1.0}
        if bad:
            raise ValueError(f"phase {self.name!r}: relevance must be in (0, 1], got {bad}")


# the goal reached: nothing broke, so no kind is more relevant than another (a summary of an episode that
# ended there reads every factor at the critic's default)
DONE = Phase(name="done", relevance={})

APPROACH = Phase(name="approach", stages=("reach",), emphasis="near_object", relevance={
    "subject_pos": 1.0, "fixture_pos": 1.0, "fixture_yaw": 0.6, "fixture_height": 0.5, "appearance": 0.4,
    "language": 0.4, "task_kind": 0.4, "handle_standoff": 0.4, "subject_shape": 0.3, "subject_size": 0.3,
    "subject_yaw": 0.3, "fixture_size": 0.3, "joint_init": 0.3, "target_kind": 0.2, "target_pos": 0.2,
    # the extended space's kinds (sim.extension)
    "distractor": 0.6, "state_noise": 0.6, "distractor_pos": 0.5, "arm_init": 0.5, "obstacle": 0.4,
    "actuation_noise": 0.4, "table_height": 0.4, "obstacle_pos": 0.3, "clutter": 0.2})
GRASP = Phase(name="grasp", stages=("grasp",), emphasis="centred_on_object", relevance={
    "subject_yaw": 1.0, "subject_size": 1.0, "subject_shape": 0.8, "handle_standoff": 1.0, "fixture_yaw": 0.8,
    "fixture_height": 0.7, "friction": 0.5, "subject_pos": 0.5, "fixture_size": 0.5, "fixture_pos": 0.5,
    "joint_init": 0.4, "mass": 0.2, "appearance": 0.2,
    # the extended space's kinds (sim.extension)
    "object_scale": 0.8, "state_noise": 0.7, "actuation_noise": 0.6, "distractor_pos": 0.5,
    "table_height": 0.5, "distractor": 0.4, "damping": 0.3, "surface": 0.3, "arm_init": 0.2, "clutter": 0.2})
LIFT = Phase(name="lift", stages=("lift",), emphasis="secure_lift", relevance={
    "mass": 1.0, "friction": 1.0, "subject_size": 0.6, "subject_shape": 0.5, "subject_yaw": 0.4,
    "subject_pos": 0.3,
    # the extended space's kinds (sim.extension)
    "damping": 0.7, "object_scale": 0.4, "actuation_noise": 0.3})
TRANSPORT = Phase(name="transport", stages=("carry", "align"), emphasis="halfway_to_target", relevance={
    "target_pos": 1.0, "mass": 0.7, "friction": 0.7, "target_kind": 0.4, "subject_size": 0.3,
    "subject_shape": 0.3, "target_size": 0.3,
    # the extended space's kinds (sim.extension)
    "obstacle": 1.0, "obstacle_pos": 0.9, "damping": 0.5,
    "actuation_noise": 0.5, "state_noise": 0.4, "distractor": 0.3})
ALIGN = Phase(name="align", stages=("align", "carry"), emphasis="halfway_to_target", relevance={
    "target_yaw": 1.0, "target_pos": 0.7, "subject_yaw": 0.6, "target_size": 0.6, "subject_size": 0.5,
    # the extended space's kinds (sim.extension)
    "state_noise": 0.7, "actuation_noise": 0.6, "object_scale": 0.4})
PLACE = Phase(name="place", emphasis="centred_over_target", relevance={
    "target_size": 1.0, "target_pos": 0.7, "target_kind": 0.7, "target_yaw": 0.7, "subject_size": 0.5,
    "subject_shape": 0.5, "subject_yaw": 0.4, "friction": 0.3,
    # the extended space's kinds (sim.extension)
    "state_noise": 0.6, "actuation_noise": 0.6, "object_scale": 0.5, "distractor_pos": 0.3})
INSERT = Phase(name="insert", emphasis="centred_over_target", relevance={
    "target_size": 1.0, "subject_size": 1.0, "target_yaw": 0.8, "subject_yaw": 0.6, "target_pos": 0.4,
    # the extended space's kinds (sim.extension)
    "object_scale": 1.0, "state_noise": 0.8, "actuation_noise": 0.8})
RELEASE = Phase(name="release", emphasis="centred_over_target", relevance={
    "target_size": 0.8, "target_kind": 0.7, "friction": 0.5, "subject_shape": 0.5, "subject_size": 0.4,
    "target_pos": 0.4,
    # the extended space's kinds (sim.extension)
    "surface": 0.4, "object_scale": 0.3, "actuation_noise": 0.3})

# dragging a handle along its joint (articulated; libero_goal's drawer): what breaks it is how the fixture
# meets the hand (its turn, size, place and the handle's standoff) and how far the joint has to travel
PULL = Phase(name="pull", stages=("move",), emphasis="halfway_along_joint", relevance={
    "joint_init": 0.6, "fixture_yaw": 0.9, "fixture_size": 0.6, "fixture_pos": 0.6, "handle_standoff": 0.6,
    "fixture_height": 0.4, "task_kind": 0.5, "actuation_noise": 0.6, "state_noise": 0.5, "table_height": 0.4,
    "obstacle": 0.4, "arm_init": 0.2})

# carry an object to a target and set it down (pick-place, put-inside; LIBERO's pick-place families)
PICK_AND_PLACE = (APPROACH, GRASP, LIFT, TRANSPORT, PLACE, RELEASE)
