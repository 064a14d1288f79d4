"""Compile a `SceneSpec` into a MuJoCo model with `mujoco.MjSpec`: Panda arm and gripper (robosuite's
model files), table, objects (primitives or LIBERO meshes), fixtures, cameras and lights.

`build_scene` returns the compiled model plus a `SceneIndex` of the ids and addresses that the
controller, `WorldState` and the renderer read, so nothing looks names up at run time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mujoco
import numpy as np

from sim import assets
from sim.fixtures import FixtureParts, build_fixture, fixture_footprint
from sim.scene import Conditions, ObjectSpec, SceneSpec

TIMESTEP = 0.002
CONTROL_HZ = 20
SUBSTEPS = round(1.0 / (CONTROL_HZ * TIMESTEP))
ROBOT_BASE = (-0.56, 0.0, 0.0)
# gripper 25 cm above the table at x = -0.1, pointing straight down (found by running the OSC there)
ROBOT_INIT_QPOS = (0.0, -0.1423, 0.0, -2.4748, 0.0, 2.3326, 0.7854)
TABLE_HALF = (0.62, 0.6, 0.025)  # table top centred at x = -0.08 so the robot base sits on it
TABLE_CENTER_X = -0.08
CAMERAS = ("front", "top", "wrist")


class PlacementError(ValueError):
    """Objects could not be placed without overlap inside their regions."""


@dataclass
class SceneIndex:
    """Ids and addresses into the compiled model, resolved once at build time."""

    arm_qpos: np.ndarray  # (7,) qpos addresses of the arm joints
    arm_dof: np.ndarray  # (7,) dof addresses
    arm_act: np.ndarray  # (7,) torque actuator ids
    grip_act: np.ndarray  # (2,) finger actuator ids
    grip_qpos: np.ndarray  # (2,) finger qpos addresses
    ee_site: int
    finger_geoms: tuple[int, int]  # left / right finger pad geoms (grasp detection)
    robot_bodies: frozenset[int]
    objects: tuple[str, ...]
    object_body: np.ndarray  # (N,) body ids
    object_qpos: np.ndarray  # (N,) free-joint qpos addresses
    object_local_center: np.ndarray  # (N, 3) AABB centre in the body frame
    object_half: np.ndarray  # (N, 3) AABB half extents in the body frame (at yaw 0)
    fixtures: tuple[str, ...]
    joints: dict[str, tuple[int, float, float]] = field(default_factory=dict)  # name → (qpos adr, lo, hi)
    regions: dict[str, tuple[int, np.ndarray, np.ndarray]] = field(default_factory=dict)  # → (body, c, half)
    handles: dict[str, int] = field(default_factory=dict)  # joint name → handle geom id
    body_owner: np.ndarray = field(default_factory=lambda: np.zeros(0, int))  # body id → entity index
    entity_names: tuple[str, ...] = ()  # entity index → name ("robot", "table", objects, fixtures)


@dataclass
class BuiltScene:
    spec: SceneSpec
    model: mujoco.MjModel
    index: SceneIndex
    init_qpos: np.ndarray  # the full initial qpos (robot pose, object placements, fixture joints)


def _yaw_quat(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def _add_robot(world: mujoco.MjsBody, table_height: float = 0.0) -> None:
    arm = mujoco.MjSpec.from_file(str(assets.panda_arm_xml()))
    grip = mujoco.MjSpec.from_file(str(assets.panda_gripper_xml()))
    arm.compiler.degree = grip.compiler.degree = False  # robosuite's joint ranges are in radians
    arm.body("right_hand").add_frame().attach_body(grip.body("right_gripper"), "gripper_", "")
    base = [ROBOT_BASE[0], ROBOT_BASE[1], ROBOT_BASE[2] - table_height]  # a higher table, a lower arm
    world.add_frame(pos=base).attach_body(arm.body("base"), "robot_", "")


def _look_at(eye: list[float], target: list[float]) -> list[float]:
    """MuJoCo `xyaxes` for a camera at `eye` looking at `target` with z up."""
    f = np.subtract(target, eye) / np.linalg.norm(np.subtract(target, eye))
    x = np.cross(f, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    return [*x, *np.cross(x, f)]


def _add_stage(spec: mujoco.MjSpec, c: Conditions) -> None:
    spec.visual.quality.shadowsize = 0
    spec.visual.quality.offsamples = 0
    spec.visual.headlight.ambient = [0.45, 0.45, 0.45]
    spec.visual.headlight.diffuse = [0.5, 0.5, 0.5]
    spec.visual.global_.offwidth = 640
    spec.visual.global_.offheight = 480
    w = spec.worldbody
    w.add_light(pos=[0, 0, 2.0], dir=[0, 0, -1], diffuse=[0.5, 0.5, 0.5], castshadow=False)
    w.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        pos=[0, 0, -0.8],
        size=[3, 3, 0.1],
        rgba=[0.35, 0.37, 0.4, 1],
    )
    tx, ty, tz = TABLE_HALF
    w.add_geom(
        name="table",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=[TABLE_CENTER_X, 0, -tz],
        size=[tx, ty, tz],
        rgba=list(c.table_rgba or (0.78, 0.72, 0.62, 1)),
        friction=[c.table_friction, 0.005, 0.0001],
    )
    for sx in (-1, 1):
        for sy in (-1, 1):
            w.add_geom(
                type=mujoco.mjtGeom.mjGEOM_BOX,
                size=[0.025, 0.025, 0.39],
                contype=0,
                conaffinity=0,
                pos=[TABLE_CENTER_X + sx * (tx - 0.05), sy * (ty - 0.05), -0.41],
                rgba=[0.5, 0.45, 0.4, 1],
            )
    spec.add_texture(
        name="sky",
        type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=[0.62, 0.72, 0.82],
        rgb2=[0.2, 0.22, 0.26],
        width=64,
        height=64,
    )
    # front: a three-quarter view from the robot's right that shows the gripper, the objects
    # and the fronts of fixtures (which face the robot); top: straight down; wrist: on the hand
    w.add_camera(
        name="front",
        pos=[-0.2, -0.62, 0.48],
        xyaxes=_look_at([-0.2, -0.62, 0.48], [0.07, 0.0, 0.04]),
        fovy=50,
    )
    w.add_camera(name="top", pos=[0.0, 0.0, 1.25], xyaxes=[0, 1, 0, -1, 0, 0], fovy=50)


def _add_object(world: mujoco.MjsBody, o: ObjectSpec, damping: float = 0.0) -> None:
    body = world.add_body(name=o.name)
    joint = body.add_freejoint(name=o.name)
    if damping:
        joint.damping = [damping, 0.0, 0.0]  # MuJoCo's damping polynomial: its linear term, every dof
    common = dict(rgba=list(o.rgba), friction=[o.friction, 0.01, 0.0002], condim=4, group=0)
    if o.kind == "box":
        g = body.add_geom(name=o.name, type=mujoco.mjtGeom.mjGEOM_BOX, size=list(o.size), **common)
    elif o.kind == "cylinder":
        g = body.add_geom(
            name=o.name, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[o.size[0], o.size[1], 0], **common
        )
    elif o.kind == "sphere":
        g = body.add_geom(name=o.name, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[o.size[0], 0, 0], **common)
    else:
        _attach_mesh(body, o)
        g = None
    if g is not None:
        g.mass = o.mass


def _attach_mesh(body: mujoco.MjsBody, o: ObjectSpec) -> None:
    xml = assets.libero_object_xml(o.asset)
    child = mujoco.MjSpec.from_file(str(xml))
    for tex in child.textures:
        if tex.file:
            tex.data, tex.width, tex.height = assets.small_texture(xml.parent / tex.file)
            tex.file, tex.nchannel = "", 3
    scale = o.size[0]
    for m in child.meshes:
        m.scale = [s * scale for s in m.scale]
    obj = child.body("object")
    n_col = 0
    for g in obj.geoms:
        g.pos = [x * scale for x in g.pos]
        if g.type == mujoco.mjtGeom.mjGEOM_BOX:
            g.size = [x * scale for x in g.size]
        if g.contype or g.conaffinity:
            g.friction = [o.friction, 0.01, 0.0002]
            g.solref = [0.004, 1.0]  # LIBERO's 0.001 is below 2×timestep and would be clamped anyway
            g.solimp = [0.95, 0.99, 0.001, 0.5, 2]
            n_col += 1
        g.density = 0
        g.mass = o.mass
    for g in obj.geoms:
        g.mass = o.mass / max(n_col, 1) if (g.contype or g.conaffinity) else 1e-6
    obj.pos = [0.0, 0.0, 0.0]
    body.add_frame().attach_body(obj, f"{o.name}_", "")


def _body_local_aabb(model: mujoco.MjModel, body: int) -> tuple[np.ndarray, np.ndarray]:
    """AABB of the body's colliding geoms in the body frame (geoms of child bodies included)."""
    pts = []
    for g in range(model.ngeom):
        b = model.geom_bodyid[g]
        if not (model.geom_contype[g] or model.geom_conaffinity[g]):
            continue
        if b != body and model.body_parentid[b] != body:
            continue
        c, h = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        corners = c + h * np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, model.geom_quat[g])
        pos, quat = model.geom_pos[g].copy(), model.geom_quat[g]
        if b != body:  # a child body (mesh objects are attached one level down, at identity)
            pos = pos + model.body_pos[b]
        pts.append(corners @ R.reshape(3, 3).T + pos)
        del quat
    if not pts:
        return np.zeros(3), np.full(3, 0.01)
    allp = np.concatenate(pts)
    lo, hi = allp.min(0), allp.max(0)
    return (lo + hi) / 2, (hi - lo) / 2


