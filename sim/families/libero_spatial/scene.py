"""LIBERO-Spatial: pick up the black bowl the instruction places (between the plate and the ramekin, on the
stove, ...) and put it on the plate, in LIBERO's own world.

The family's scene builder and seed generation program (the sandbox runs this text): a scene names one
task of LIBERO's `libero_spatial` suite (`SceneSpec.libero`). Two identical bowls stand on the table; only
the words say which one is meant, so the task is also the bowl's place. A program may edit where the plate
starts (`plate`: in its own region, or swapped with another object's, LIBERO-Pro's kind of position change
for this suite, which moves the plate and leaves the bowls; `shift`: that region moved 5 cm on the table)
and the instruction's words (`wording`: the task file's own, or one of our paraphrases, which keep the
bowl's place). In distribution the plate starts in its own region or its first partner's, unmoved or moved
one way, and the instruction is the file's or the first paraphrase (two seen values each: a variant, a
control, can move either); the other partners, directions and paraphrases are the out-of-distribution
shell. LIBERO builds the scene from the installed package's BDDL (`sim.libero.world.libero_scene`) and
samples each object's start inside its region from the scene's seed.
The plate's partners are the objects starting on a placement rectangle of the table, less the bowl the
task names and the one LIBERO-Pro's `libero_spatial_swap` file swaps the plate with or puts it on (the
benchmark's own perturbation stays held out; the paraphrases are not `libero_spatial_lan`'s wording).
All ten tasks of the suite.
Sandbox-clean subset: numpy and `sim.scene` only, no `str.format`; `FACTORS` is read as a literal.
"""

import numpy as np

from sim.scene import LiberoRef, Predicate, SceneSpec, factor_values, fill, grouped

FAMILY = "libero_spatial"
SUITE = "libero_spatial"
BOWL = "akita_black_bowl_1"
PLATE = "plate_1"
# task → (task file, the bowl's place as the file's instruction says it, that instruction, the plate's swap
# partners (sorted))
TASKS = {
    "between_plate_ramekin": (
        "pick_up_the_black_bowl_between_the_plate_and_the_ramekin_and_place_it_on_the_plate",
        "between the plate and the ramekin",
        "Pick the akita black bowl between the plate and the ramekin and place it on the plate",
        ("akita_black_bowl_2", "flat_stove_1", "glazed_rim_porcelain_ramekin_1", "wooden_cabinet_1")),
    "next_to_ramekin": (
        "pick_up_the_black_bowl_next_to_the_ramekin_and_place_it_on_the_plate", "next to the ramekin",
        "Pick the akita black bowl next to the ramekin and place it on the plate",
        ("cookies_1", "flat_stove_1", "glazed_rim_porcelain_ramekin_1", "wooden_cabinet_1")),
    "table_center": (
        "pick_up_the_black_bowl_from_table_center_and_place_it_on_the_plate", "from table center",
        "Pick the akita black bowl from table center and place it on the plate",
        ("akita_black_bowl_2", "flat_stove_1", "glazed_rim_porcelain_ramekin_1", "wooden_cabinet_1")),
    "on_cookie_box": (
        "pick_up_the_black_bowl_on_the_cookie_box_and_place_it_on_the_plate", "on the cookies box",
        "Pick the akita black bowl on the cookies box and place it on the plate",
        ("cookies_1", "flat_stove_1", "glazed_rim_porcelain_ramekin_1")),
    "next_to_cookie_box": (
        "pick_up_the_black_bowl_next_to_the_cookie_box_and_place_it_on_the_plate", "next to the cookies box",
        "Pick the akita black bowl next to the cookies box and place it on the plate",
        ("cookies_1", "flat_stove_1", "glazed_rim_porcelain_ramekin_1", "wooden_cabinet_1")),
    "on_stove": (
        "pick_up_the_black_bowl_on_the_stove_and_place_it_on_the_plate", "on the stove",
        "Pick the akita black bowl on the stove and place it on the plate",
        ("cookies_1", "flat_stove_1", "wooden_cabinet_1")),
    "next_to_plate": (
        "pick_up_the_black_bowl_next_to_the_plate_and_place_it_on_the_plate", "next to the plate",
        "Pick the akita black bowl next to the plate and place it on the plate",
        ("akita_black_bowl_2", "flat_stove_1", "glazed_rim_porcelain_ramekin_1", "wooden_cabinet_1")),
    "on_cabinet": (
        "pick_up_the_black_bowl_on_the_wooden_cabinet_and_place_it_on_the_plate", "on the wooden cabinet",
        "Pick the akita black bowl on the wooden cabinet and place it on the plate",
        ("cookies_1", "flat_stove_1", "wooden_cabinet_1")),
    "on_ramekin": (
        "pick_up_the_black_bowl_on_the_ramekin_and_place_it_on_the_plate", "on the ramekin",
        "Pick the akita black bowl on the ramekin and place it on the plate",
        ("flat_stove_1", "glazed_rim_porcelain_ramekin_1", "wooden_cabinet_1")),
    "in_drawer": (
        "pick_up_the_black_bowl_in_the_top_drawer_of_the_wooden_cabinet_and_place_it_on_the_plate",
        "in the top layer of the wooden cabinet",
        "Pick the akita black bowl in the top layer of the wooden cabinet and place it on the plate",
        ("flat_stove_1", "glazed_rim_porcelain_ramekin_1", "wooden_cabinet_1")),
}
SHIFTS = {"none": None, "plus_y": (0.0, 0.05), "minus_y": (0.0, -0.05), "plus_x": (0.05, 0.0),
          "minus_x": (-0.05, 0.0)}  # m, the plate's start region moved on the table
