"""Put-inside: put a graspable object inside a container: an open bin, a LIBERO bowl, or (out of distribution)
the open drawer of a cabinet.

The family's scene builder and its seed generation program, written once: `PutInside.make_scene` calls
`generate` in process, and the sandbox runs this same text as the seed generation program of every run. So
it stays in the sandbox-clean subset: it imports only math, numpy and `sim.scene` and avoids `str.format`
(the sandbox forbids it). Fixture dimensions are copied from `sim.fixtures.DEFAULTS` (a test checks they
agree). `FACTORS` declares the factor schema with each factor's facts (kind, hard side); the loader reads it
as a literal, the caller samples values from it and passes them to `generate` by name. `rng` is unused.
"""

import math

import numpy as np

from sim.scene import FixtureSpec, ObjectSpec, Predicate, SceneSpec, factor_values, fill, grouped

FAMILY = "put_inside"
FACTORS = (
    {"name": "container", "group": "task", "type": "choice", "default": "bin",
     "choices": ("bin", "black_bowl"), "ood_choices": ("drawer", "white_bowl"), "kind": "target_kind",
     "doc": "the container; OOD an open drawer or another bowl"},
    {"name": "template", "group": "task", "type": "int", "default": 0, "range": (0.0, 2.0),
     "ood_range": (0.0, 2.0), "kind": "language", "doc": "instruction template; OOD uses paraphrases"},
    {"name": "paraphrase", "group": "task", "type": "choice", "default": False, "choices": (False,),
     "ood_choices": (True,), "kind": "language", "doc": "use a paraphrased (unseen) instruction"},
    {"name": "obj_x", "group": "spatial", "type": "float", "default": 0.05, "range": (-0.04, 0.12),
     "ood_range": (-0.1, 0.2), "kind": "subject_pos"},
    {"name": "obj_y", "group": "spatial", "type": "float", "default": -0.15, "range": (-0.2, -0.1),
     "ood_range": (-0.27, -0.06), "kind": "subject_pos"},
    {"name": "obj_yaw", "group": "spatial", "type": "float", "default": 0.0, "range": (-0.6, 0.6),
     "ood_range": (-1.5, 1.5), "kind": "subject_yaw"},
    {"name": "container_x", "group": "spatial", "type": "float", "default": 0.06, "range": (0.0, 0.12),
     "ood_range": (-0.05, 0.2), "kind": "target_pos",
     "doc": "x of the container's centre (for a drawer: of its open part)"},
    {"name": "container_y", "group": "spatial", "type": "float", "default": 0.14, "range": (0.1, 0.18),
     "ood_range": (0.04, 0.26), "kind": "target_pos",
     "doc": "y of the container's centre; pushed to +y if it would overlap the object"},
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
    {"name": "container_color", "group": "attribute", "type": "choice", "default": "blue",
     "choices": ("blue", "green", "white"), "ood_choices": ("yellow", "purple", "orange"),
     "kind": "appearance", "doc": "bin / cabinet colour (bowls keep their texture)"},
    {"name": "container_size", "group": "attribute", "type": "float", "default": 1.0, "range": (0.95, 1.1),
     "ood_range": (0.85, 1.3), "kind": "target_size", "hard_side": -1,
     "doc": "bin / bowl scale; a bowl never shrinks below what fits the object"},
)
COLORS = {"red": (0.85, 0.15, 0.12, 1), "green": (0.15, 0.7, 0.2, 1), "blue": (0.15, 0.3, 0.85, 1),
          "yellow": (0.95, 0.85, 0.1, 1), "purple": (0.55, 0.2, 0.7, 1), "orange": (0.95, 0.5, 0.1, 1),
          "white": (0.92, 0.92, 0.92, 1)}
PICKABLE = {"cube": ("box", (1.0, 1.0, 1.0)), "cylinder": ("cylinder", (1.0, 1.2, 0.0)),
            "block": ("box", (1.6, 0.8, 1.0)), "tall_cylinder": ("cylinder", (0.85, 1.9, 0.0))}
OBJECT_WORDS = {"cube": "cube", "cylinder": "can", "block": "block", "tall_cylinder": "bottle"}
TEMPLATES = ("put the {obj} in the {cont}", "place the {obj} inside the {cont}",
             "drop the {obj} into the {cont}")
PARAPHRASES = ("could you stow the {obj} in the {cont}", "the {obj} belongs inside the {cont}",
               "pick up the {obj} and tuck it away in the {cont}")
# bowl → (asset, words, rim, inner floor radius, floor height, outer radius, base scale), at scale 1 (m)
BOWLS = {"black_bowl": ("akita_black_bowl", "black bowl", 0.0505, 0.032, 0.005, 0.0536, 1.35),
         "white_bowl": ("white_bowl", "white bowl", 0.0345, 0.023, 0.0035, 0.0406, 1.8)}