def _place(spec: SceneSpec, half: np.ndarray, rng: np.random.Generator) -> list[tuple[float, float]]:
    """Positions (x, y) for every object: given ones as they are, region ones by rejection sampling.

    Everything is treated as an axis-aligned rectangle on the table (objects by their yaw-free bound),
    kept 1 cm apart.
    """
    taken: list[tuple[np.ndarray, np.ndarray]] = [
        (np.array(f.pos), fixture_footprint(f)) for f in spec.fixtures
    ]
    radius = [np.full(2, float(np.hypot(h[0], h[1]))) for h in half]
    out: list[tuple[float, float] | None] = [o.pos for o in spec.objects]
    taken += [(np.array(o.pos), radius[i]) for i, o in enumerate(spec.objects) if o.pos is not None]
    for i, o in enumerate(spec.objects):
        if o.pos is not None:
            continue
        x0, x1, y0, y1 = o.region
        for _ in range(200):
            p = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1)])
            if all(np.any(np.abs(p - q) > radius[i] + hq + 0.01) for q, hq in taken):
                break
        else:
            raise PlacementError(f"could not place {o.name!r} in region {o.region} without overlap")
        out[i] = (float(p[0]), float(p[1]))
        taken.append((p, radius[i]))
    return out  # type: ignore[return-value]