PARAPHRASES = {"put": "put the black bowl {where} on the plate",
               "needs": "the plate needs the black bowl {where} on it",
               "move": "move the black bowl {where} onto the plate"}
FACTORS = (
    {"name": "task", "group": "task", "type": "choice", "default": "between_plate_ramekin",
     "choices": ("between_plate_ramekin", "next_to_ramekin", "table_center", "on_cookie_box",
                 "next_to_cookie_box", "on_stove", "next_to_plate", "on_cabinet", "on_ramekin", "in_drawer"),
     "kind": "task_kind", "variant_pins": False,
     "doc": "which bowl goes on the plate, by its place (the suite's task; `TASKS`' keys)"},
    {"name": "wording", "group": "task", "type": "choice", "default": "bddl", "choices": ("bddl", "put"),
     "ood_choices": ("needs", "move"), "kind": "language",
     "doc": "the task file's instruction or our first paraphrase; the other paraphrases are unseen"},
    {"name": "plate", "group": "spatial", "type": "choice", "default": "own", "choices": ("own", "swap1"),
     "ood_choices": ("swap2", "swap3"), "kind": "target_pos",
     "doc": "the plate starts in its own region or in its k-th swap partner's (which takes the plate's); "
            "partners 2-3 are unseen"},
    {"name": "shift", "group": "spatial", "type": "choice", "default": "none", "choices": ("none", "plus_y"),
     "ood_choices": ("minus_y", "plus_x", "minus_x"), "kind": "target_pos",
     "doc": "the region the plate starts in (after any swap) moved 5 cm along the table's x or y axis, or "
            "not; three of the four directions are unseen"},
)


def generate(rng: np.random.Generator, **factors) -> SceneSpec:
    """One LIBERO-Spatial scene; LIBERO samples the starts, so `rng` is unused here."""
    v = factor_values(FACTORS, factors)
    task, where, words, partners = TASKS[v["task"]]
    swap = None if v["plate"] == "own" else partners[int(v["plate"][4:]) - 1]
    move = SHIFTS[v["shift"]]
    text = words if v["wording"] == "bddl" else fill(PARAPHRASES[v["wording"]], where=where)
    mover = None if swap is None and move is None else PLATE
    ref = LiberoRef(suite=SUITE, task=task, swap=swap, move=move, mover=mover)
    return SceneSpec(family=FAMILY, instruction=text, objects=(),
                     goal=(Predicate(fn="on", args=(BOWL, PLATE)),), factors=grouped(FACTORS, v),
                     max_steps=220, libero=ref)
