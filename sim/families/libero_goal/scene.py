"""LIBERO-Goal: one kitchen scene, many goals — put the bowl, the cream cheese or the wine bottle somewhere,
or open the cabinet's middle drawer, in LIBERO's own world.

The family's scene builder and seed generation program (the sandbox runs this text): a scene names one
task of LIBERO's `libero_goal` suite (`SceneSpec.libero`). Every task of the suite starts from the same
objects and fixtures; only the goal and its words differ, so the task is what the words ask for. A program
may edit where the task's subject starts (`start`: in its own region, or swapped with a partner's,
LIBERO-Pro's kind of position change; `shift`: that region moved 5 cm on the table) and the instruction's
words (`wording`: the task file's own, or one of our paraphrases). The subject is the object the goal
carries, or for the drawer the wooden cabinet that holds it. In distribution the subject starts in its own
region or its first partner's, unmoved or moved one way, and the instruction is the file's or the first
paraphrase (two seen values each: a variant, a control, can move either); the other partners, directions
and paraphrases are the out-of-distribution shell. LIBERO builds the scene from the installed package's
BDDL (`sim.libero.world.libero_scene`) and samples each object's start inside its region from the seed.
The subject's partners are the objects and fixtures starting on a placement rectangle of the table, less
the goal's target (or the fixture a target region belongs to) and the one LIBERO-Pro's `libero_goal_swap`
file swaps the subject with (the benchmark's own perturbation stays held out; the paraphrases are not
`libero_goal_lan`'s wording); the subject's own kind comes first (objects for an object, fixtures for
the cabinet), each kind by name (`tests/sim/test_libero_goal_family.py` recomputes them).
Seven of the suite's ten tasks, those the scripted expert (`sim.libero.drawer.expert_for`) solves: the six
pick-place tasks and opening the middle drawer. Left out: "push the plate to the front of the stove" (its
goal reads as a pick-place, the plate cannot be grasped from above, and a push is not scripted: 0/10,
FINDINGS #32), "turn on the stove" (a knob: no expert) and "open the top drawer and put the bowl inside"
(opening then placing is not scripted; see `expert_for`).
Sandbox-clean subset: numpy and `sim.scene` only, no `str.format`; `FACTORS` is read as a literal.
"""

import numpy as np

from sim.scene import LiberoRef, Predicate, SceneSpec, factor_values, fill, grouped

FAMILY = "libero_goal"
SUITE = "libero_goal"
BOWL = "akita_black_bowl_1"
BOTTLE = "wine_bottle_1"
CABINET = "wooden_cabinet_1"
DRAWER = "wooden_cabinet_1/middle_level"  # the middle drawer's slide joint, as `sim.libero.world` names it
# LIBERO's "open" (the wooden cabinet's drawer pulled past 0.14 m) as a share of the slide's -0.01..0.16 m
# (`sim.libero.world.LiberoReader`'s joint range; a test checks it against the simulator)
OPENED = 0.882
# task → (task file, the file's instruction, goal (fn, subject, target), what it is, where it goes (our
# words), the subject's swap partners)
TASKS = {
    "bowl_on_plate": (
        "put_the_bowl_on_the_plate", "Put the bowl on the plate", ("on", BOWL, "plate_1"), "bowl",
        "on the plate", (BOTTLE, "flat_stove_1", "wine_rack_1", CABINET)),
    "bowl_on_stove": (
        "put_the_bowl_on_the_stove", "Put the bowl on the stove", ("on", BOWL, "flat_stove_1_cook_region"),
        "bowl", "on the stove", ("cream_cheese_1", "plate_1", "wine_rack_1", CABINET)),
    "bowl_on_cabinet": (
        "put_the_bowl_on_top_of_the_cabinet", "Put the bowl on the top of the drawer",
        ("on", BOWL, "wooden_cabinet_1_top_side"), "bowl", "on top of the cabinet",
        ("plate_1", BOTTLE, "flat_stove_1", "wine_rack_1")),
    "cheese_in_bowl": (
        "put_the_cream_cheese_in_the_bowl", "Put the cream cheese on the bowl",
        ("on", "cream_cheese_1", BOWL), "cream cheese", "in the bowl",
        ("plate_1", BOTTLE, "wine_rack_1", CABINET)),
    "bottle_on_rack": (
        "put_the_wine_bottle_on_the_rack", "Put the wine bottle on the rack",
        ("on", BOTTLE, "wine_rack_1_top_region"), "wine bottle", "on the rack",
        ("cream_cheese_1", "plate_1", "flat_stove_1", CABINET)),
    "bottle_on_cabinet": (
        "put_the_wine_bottle_on_top_of_the_cabinet", "Put the wine bottle on the top of the drawer",
        ("on", BOTTLE, "wooden_cabinet_1_top_side"), "wine bottle", "on top of the cabinet",
        ("cream_cheese_1", "plate_1", "flat_stove_1", "wine_rack_1")),
    "open_drawer": (
        "open_the_middle_drawer_of_the_cabinet", "Open the middle layer of the drawer",
        ("opened", DRAWER, OPENED), "middle drawer of the cabinet", "",
        ("flat_stove_1", BOWL, "cream_cheese_1", "plate_1", BOTTLE)),
}
SHIFTS = {"none": None, "plus_y": (0.0, 0.05), "minus_y": (0.0, -0.05), "plus_x": (0.05, 0.0),
          "minus_x": (-0.05, 0.0)}  # m, the subject's start region moved on the table
