"""Pick-place: put a graspable object onto a plate.

The family's scene builder and its seed generation program, written once: `PickPlace.make_scene` calls
`generate` in process, and the sandbox runs this same text as the seed generation program of every run. So
it stays in the sandbox-clean subset: it imports only numpy and `sim.scene`, and avoids `str.format` (the
sandbox forbids it). `FACTORS` declares the factor schema with each factor's facts (kind, hard side); the
loader reads it as a literal, the caller samples values from it and passes them to `generate` by name.
Placement comes entirely from the factors, so `rng` is unused here.
"""

import numpy as np

from sim.scene import ObjectSpec, Predicate, SceneSpec, factor_values, fill, grouped

FAMILY = "pick_place"
FACTORS = (
    {"name": "target", "group": "task", "type": "choice", "default": "plate", "choices": ("plate",),
     "ood_choices": ("yellow_plate", "big_plate"), "kind": "target_size", "doc": "destination object"},
    {"name": "template", "group": "task", "type": "int", "default": 0, "range": (0.0, 2.0),
     "ood_range": (0.0, 2.0), "kind": "language", "doc": "instruction template; OOD uses paraphrases"},
    {"name": "paraphrase", "group": "task", "type": "choice", "default": False, "choices": (False,),
     "ood_choices": (True,), "kind": "language", "doc": "use a paraphrased (unseen) instruction"},
    {"name": "obj_x", "group": "spatial", "type": "float", "default": 0.05, "range": (-0.04, 0.12),
     "ood_range": (-0.1, 0.2), "kind": "subject_pos"},
    {"name": "obj_y", "group": "spatial", "type": "float", "default": -0.12, "range": (-0.2, -0.06),
     "ood_range": (-0.28, -0.02), "kind": "subject_pos"},
    {"name": "target_x", "group": "spatial", "type": "float", "default": 0.05, "range": (-0.04, 0.12),
     "ood_range": (-0.1, 0.2), "kind": "target_pos"},
    {"name": "target_y", "group": "spatial", "type": "float", "default": 0.12, "range": (0.06, 0.2),
     "ood_range": (0.0, 0.28), "kind": "target_pos",
     "doc": "target y; pushed further +y when it would overlap the object (only happens out of "
            "distribution)"},
    {"name": "obj_yaw", "group": "spatial", "type": "float", "default": 0.0, "range": (-0.6, 0.6),
     "ood_range": (-1.5, 1.5), "kind": "subject_yaw"},
    {"name": "shape", "group": "attribute", "type": "choice", "default": "cube",
     "choices": ("cube", "cylinder"), "ood_choices": ("block", "tall_cylinder"), "kind": "subject_shape"},
    {"name": "size", "group": "attribute", "type": "float", "default": 0.02, "range": (0.018, 0.024),
     "ood_range": (0.014, 0.028), "kind": "subject_size", "doc": "half width of the object (m)"},
    {"name": "color", "group": "attribute", "type": "choice", "default": "red",
     "choices": ("red", "green", "blue"), "ood_choices": ("yellow", "purple", "orange"),
     "kind": "appearance"},
    {"name": "mass", "group": "attribute", "type": "float", "default": 0.1, "range": (0.05, 0.2),
     "ood_range": (0.05, 0.4), "kind": "mass", "hard_side": 1},
    {"name": "friction", "group": "attribute", "type": "float", "default": 1.0, "range": (0.8, 1.2),
     "ood_range": (0.5, 1.2), "kind": "friction", "hard_side": -1},
)
COLORS = {"red": (0.85, 0.15, 0.12, 1), "green": (0.15, 0.7, 0.2, 1), "blue": (0.15, 0.3, 0.85, 1),
          "yellow": (0.95, 0.85, 0.1, 1), "purple": (0.55, 0.2, 0.7, 1), "orange": (0.95, 0.5, 0.1, 1)}
# shape → (kind, (x, y, z) multipliers of the size factor)
PICKABLE = {"cube": ("box", (1.0, 1.0, 1.0)), "cylinder": ("cylinder", (1.0, 1.2, 0.0)),
            "block": ("box", (1.6, 0.8, 1.0)), "tall_cylinder": ("cylinder", (0.85, 1.9, 0.0))}
OBJECT_WORDS = {"cube": "cube", "cylinder": "can", "block": "block", "tall_cylinder": "bottle"}
TEMPLATES = ("put the {obj} on the {tgt}", "place the {obj} onto the {tgt}",
             "pick up the {obj} and set it on the {tgt}")
PARAPHRASES = ("could you move the {obj} so it sits on the {tgt}", "the {tgt} needs the {obj} on it",
               "grab the {obj}, then leave it resting on top of the {tgt}")
TARGETS = {"plate": ("plate", 1.0), "yellow_plate": ("yellow_plate", 1.0), "big_plate": ("plate", 1.25)}
PLATE_RADIUS = 0.069  # LIBERO plate at scale 1 (m)


def _pickable(name: str, v: dict) -> ObjectSpec:
    kind, (mx, my, mz) = PICKABLE[v["shape"]]
    size = v["size"]
    return ObjectSpec(name=name, kind=kind, category=OBJECT_WORDS[v["shape"]],
                      size=(size * mx, size * my, size * mz), rgba=COLORS[v["color"]], mass=v["mass"],
                      friction=v["friction"], pos=(float(v["obj_x"]), float(v["obj_y"])),
                      yaw=float(v["obj_yaw"]))


def _separate(obj: ObjectSpec, target_xy: tuple, target_radius: float) -> tuple:
    """Push the target along +y until it clears the object by 2 cm (only needed out of distribution,
    where the y ranges may overlap)."""
    r_obj = float(np.hypot(obj.size[0], obj.size[1] if obj.kind == "box" else obj.size[0]))
    need = r_obj + target_radius + 0.02
    dx = target_xy[0] - obj.pos[0]
    dy_min = float(np.sqrt(max(need**2 - dx**2, 0.0)))
    return float(target_xy[0]), float(max(target_xy[1], obj.pos[1] + dy_min))


def generate(rng: np.random.Generator, **factors) -> SceneSpec:
    """One pick-place scene: the object on the robot's right, the plate on its left."""
    v = factor_values(FACTORS, factors)
    obj = _pickable("object", v)
    asset, scale = TARGETS[v["target"]]
    pos = _separate(obj, (v["target_x"], v["target_y"]), PLATE_RADIUS * scale)
    tgt = ObjectSpec(name="target", kind="mesh", asset=asset, category="plate", size=(scale, 1, 1), mass=0.3,
                     pos=pos)
    words = (PARAPHRASES if v["paraphrase"] else TEMPLATES)[int(v["template"]) % 3]
    text = fill(words, obj=f"{v['color']} {OBJECT_WORDS[v['shape']]}", tgt=v["target"].replace("_", " "))
    goal = Predicate(fn="on", args=("object", "target"))
    return SceneSpec(family=FAMILY, instruction=text, objects=(obj, tgt), goal=(goal,),
                     factors=grouped(FACTORS, v), max_steps=200)
