"""Articulated: open or close one drawer of a two-drawer cabinet, or a hinged cabinet door.

The family's scene builder and its seed generation program, written once: `Articulated.make_scene` calls
`generate` in process, and the sandbox runs this same text as the seed generation program of every run. So
it stays in the sandbox-clean subset: it imports only numpy and `sim.scene` and avoids `str.format` (the
sandbox forbids it). The fixture's default width and depth are copied from `sim.fixtures.DEFAULTS` (a test
checks they agree). `FACTORS` declares the factor schema with each factor's facts (kind, hard side); the
loader reads it as a literal, the caller samples values from it and passes them to `generate` by name. `rng`
is unused.
"""

import numpy as np

from sim.scene import FixtureSpec, Predicate, SceneSpec, factor_values, fill, grouped

FAMILY = "articulated"
FACTORS = (
    {"name": "target", "group": "task", "type": "choice", "default": "drawer0",
     "choices": ("drawer0", "drawer1", "door"), "kind": "task_kind",
     "doc": "which joint: a drawer of the cabinet or the hinged door"},
    {"name": "action", "group": "task", "type": "choice", "default": "open", "choices": ("open", "close"),
     "kind": "task_kind", "doc": "open it, or close it (then it starts partly open)"},
    {"name": "template", "group": "task", "type": "int", "default": 0, "range": (0.0, 2.0),
     "ood_range": (0.0, 2.0), "kind": "language", "doc": "instruction template; OOD uses paraphrases"},
    {"name": "paraphrase", "group": "task", "type": "choice", "default": False, "choices": (False,),
     "ood_choices": (True,), "kind": "language", "doc": "use a paraphrased (unseen) instruction"},
    {"name": "fix_x", "group": "spatial", "type": "float", "default": 0.12, "range": (0.09, 0.16),
     "ood_range": (0.09, 0.2), "kind": "fixture_pos",
     "doc": "fixture centre x (m); its front faces the robot"},
    {"name": "fix_y", "group": "spatial", "type": "float", "default": 0.0, "range": (-0.06, 0.06),
     "ood_range": (-0.12, 0.12), "kind": "fixture_pos"},
    {"name": "fix_yaw", "group": "spatial", "type": "float", "default": 0.0, "range": (-0.2, 0.2),
     "ood_range": (-0.4, 0.4), "kind": "fixture_yaw"},
    {"name": "init_frac", "group": "spatial", "type": "float", "default": 0.7, "range": (0.5, 0.9),
     "ood_range": (0.35, 1.0), "kind": "joint_init",
     "doc": "initial open fraction for close tasks (open tasks start closed)"},
    {"name": "color", "group": "attribute", "type": "choice", "default": "wood",
     "choices": ("wood", "white", "blue"), "ood_choices": ("black", "green", "yellow"), "kind": "appearance"},
    {"name": "scale", "group": "attribute", "type": "float", "default": 1.0, "range": (0.92, 1.08),
     "ood_range": (0.82, 1.16), "kind": "fixture_size",
     "doc": "width and depth relative to the default fixture"},
    {"name": "height", "group": "attribute", "type": "float", "default": 0.16, "range": (0.15, 0.18),
     "ood_range": (0.13, 0.2), "kind": "fixture_height", "doc": "fixture height (m)"},
    {"name": "standoff", "group": "attribute", "type": "float", "default": 0.055, "range": (0.05, 0.06),
     "ood_range": (0.046, 0.066), "kind": "handle_standoff", "hard_side": -1,
     "doc": "how far the handle bar stands off the front (m)"},
)
OPENED, CLOSED = 0.75, 0.1  # goal thresholds (open fraction)
# target → (fixture kind / name, joint, what the instruction calls it)
TARGETS = {"drawer0": ("cabinet", "drawer0", "right drawer"),
           "drawer1": ("cabinet", "drawer1", "left drawer"),
           "door": ("door", "door", "door")}
BASE_SIZE = {"cabinet": (0.44, 0.28), "door": (0.26, 0.22)}  # default (width, depth) per fixture kind (m)
TEMPLATES = ("{verb} the {what}", "{verb} the {what} of the {color} cabinet", "please {verb} the {what}")
PARAPHRASES = {
    "open": ("pull the {what} open", "the {what} should end up open", "get the {what} open all the way"),
    "close": ("push the {what} shut", "the {what} should end up closed",
              "make sure the {what} isn't left open"),
}
FIXTURE_COLORS = {"wood": (0.55, 0.4, 0.3, 1.0), "white": (0.92, 0.92, 0.92, 1), "blue": (0.15, 0.3, 0.85, 1),
                  "black": (0.1, 0.1, 0.1, 1), "green": (0.15, 0.7, 0.2, 1), "yellow": (0.95, 0.85, 0.1, 1)}


def _fixture(v: dict) -> FixtureSpec:
    kind, joint, _ = TARGETS[v["target"]]
    width, depth = BASE_SIZE[kind]
    params = {"width": width * v["scale"], "depth": depth * v["scale"], "height": v["height"],
              "handle_standoff": v["standoff"]}
    init = {joint: float(v["init_frac"])} if v["action"] == "close" else {}
    return FixtureSpec(name=kind, kind=kind, pos=(v["fix_x"], v["fix_y"]), yaw=v["fix_yaw"],
                       rgba=FIXTURE_COLORS[v["color"]], params=params, init=init)


def _instruction(v: dict) -> str:
    what = TARGETS[v["target"]][2]
    i = int(v["template"]) % 3
    if v["paraphrase"]:
        return fill(PARAPHRASES[v["action"]][i], what=what)
    return fill(TEMPLATES[i], verb=v["action"], what=what, color=v["color"])


def generate(rng: np.random.Generator, **factors) -> SceneSpec:
    """One scene: the fixture in front of the robot; open it (starts closed) or close it (starts open)."""
    v = factor_values(FACTORS, factors)
    f = _fixture(v)
    joint = f"{f.name}/{TARGETS[v['target']][1]}"
    goal = (Predicate(fn="opened", args=(joint, OPENED)) if v["action"] == "open"
            else Predicate(fn="closed", args=(joint, CLOSED)))
    return SceneSpec(family=FAMILY, instruction=_instruction(v), objects=(), fixtures=(f,), goal=(goal,),
                     factors=grouped(FACTORS, v), max_steps=300)