# wording → (an object put somewhere, the drawer opened)
PARAPHRASES = {"set": ("set the {obj} down {where}", "pull the {obj} open"),
               "should": ("the {obj} should end up {where}", "the {obj} should end up open"),
               "leave": ("carry the {obj} over and leave it {where}", "slide the {obj} out all the way")}
FACTORS = (
    {"name": "task", "group": "task", "type": "choice", "default": "bowl_on_plate",
     "choices": ("bowl_on_plate", "bowl_on_stove", "bowl_on_cabinet", "cheese_in_bowl", "bottle_on_rack",
                 "bottle_on_cabinet", "open_drawer"),
     "kind": "task_kind", "variant_pins": False,
     "doc": "what the goal asks for (the suite's task; `TASKS`' keys)"},
    {"name": "wording", "group": "task", "type": "choice", "default": "bddl", "choices": ("bddl", "set"),
     "ood_choices": ("should", "leave"), "kind": "language",
     "doc": "the task file's instruction or our first paraphrase; the other paraphrases are unseen"},
    {"name": "start", "group": "spatial", "type": "choice", "default": "own", "choices": ("own", "swap1"),
     "ood_choices": ("swap2", "swap3"), "kind": "subject_pos",
     "doc": "the subject (the object carried, or the drawer's cabinet) starts in its own region or in its "
            "k-th swap partner's (which takes the subject's); partners 2-3 are unseen"},
    {"name": "shift", "group": "spatial", "type": "choice", "default": "none", "choices": ("none", "plus_y"),
     "ood_choices": ("minus_y", "plus_x", "minus_x"), "kind": "subject_pos",
     "doc": "the region the subject starts in (after any swap) moved 5 cm along the table's x or y axis, "
            "or not; three of the four directions are unseen"},
)


def generate(rng: np.random.Generator, **factors) -> SceneSpec:
    """One LIBERO-Goal scene; LIBERO samples the starts, so `rng` is unused here."""
    v = factor_values(FACTORS, factors)
    task, words, goal, obj, where, partners = TASKS[v["task"]]
    swap = None if v["start"] == "own" else partners[int(v["start"][4:]) - 1]
    move = SHIFTS[v["shift"]]
    drawer = goal[0] == "opened"
    if v["wording"] != "bddl":
        words = fill(PARAPHRASES[v["wording"]][1 if drawer else 0], obj=obj, where=where)
    mover = CABINET if drawer and (swap is not None or move is not None) else None
    ref = LiberoRef(suite=SUITE, task=task, swap=swap, move=move, mover=mover)
    return SceneSpec(family=FAMILY, instruction=words, objects=(),
                     goal=(Predicate(fn=goal[0], args=goal[1:]),), factors=grouped(FACTORS, v),
                     max_steps=300, libero=ref)
