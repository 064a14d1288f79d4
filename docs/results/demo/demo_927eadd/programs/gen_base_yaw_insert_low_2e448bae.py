# ====================================================================================================
# CoDA generation program gen_base_yaw_insert_low_2e448bae
#
#   family      stack_insert
#   mode        base_yaw_insert_low
#   round       1
#   parent      bb24c983 (bb24c98398f2760dd6eeb245bf286cb1f7f8e3397d23d63b548b7eadba1ee317)
#   id          2e448bae964776c36e45699ebf691284740570b5f5a1ec31506335723be2ada8
#   diagnosis   mode base_yaw_insert_low: spatial.base_yaw (low side) during insert: The attempt
#               failed in insert with base_yaw = -0.587 (outside the ID range (low)): the piece was
#               0.25 rad out of square with the target.
#
# Factors (17): the caller draws each from its range / choices (or, for OOD
# evaluation, from the OOD part) and calls generate(rng, **factors).
#
#   name       group     type   default in distribution    OOD                    doc
#   task       task      choice stack   stack, insert      -                      stack block A on block B, or insert the peg into the hole block
#   template   task      int    0       [0, 2]             [0, 2]                 instruction template; OOD uses paraphrases
#   paraphrase task      choice False   False              True                   use a paraphrased (unseen) instruction
#   piece_x    spatial   float  0.05    [-0.02, 0.12]      [-0.05, 0.18]
#   piece_y    spatial   float  -0.12   [-0.2, -0.07]      [-0.26, -0.05]         the piece (block A / peg) starts on the robot's right
#   piece_yaw  spatial   float  0.0     [-0.6, 0.6]        [-1.5, 1.5]
#   base_x     spatial   float  0.05    [-0.02, 0.12]      [-0.05, 0.18]
#   base_y     spatial   float  0.12    [0.07, 0.2]        [0.05, 0.26]           block B / the hole block stands on the robot's left
#   base_yaw   spatial   float  -0.7    [-0.7, -0.7]       [-0.7, 0.7]
#   block_size attribute float  0.02    [0.018, 0.022]     [0.015, 0.026]         half width of block A (m)
#   base_size  attribute float  0.027   [0.025, 0.03]      [0.021, 0.035]         half width of block B (m)
#   peg_size   attribute float  0.0125  [0.012, 0.013]     [0.011, 0.014]         half width of the peg (m); its height is 5.2× this
#   hole       attribute float  0.034   [0.033, 0.035]     [0.03, 0.037]          hole width (m): OOD includes tighter clearance
#   color      attribute choice red     red, green, blue   yellow, purple, orange colour of the piece
#   base_color attribute choice white   white, gray, brown black, cyan, pink      colour of block B / the hole block
#   mass       attribute float  0.1     [0.05, 0.2]        [0.05, 0.4]
#   friction   attribute float  1.0     [0.8, 1.2]         [0.5, 1.2]
#
# Written by CoDA. The .json beside this file holds the same program and is what CoDA loads; the
# source below runs only in the sandbox.
# ====================================================================================================
"""Stack-insert: put block A on block B, or push a square peg into the hole of a fixed hole block.

The family's scene builder and its seed generation program, written once: `StackInsert.make_scene` calls
`generate` in process, and the sandbox runs this same text as the seed generation program of every run. So
it stays in the sandbox-clean subset: it imports only numpy and `sim.scene`, and avoids `str.format` (the
sandbox forbids it). `FACTORS` declares the factor schema with each factor's facts (kind, hard side); the
loader reads it as a literal, the caller samples values from it and passes them to `generate` by name.
Placement comes entirely from the factors, so `rng` is unused here.
"""

import numpy as np

from sim.scene import FixtureSpec, ObjectSpec, Predicate, SceneSpec, factor_values, fill, grouped

