"""LIBERO-Object: pick up one grocery item and place it in the basket, in LIBERO's own world.

The family's scene builder and seed generation program (the sandbox runs this text): a scene names one
task of LIBERO's `libero_object` suite (`SceneSpec.libero`) with three edits a program may make — where the
item starts (`start`: in its own region, or swapped with another item's, LIBERO-Pro's kind of position
change; `shift`: that region moved 5 cm on the floor) and the instruction's words (`wording`: the task
file's own, or one of our paraphrases). In distribution an item starts in its own region or its first
partner's, unmoved or moved one way, and the instruction is the file's or the first paraphrase (two seen
values each: a variant, a control, can move either); the other partners, directions and paraphrases are
the out-of-distribution shell. LIBERO builds the scene from the installed package's BDDL
(`sim.libero.world.libero_scene`) and samples each object's start inside its region from the scene's seed.
The swap partners exclude the one LIBERO-Pro's `libero_object_swap` file uses for the task, and the
paraphrases are not `libero_object_lan`'s wording: the benchmark's own perturbations stay held out
(`tests/sim/test_libero_family.py` recomputes the table below from LIBERO's and LIBERO-Pro's files).
LIBERO-Pro's object perturbation (a recoloured or resized item) is not an edit here: LIBERO ships one such
variant for most items, and it is the one the benchmark uses.
Sandbox-clean subset: numpy and `sim.scene` only, no `str.format`; `FACTORS` is read as a literal.
"""

import numpy as np

from sim.scene import LiberoRef, Predicate, SceneSpec, factor_values, fill, grouped

FAMILY = "libero_object"
SUITE = "libero_object"
TARGET = "basket_1_contain_region"
# item → (task, object of interest, the task file's instruction, swap partners (sorted))
TASKS = {
    "alphabet_soup": ("pick_up_the_alphabet_soup_and_place_it_in_the_basket", "alphabet_soup_1",
                      "Pick the alphabet soup and place it in the basket",
                      ("cream_cheese_1", "milk_1", "salad_dressing_1", "tomato_sauce_1")),
    "cream_cheese": ("pick_up_the_cream_cheese_and_place_it_in_the_basket", "cream_cheese_1",
                     "Pick the cream cheese and place it in the basket",
                     ("butter_1", "milk_1", "orange_juice_1", "tomato_sauce_1")),
    "salad_dressing": ("pick_up_the_salad_dressing_and_place_it_in_the_basket", "salad_dressing_1",
                       "Pick the salad dressing and place it in the basket",
                       ("alphabet_soup_1", "cream_cheese_1", "ketchup_1", "milk_1")),
    "bbq_sauce": ("pick_up_the_bbq_sauce_and_place_it_in_the_basket", "bbq_sauce_1",
                  "Pick the bbq sauce and place it in the basket",
                  ("alphabet_soup_1", "cream_cheese_1", "ketchup_1", "salad_dressing_1")),
    "ketchup": ("pick_up_the_ketchup_and_place_it_in_the_basket", "ketchup_1",
                "Pick the ketchup and place it in the basket",
                ("alphabet_soup_1", "bbq_sauce_1", "milk_1", "salad_dressing_1")),
    "tomato_sauce": ("pick_up_the_tomato_sauce_and_place_it_in_the_basket", "tomato_sauce_1",
                     "Pick the tomato sauce and place it in the basket",
                     ("bbq_sauce_1", "butter_1", "chocolate_pudding_1", "orange_juice_1")),
    "butter": ("pick_up_the_butter_and_place_it_in_the_basket", "butter_1",
               "Pick the butter and place it in the basket",
               ("bbq_sauce_1", "chocolate_pudding_1", "ketchup_1", "orange_juice_1")),
    "milk": ("pick_up_the_milk_and_place_it_in_the_basket", "milk_1",
             "Pick the milk and place it in the basket",
             ("butter_1", "chocolate_pudding_1", "orange_juice_1", "tomato_sauce_1")),
    "chocolate_pudding": ("pick_up_the_chocolate_pudding_and_place_it_in_the_basket", "chocolate_pudding_1",
                          "Pick the chocolate pudding and place it in the basket",
                          ("alphabet_soup_1", "bbq_sauce_1", "orange_juice_1", "salad_dressing_1")),
    "orange_juice": ("pick_up_the_orange_juice_and_place_it_in_the_basket", "orange_juice_1",
                     "Pick the orange juice and place it in the basket",
                     ("bbq_sauce_1", "butter_1", "ketchup_1", "salad_dressing_1")),
}
SHIFTS = {"none": None, "plus_y": (0.0, 0.05), "minus_y": (0.0, -0.05), "plus_x": (0.05, 0.0),
          "minus_x": (-0.05, 0.0)}  # m, the item's start region moved on the floor (a region's width)
PARAPHRASES = {"put": "put the {obj} into the basket", "needs": "the basket needs the {obj} in it",
               "grab": "grab the {obj} and drop it in the basket"}
FACTORS = (
    {"name": "task", "group": "task", "type": "choice", "default": "alphabet_soup",
     "choices": ("alphabet_soup", "cream_cheese", "salad_dressing", "bbq_sauce", "ketchup", "tomato_sauce",
                 "butter", "milk", "chocolate_pudding", "orange_juice"),
     "kind": "task_kind", "variant_pins": False,
     "doc": "which item goes into the basket (the suite's task; `TASKS`' keys)"},
    {"name": "wording", "group": "task", "type": "choice", "default": "bddl", "choices": ("bddl", "put"),
     "ood_choices": ("needs", "grab"), "kind": "language",
     "doc": "the task file's instruction or our first paraphrase; the other paraphrases are unseen"},
    {"name": "start", "group": "spatial", "type": "choice", "default": "own", "choices": ("own", "swap1"),
     "ood_choices": ("swap2", "swap3", "swap4"), "kind": "subject_pos",
     "doc": "the item starts in its own region or in its k-th swap partner's (which takes the item's); "
            "partners 2-4 are unseen"},
    {"name": "shift", "group": "spatial", "type": "choice", "default": "none", "choices": ("none", "plus_y"),
     "ood_choices": ("minus_y", "plus_x", "minus_x"), "kind": "subject_pos",
     "doc": "the region the item starts in (after any swap) moved 5 cm along the floor's x or y axis, or "
            "not; three of the four directions are unseen"},
)


def generate(rng: np.random.Generator, **factors) -> SceneSpec:
    """One LIBERO-Object scene; LIBERO samples the starts, so `rng` is unused here."""
    v = factor_values(FACTORS, factors)
    task, subject, words, partners = TASKS[v["task"]]
    swap = None if v["start"] == "own" else partners[int(v["start"][4:]) - 1]
    move = SHIFTS[v["shift"]]
    item = v["task"].replace("_", " ")
    text = words if v["wording"] == "bddl" else fill(PARAPHRASES[v["wording"]], obj=item)
    return SceneSpec(family=FAMILY, instruction=text, objects=(),
                     goal=(Predicate(fn="inside", args=(subject, TARGET)),), factors=grouped(FACTORS, v),
                     max_steps=280, libero=LiberoRef(suite=SUITE, task=task, swap=swap, move=move))
