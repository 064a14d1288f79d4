"""SceneSpec round trip, registry, predicates over built scenes, controller sanity."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from common.registry import Registry, UnknownNameError
from sim.env import SimEnv
from sim.families import FAMILIES, get_family
from sim.predicates import dist, grasped, in_contact, lifted, on
from sim.scene import ObjectSpec, Predicate, SceneSpec


def _scene(**over) -> SceneSpec:
    objs = (
        ObjectSpec(name="cube", kind="box", category="cube", size=(0.02, 0.02, 0.02), pos=(0.05, -0.1)),
        ObjectSpec(
            name="plate", kind="mesh", asset="plate", category="plate", size=(1, 1, 1), pos=(0.05, 0.12)
        ),
    )
    kw = dict(
        family="pick_place",
        instruction="put the cube on the plate",
        objects=objs,
        goal=(Predicate(fn="on", args=("cube", "plate")),),
        factors={"spatial": {"x": 0.05}},
        seed=3,
    )
    kw.update(over)
    return SceneSpec(**kw)


def test_scene_json_round_trip_is_exact():
    spec = _scene()
    again = SceneSpec.from_json(spec.to_json())
    assert again == spec
    assert again.scene_id == spec.scene_id
    assert _scene(seed=4).scene_id != spec.scene_id


def test_family_scenes_round_trip():
    for name in FAMILIES.names():
        spec = get_family(name).sample_scene(0, ood=True)
        assert SceneSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(
    "bad",
    [
        dict(goal=()),
        dict(objects=(ObjectSpec(name="a", kind="box", category="c", size=(0.02,) * 3, pos=(0, 0)),) * 2),
    ],
)
def test_scene_rejects_bad_input(bad):
    with pytest.raises(ValidationError):
        _scene(**bad)


def test_object_and_predicate_validation_messages():
    with pytest.raises(ValidationError, match="needs either `pos` or a placement `region`"):
        ObjectSpec(name="a", kind="box", category="c", size=(0.02,) * 3)
    with pytest.raises(ValidationError, match="unknown predicate 'ontop'"):
        Predicate(fn="ontop", args=("a", "b"))


def test_registry_suggests_close_names():
    reg: Registry[int] = Registry("thing")
    reg.register("pick_place", 1)
    with pytest.raises(UnknownNameError, match="Did you mean 'pick_place'"):
        reg.get("pick_plcae")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("pick_place", 2)


def test_predicates_on_a_built_scene():
    env = SimEnv(_scene())
    s = env.reset()
    s = env.hold(5)
    assert in_contact(s, "cube", "table") and in_contact(s, "plate", "table")
    assert not on(s, "cube", "plate") and not grasped(s, "cube") and not lifted(s, "cube")
    assert dist(s, "cube", "plate") == pytest.approx(0.22, abs=0.01)
    # put the cube on the plate by hand: place it above the plate and let it fall
    adr = env.index.object_qpos[0]
    env.data.qpos[adr : adr + 3] = (0.05, 0.12, 0.06)
    s = env.hold(15)
    assert on(s, "cube", "plate") and env.success(s)
    assert not on(s, "plate", "cube")


def test_controller_tracks_a_goal_and_holds_still():
    env = SimEnv(_scene())
    s0 = env.reset()
    for _ in range(10):
        s = env.step(np.zeros(7))
    assert np.linalg.norm(s.ee_pos - s0.ee_pos) < 0.005  # holding
    zs = []
    for _ in range(20):
        s = env.step(np.array([0, 0, -0.2, 0, 0, 0, -1.0]))  # "1 cm down" relative to where it is now
        zs.append(s.ee_pos[2])
    assert np.all(np.diff(zs) < 0) and 0.03 < s0.ee_pos[2] - zs[-1] < 0.2
    goal = s0.ee_pos + np.array([0.08, 0.05, -0.1])
    for _ in range(40):  # closed loop on the error, as experts do
        s = env.step(np.r_[np.clip((goal - s.ee_pos) / 0.05, -1, 1), 0, 0, 0, -1.0])
    assert np.linalg.norm(s.ee_pos - goal) < 0.005
    assert not env.has_nan()


def test_on_takes_a_bowl_nested_in_a_plate_but_never_the_plate_under_it():
    """LIBERO's boxes put a bowl resting in a plate a few mm below the plate's own box bottom (libero_spatial,
    where LIBERO's goal check holds): that is on. The plate under the bowl is not on the bowl, nor is a bowl
    whose bottom is a centimetre below the plate's."""
    from sim.world import StateLayout, WorldState

    def world(bowl_bottom: float) -> WorldState:
        names = ("bowl", "plate")
        half = np.array([[0.07, 0.07, 0.04], [0.09, 0.09, 0.01]])
        layout = StateLayout(objects=names, object_half=half, object_center=np.zeros((2, 3)), joints=(),
                             joint_range=np.zeros((0, 2)), regions=(), region_half=np.zeros((0, 3)),
                             handles=(), entities=("robot", "table", *names))
        contacts = np.zeros((4, 4), bool)
        contacts[2, 3] = contacts[3, 2] = True
        pos = np.array([[0.0, 0.0, bowl_bottom + 0.04], [0.01, 0.0, 0.01]])
        return WorldState(layout=layout, ee_pos=np.ones(3), ee_mat=np.eye(3), gripper=0.08, obj_pos=pos,
                          obj_mat=np.tile(np.eye(3), (2, 1, 1)), joint_q=np.zeros(0),
                          region_pos=np.zeros((0, 3)), region_mat=np.zeros((0, 3, 3)),
                          handle_pos=np.zeros((0, 3)), contacts=contacts, grasp=np.zeros(4, bool))

    nested = world(-0.0024)
    assert nested.bounds("bowl")[0][2] < nested.bounds("plate")[0][2]
    assert on(nested, "bowl", "plate") and not on(nested, "plate", "bowl")
    assert not on(world(-0.01), "bowl", "plate")
    assert on(world(0.02), "bowl", "plate") and not on(world(0.05), "bowl", "plate")  # ON_Z_TOL above