FAMILY = "stack_insert"
FACTORS = (
    {"name": "task", "group": "task", "type": "choice", "default": "stack", "choices": ("stack", "insert"),
     "kind": "target_kind", "doc": "stack block A on block B, or insert the peg into the hole block"},
    {"name": "template", "group": "task", "type": "int", "default": 0, "range": (0.0, 2.0),
     "ood_range": (0.0, 2.0), "kind": "language", "doc": "instruction template; OOD uses paraphrases"},
    {"name": "paraphrase", "group": "task", "type": "choice", "default": False, "choices": (False,),
     "ood_choices": (True,), "kind": "language", "doc": "use a paraphrased (unseen) instruction"},
    {"name": "piece_x", "group": "spatial", "type": "float", "default": 0.05, "range": (-0.02, 0.12),
     "ood_range": (-0.05, 0.18), "kind": "subject_pos"},
    {"name": "piece_y", "group": "spatial", "type": "float", "default": -0.12, "range": (-0.2, -0.07),
     "ood_range": (-0.26, -0.05), "kind": "subject_pos",
     "doc": "the piece (block A / peg) starts on the robot's right"},
    {"name": "piece_yaw", "group": "spatial", "type": "float", "default": 0.0, "range": (-0.6, 0.6),
     "ood_range": (-1.5, 1.5), "kind": "subject_yaw"},
    {"name": "base_x", "group": "spatial", "type": "float", "default": 0.05, "range": (-0.02, 0.12),
     "ood_range": (-0.05, 0.18), "kind": "target_pos"},
    {"name": "base_y", "group": "spatial", "type": "float", "default": 0.12, "range": (0.07, 0.2),
     "ood_range": (0.05, 0.26), "kind": "target_pos",
     "doc": "block B / the hole block stands on the robot's left"},
    {"name": "base_yaw", "group": "spatial", "type": "float", "default": -0.7, "range": (-0.7, -0.7),
     "ood_range": (-0.7, 0.7), "kind": "target_yaw"},
    {"name": "block_size", "group": "attribute", "type": "float", "default": 0.02, "range": (0.018, 0.022),
     "ood_range": (0.015, 0.026), "kind": "subject_size", "doc": "half width of block A (m)"},
    {"name": "base_size", "group": "attribute", "type": "float", "default": 0.027, "range": (0.025, 0.03),
     "ood_range": (0.021, 0.035), "kind": "target_size", "hard_side": -1, "doc": "half width of block B (m)"},
    {"name": "peg_size", "group": "attribute", "type": "float", "default": 0.0125, "range": (0.012, 0.013),
     "ood_range": (0.011, 0.014), "kind": "subject_size", "hard_side": 1,
     "hard_phases": ("align", "insert", "place", "release"),
     "doc": "half width of the peg (m); its height is 5.2\u00d7 this"},
    {"name": "hole", "group": "attribute", "type": "float", "default": 0.034, "range": (0.033, 0.035),
     "ood_range": (0.03, 0.037), "kind": "target_size", "hard_side": -1,
     "doc": "hole width (m): OOD includes tighter clearance"},
    {"name": "color", "group": "attribute", "type": "choice", "default": "red",
     "choices": ("red", "green", "blue"), "ood_choices": ("yellow", "purple", "orange"), "kind": "appearance",
     "doc": "colour of the piece"},
    {"name": "base_color", "group": "attribute", "type": "choice", "default": "white",
     "choices": ("white", "gray", "brown"), "ood_choices": ("black", "cyan", "pink"), "kind": "appearance",
     "doc": "colour of block B / the hole block"},
    {"name": "mass", "group": "attribute", "type": "float", "default": 0.1, "range": (0.05, 0.2),
     "ood_range": (0.05, 0.4), "kind": "mass", "hard_side": 1},
    {"name": "friction", "group": "attribute", "type": "float", "default": 1.0, "range": (0.8, 1.2),
     "ood_range": (0.5, 1.2), "kind": "friction", "hard_side": -1},
)
PIECE, BASE, PEG, HOLE = "block_a", "block_b", "peg", "holeblock"
COLORS = {"red": (0.85, 0.15, 0.12, 1), "green": (0.15, 0.7, 0.2, 1), "blue": (0.15, 0.3, 0.85, 1),
          "yellow": (0.95, 0.85, 0.1, 1), "purple": (0.55, 0.2, 0.7, 1), "orange": (0.95, 0.5, 0.1, 1)}