def build_scene(spec: SceneSpec) -> BuiltScene:
    """Compile the scene. Raises `PlacementError`, `assets.AssetError` or `ValueError` with a reason."""
    if spec.libero is not None:
        raise ValueError(f"scene {spec.scene_id} is LIBERO's task {spec.libero.task}, not our world: it "
                         "runs in LIBERO (sim.episode.run_episode and sim.validity.check_scene ask the "
                         "scene's world, sim.worlds)")
    ms = mujoco.MjSpec()
    ms.option.timestep = TIMESTEP
    ms.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    ms.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    ms.option.impratio = 5.0
    ms.compiler.degree = False
    c = spec.conditions or Conditions()
    _add_stage(ms, c)
    _add_robot(ms.worldbody, c.table_height)
    for o in spec.objects:
        _add_object(ms.worldbody, o, c.damping)
    parts: dict[str, FixtureParts] = {f.name: build_fixture(ms.worldbody, f) for f in spec.fixtures}
    try:
        model = ms.compile()
    except Exception as e:  # mujoco raises a plain ValueError with the compiler's message
        raise ValueError(f"MuJoCo could not compile scene: {e}") from None
    index = _index(model, spec, parts)
    init = _initial_qpos(model, spec, index)
    return BuiltScene(spec, model, index, init)


