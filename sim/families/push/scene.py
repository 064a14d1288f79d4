"""Push: slide a graspable object along the table until it touches a heavy target block, without picking
it up.

The family's scene builder and its seed generation program, written once: `Push.make_scene` calls
`generate` in process, and the sandbox runs this same text as the seed generation program of every run. So
it stays in the sandbox-clean subset: it imports only numpy and `sim.scene` and avoids `str.format` (the
sandbox forbids it). `FACTORS` declares the factor schema with each factor's facts (kind, hard side); the
loader reads it as a literal, the caller samples values from it and passes them to `generate` by name.
Placement comes entirely from the factors, so `rng` is unused here.
"""

import numpy as np

from sim.scene import ObjectSpec, Predicate, SceneSpec, factor_values, fill, grouped

FAMILY = "push"
FACTORS = (
    {"name": "template", "group": "task", "type": "int", "default": 0, "range": (0.0, 2.0),
     "ood_range": (0.0, 2.0), "kind": "language", "doc": "instruction template; OOD uses paraphrases"},
    {"name": "paraphrase", "group": "task", "type": "choice", "default": False, "choices": (False,),
     "ood_choices": (True,), "kind": "language", "doc": "use a paraphrased (unseen) instruction"},
    {"name": "obj_x", "group": "spatial", "type": "float", "default": 0.05, "range": (0.0, 0.1),
     "ood_range": (-0.06, 0.16), "kind": "subject_pos"},
    {"name": "obj_y", "group": "spatial", "type": "float", "default": -0.07, "range": (-0.09, -0.05),
     "ood_range": (-0.14, -0.03), "kind": "subject_pos", "doc": "the object starts on the robot's right"},
    {"name": "obj_yaw", "group": "spatial", "type": "float", "default": 0.0, "range": (-0.6, 0.6),
     "ood_range": (-1.5, 1.5), "kind": "subject_yaw"},
    {"name": "target_x", "group": "spatial", "type": "float", "default": 0.05, "range": (0.0, 0.1),
     "ood_range": (-0.06, 0.16), "kind": "target_pos"},
    {"name": "target_y", "group": "spatial", "type": "float", "default": 0.055, "range": (0.03, 0.08),
     "ood_range": (0.0, 0.13), "kind": "target_pos",
     "doc": "target y; pushed further +y when it would come within 3 cm of the object"},
    {"name": "shape", "group": "attribute", "type": "choice", "default": "cube",
     "choices": ("cube", "cylinder"), "ood_choices": ("block",), "kind": "subject_shape"},
    {"name": "size", "group": "attribute", "type": "float", "default": 0.02, "range": (0.018, 0.024),
     "ood_range": (0.014, 0.028), "kind": "subject_size", "doc": "half width of the object (m)"},
    {"name": "color", "group": "attribute", "type": "choice", "default": "red",
     "choices": ("red", "green", "blue"), "ood_choices": ("yellow", "purple", "orange"),
     "kind": "appearance"},
    {"name": "mass", "group": "attribute", "type": "float", "default": 0.1, "range": (0.05, 0.2),
     "ood_range": (0.05, 0.4), "kind": "mass", "hard_side": 1},
    {"name": "friction", "group": "attribute", "type": "float", "default": 1.0, "range": (0.8, 1.2),
     "ood_range": (0.5, 1.5), "kind": "friction", "hard_side": 1,
     "doc": "sliding friction of the object; pushing, unlike lifting, gets harder as it grows"},
    {"name": "target_size", "group": "attribute", "type": "float", "default": 0.03, "range": (0.028, 0.034),
     "ood_range": (0.022, 0.04), "kind": "target_size", "hard_side": -1,
     "doc": "half width of the target block (m)"},
    {"name": "target_color", "group": "attribute", "type": "choice", "default": "white",
     "choices": ("white", "gray", "brown"), "ood_choices": ("black", "cyan", "pink"), "kind": "appearance"},
)
COLORS = {"red": (0.85, 0.15, 0.12, 1), "green": (0.15, 0.7, 0.2, 1), "blue": (0.15, 0.3, 0.85, 1),
          "yellow": (0.95, 0.85, 0.1, 1), "purple": (0.55, 0.2, 0.7, 1), "orange": (0.95, 0.5, 0.1, 1),
          "white": (0.92, 0.92, 0.92, 1), "gray": (0.5, 0.5, 0.52, 1), "brown": (0.55, 0.4, 0.3, 1),
          "black": (0.1, 0.1, 0.1, 1), "cyan": (0.2, 0.75, 0.8, 1), "pink": (0.95, 0.55, 0.7, 1)}
# shape → (kind, (x, y, z) multipliers of the size factor)
PUSHABLE = {"cube": ("box", (1.0, 1.0, 1.0)), "cylinder": ("cylinder", (1.0, 1.2, 0.0)),
            "block": ("box", (1.6, 0.8, 1.0))}
OBJECT_WORDS = {"cube": "cube", "cylinder": "can", "block": "block"}
TEMPLATES = ("push the {obj} against the {tgt}", "slide the {obj} until it touches the {tgt}",
             "nudge the {obj} over to the {tgt}")
PARAPHRASES = ("could you shove the {obj} along the table into the {tgt}",
               "the {obj} should end up touching the {tgt}",
               "without picking it up, move the {obj} into the {tgt}")
TARGET_MASS = 2.0  # kg: heavy enough that the pushed object stops at it instead of shoving it away
CLEARANCE = 0.03  # least gap between the object and the target at the start (m)


def _object(v: dict) -> ObjectSpec:
    kind, (mx, my, mz) = PUSHABLE[v["shape"]]
    size = v["size"]
    return ObjectSpec(name="object", kind=kind, category=OBJECT_WORDS[v["shape"]],
                      size=(size * mx, size * my, size * mz), rgba=COLORS[v["color"]], mass=v["mass"],
                      friction=v["friction"], pos=(float(v["obj_x"]), float(v["obj_y"])),
                      yaw=float(v["obj_yaw"]))


def _separate(obj: ObjectSpec, target_xy: tuple, target_half: float) -> tuple:
    """Push the target along +y until its footprint clears the object's by `CLEARANCE` (only needed out
    of distribution, where the y ranges come close)."""
    r_obj = float(np.hypot(obj.size[0], obj.size[1] if obj.kind == "box" else obj.size[0]))
    need = r_obj + target_half * float(np.sqrt(2.0)) + CLEARANCE
    dx = target_xy[0] - obj.pos[0]
    dy_min = float(np.sqrt(max(need**2 - dx**2, 0.0)))
    return float(target_xy[0]), float(max(target_xy[1], obj.pos[1] + dy_min))


def generate(rng: np.random.Generator, **factors) -> SceneSpec:
    """One push scene: the object on the robot's right, the target block on its left."""
    v = factor_values(FACTORS, factors)
    obj = _object(v)
    half = float(v["target_size"])
    pos = _separate(obj, (v["target_x"], v["target_y"]), half)
    tgt = ObjectSpec(name="target", kind="box", category="block", size=(half, half, half),
                     rgba=COLORS[v["target_color"]], mass=TARGET_MASS, friction=1.0, pos=pos)
    words = (PARAPHRASES if v["paraphrase"] else TEMPLATES)[int(v["template"]) % 3]
    text = fill(words, obj=f"{v['color']} {OBJECT_WORDS[v['shape']]}", tgt=f"{v['target_color']} block")
    goal = Predicate(fn="in_contact", args=("object", "target"))
    return SceneSpec(family=FAMILY, instruction=text, objects=(obj, tgt), goal=(goal,),
                     factors=grouped(FACTORS, v), max_steps=250)