# block B / the hole block wear colours no piece can have, so an instruction never names two alike
BASE_COLORS = {"white": (0.92, 0.92, 0.92, 1), "gray": (0.5, 0.5, 0.52, 1), "brown": (0.55, 0.4, 0.3, 1),
               "black": (0.1, 0.1, 0.1, 1), "cyan": (0.2, 0.75, 0.8, 1), "pink": (0.95, 0.55, 0.7, 1)}
TEMPLATES = {
    "stack": ("put the {a} block on the {b} block", "stack the {a} block on top of the {b} block",
              "place the {a} block onto the {b} block"),
    "insert": ("insert the {a} peg into the hole of the {b} block", "put the {a} peg in the {b} block's hole",
               "place the {a} peg into the {b} hole block"),
}
PARAPHRASES = {
    "stack": ("could you set the {a} block on top of the {b} one", "the {b} block needs the {a} block on it",
              "build a small tower with the {a} block above the {b} block"),
    "insert": ("could you slot the {a} peg into the {b} block", "the hole in the {b} block needs the {a} peg",
               "fit the {a} peg down into the square opening of the {b} block"),
}
HOLE_HEIGHT = 0.05  # hole block height (m)
BASE_MASS = 0.3  # kg; heavier than any piece so that placing on it does not shove it
PEG_HEIGHT = 2.6  # peg half height relative to its half width


def _box(name: str, category: str, half: tuple, rgba, mass: float, friction: float, pos: tuple,
         yaw: float) -> ObjectSpec:
    return ObjectSpec(name=name, kind="box", category=category, size=half, rgba=tuple(rgba), mass=mass,
                      friction=friction, pos=(float(pos[0]), float(pos[1])), yaw=float(yaw))


def generate(rng: np.random.Generator, **factors) -> SceneSpec:
    """One scene: the piece on the robot's right, block B or the hole block on its left."""
    v = factor_values(FACTORS, factors)
    pos, base_pos = (v["piece_x"], v["piece_y"]), (v["base_x"], v["base_y"])
    color = COLORS[v["color"]]
    fixtures = ()
    if v["task"] == "stack":
        s, b = v["block_size"], v["base_size"]
        a = _box(PIECE, "cube", (s, s, s), color, v["mass"], v["friction"], pos, v["piece_yaw"])
        base = _box(BASE, "cube", (b, b, b), BASE_COLORS[v["base_color"]], BASE_MASS, v["friction"], base_pos,
                    v["base_yaw"])
        objects, goal = (a, base), Predicate(fn="stacked", args=(PIECE, BASE))
    else:
        p = v["peg_size"]
        peg = _box(PEG, "peg", (p, p, p * PEG_HEIGHT), color, v["mass"], v["friction"], pos, v["piece_yaw"])
        hole = FixtureSpec(name=HOLE, kind="hole_block", pos=base_pos, yaw=v["base_yaw"],
                           rgba=BASE_COLORS[v["base_color"]],
                           params={"hole": v["hole"], "outer": 0.1, "height": HOLE_HEIGHT})
        objects, fixtures, goal = (peg,), (hole,), Predicate(fn="inserted", args=(PEG, HOLE))
    words = (PARAPHRASES if v["paraphrase"] else TEMPLATES)[v["task"]][int(v["template"]) % 3]
    text = fill(words, a=v["color"], b=v["base_color"])
    return SceneSpec(family=FAMILY, instruction=text, objects=objects, fixtures=fixtures, goal=(goal,),
                     factors=grouped(FACTORS, v), max_steps=200)