BIN_INNER = (0.10, 0.085)  # bin inner half extents (x, y) at container_size 1
BIN_WALL = 0.008
CAB_WIDTH, CAB_DEPTH, CAB_TRAVEL, CAB_WALL = 0.56, 0.28, 0.16, 0.01  # the wide cabinet of the drawer case
_DRAWER_X = -CAB_TRAVEL - 0.5 * CAB_WALL  # the open drawer region's centre, cabinet frame
_INNER_FRONT = _DRAWER_X - (CAB_DEPTH / 2 - CAB_WALL) + CAB_WALL
DRAWER_DX = (_INNER_FRONT - CAB_DEPTH / 2) / 2  # centre of the drawer's exposed part
DRAWER_DY = -(CAB_WALL / 2 + (CAB_WIDTH / 2 - 1.5 * CAB_WALL) / 2)  # drawer0's centre
GAP = 0.02  # least clearance between the object and the container's footprint at the start (m)
HAND_CLEAR = 0.12  # least distance from the object's centre to the cabinet (m)


def _pickable(name: str, v: dict) -> ObjectSpec:
    kind, (mx, my, mz) = PICKABLE[v["shape"]]
    size = v["size"]
    return ObjectSpec(name=name, kind=kind, category=OBJECT_WORDS[v["shape"]],
                      size=(size * mx, size * my, size * mz), rgba=COLORS[v["color"]], mass=v["mass"],
                      friction=v["friction"], pos=(float(v["obj_x"]), float(v["obj_y"])),
                      yaw=float(v["obj_yaw"]))


def _dims(o: ObjectSpec) -> tuple:
    """(footprint radius at any yaw, half height) of a box or cylinder."""
    if o.kind == "box":
        return math.hypot(o.size[0], o.size[1]), o.size[2]
    return o.size[0], o.size[1]


def _bowl_scale(bowl: tuple, obj: ObjectSpec, size: float) -> float:
    """The bowl's scale: `size` times its base scale, raised until the object fits its inner floor and
    sits at least 8 mm below the rim."""
    _, _, rim, inner, floor, _, base = bowl
    r, hz = _dims(obj)
    return max(base * size, (r + 0.004) / inner, (hz + 0.008) / (rim - floor))


def _container(v: dict, obj: ObjectSpec) -> tuple:
    """(objects, fixtures, goal container name, instruction words); pushed to +y if it would crowd the
    object."""
    kind, size, rgba = v["container"], v["container_size"], COLORS[v["container_color"]]
    if kind in BOWLS:
        scale = _bowl_scale(BOWLS[kind], obj, size)
        reach = BOWLS[kind][5] * scale
    elif kind == "bin":
        reach = BIN_INNER[1] * size + BIN_WALL
    else:
        reach = CAB_WIDTH / 2 + DRAWER_DY
    clear = HAND_CLEAR if kind == "drawer" else _dims(obj)[0] + 0.02
    x, y = v["container_x"], max(v["container_y"], v["obj_y"] + clear + reach)
    if kind in BOWLS:
        bowl = ObjectSpec(name="bowl", kind="mesh", asset=BOWLS[kind][0], category="bowl", size=(scale, 1, 1),
                          mass=0.3, pos=(x, y))
        return (bowl,), (), "bowl", BOWLS[kind][1]
    if kind == "bin":
        f = FixtureSpec(name="bin", kind="bin", pos=(x, y), rgba=rgba,
                        params={"inner_x": BIN_INNER[0] * size, "inner_y": BIN_INNER[1] * size})
        return (), (f,), "bin", f"{v['container_color']} bin"
    f = FixtureSpec(name="cabinet", kind="cabinet", pos=(x - DRAWER_DX, y - DRAWER_DY), rgba=rgba,
                    params={"width": CAB_WIDTH}, init={"drawer0": 1.0})
    return (), (f,), "cabinet/drawer0", "open drawer"


def generate(rng: np.random.Generator, **factors) -> SceneSpec:
    """One scene: the object on the robot's right, the container on its left."""
    v = factor_values(FACTORS, factors)
    obj = _pickable("object", v)
    objects, fixtures, goal, cont = _container(v, obj)
    words = (PARAPHRASES if v["paraphrase"] else TEMPLATES)[int(v["template"]) % 3]
    text = fill(words, obj=f"{v['color']} {OBJECT_WORDS[v['shape']]}", cont=cont)
    return SceneSpec(family=FAMILY, instruction=text, objects=(obj, *objects), fixtures=fixtures,
                     goal=(Predicate(fn="inside", args=("object", goal)),), factors=grouped(FACTORS, v),
                     max_steps=250)