def _index(model: mujoco.MjModel, spec: SceneSpec, parts: dict[str, FixtureParts]) -> SceneIndex:
    def jid(n: str) -> int:
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)

    def aid(n: str) -> int:
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, n)

    arm_j = [jid(f"robot_joint{i}") for i in range(1, 8)]
    grip_j = [jid(f"robot_gripper_finger_joint{i}") for i in (1, 2)]
    obodies = np.array([model.body(o.name).id for o in spec.objects], int)
    boxes = [_body_local_aabb(model, b) for b in obodies]
    centers, halves = [c for c, _ in boxes], [h for _, h in boxes]
    robot_bodies = frozenset(b for b in range(model.nbody) if model.body(b).name.startswith("robot_"))
    entities = ("robot", "table") + tuple(o.name for o in spec.objects) + tuple(f.name for f in spec.fixtures)
    owner = np.full(model.nbody, -1, int)
    for b in range(model.nbody):
        root = b
        while model.body_parentid[root] != 0:
            root = model.body_parentid[root]
        name = model.body(root).name
        if b in robot_bodies or name.startswith("robot_"):
            owner[b] = 0
        elif b == 0:
            owner[b] = 1
        else:
            owner[b] = entities.index(name) if name in entities else -1
    joints, regions, handles = {}, {}, {}
    for fp in parts.values():
        for n, (lo, hi) in fp.joints.items():
            joints[n] = (int(model.jnt_qposadr[jid(n)]), lo, hi)
        for n, r in fp.regions.items():
            regions[n] = (model.body(r.body).id, np.array(r.center), np.array(r.half))
        for n, g in fp.handles.items():
            handles[n] = model.geom(g).id
    return SceneIndex(
        arm_qpos=model.jnt_qposadr[arm_j].copy(),
        arm_dof=model.jnt_dofadr[arm_j].copy(),
        arm_act=np.array([aid(f"robot_torq_j{i}") for i in range(1, 8)]),
        grip_act=np.array([aid(f"robot_gripper_gripper_finger_joint{i}") for i in (1, 2)]),
        grip_qpos=model.jnt_qposadr[grip_j].copy(),
        ee_site=model.site("robot_gripper_grip_site").id,
        finger_geoms=(
            model.geom("robot_gripper_finger1_pad_collision").id,
            model.geom("robot_gripper_finger2_pad_collision").id,
        ),
        robot_bodies=robot_bodies,
        objects=tuple(o.name for o in spec.objects),
        object_body=obodies,
        object_qpos=np.array([model.jnt_qposadr[jid(o.name)] for o in spec.objects], int),
        object_local_center=np.array(centers).reshape(-1, 3),
        object_half=np.array(halves).reshape(-1, 3),
        fixtures=tuple(f.name for f in spec.fixtures),
        joints=joints,
        regions=regions,
        handles=handles,
        body_owner=owner,
        entity_names=entities,
    )


def _initial_qpos(model: mujoco.MjModel, spec: SceneSpec, index: SceneIndex) -> np.ndarray:
    q = model.qpos0.copy()
    q[index.arm_qpos] = ROBOT_INIT_QPOS
    opening = 0.04 * (spec.conditions.gripper if spec.conditions is not None else 1.0)
    q[index.grip_qpos] = (opening, -opening)
    rng = np.random.default_rng(spec.seed)
    xy = _place(spec, index.object_half, rng)
    for i, o in enumerate(spec.objects):
        a = index.object_qpos[i]
        c, h = index.object_local_center[i], index.object_half[i]
        z = o.z if o.z is not None else h[2] - c[2] + 0.0005
        q[a : a + 3] = (xy[i][0], xy[i][1], z)
        q[a + 3 : a + 7] = _yaw_quat(o.yaw)
    for f in spec.fixtures:
        for key, frac in f.init.items():
            name = f"{f.name}/{key}"
            if name not in index.joints:
                raise ValueError(
                    f"fixture {f.name!r} has no joint {key!r}; joints: "
                    f"{[j.split('/', 1)[1] for j in index.joints if j.startswith(f.name + '/')]}"
                )
            adr, lo, hi = index.joints[name]
            q[adr] = lo + frac * (hi - lo)
    return q
