"""Seed training program: LIBERO-Spatial (put the black bowl on the plate).

Pick-place's stages (`sim/families/pick_place/train.py`) with the plate as the target, an object: the
verifier is LIBERO's goal `(On akita_black_bowl_1 plate_1)` as our `on` reads it. The bowl may start
raised (on the cookie box, the stove, the cabinet), so "lifted" is the bowl held 5 cm above the plate's
top, which a raised bowl is once grasped. Literal assignments only: the loader reads them and never runs
this file.
"""

FAMILY = "libero_spatial"
ROLES = {"object": "goal[0].args[0]", "target": "goal[0].args[1]"}
BETA = 1.0
GAMMA = 0.99
CHUNK = 10
SUBGOALS = [
    {
        "name": "reach",
        "done": "dist('ee', object) < 0.03 or grasped(object)",
        "progress": "1 - clip(dist('ee', object) / 0.3, 0, 1)",
        "doc": "grip site at the bowl",
    },
    {
        "name": "grasp",
        "done": "grasped(object) or (xy_dist(object, target) < 0.03 and bottom(object) < top(target) + 0.02)",
        "progress": "clip((0.08 - gripper()) / 0.04, 0, 1)",
        "doc": "both finger pads on the bowl; progress: the fingers closing",
    },
    {
        "name": "lift",
        "done": "xy_dist(object, target) < 0.03 and (grasped(object) or bottom(object) < top(target) + 0.02)"
                " or grasped(object) and bottom(object) > top(target) + 0.05",
        "progress": "clip((bottom(object) - top(target)) / 0.05, 0, 1)",
        "doc": "held 5 cm above the plate's top (or already over the plate)",
    },
    {
        "name": "carry",
        "done": "xy_dist(object, target) < 0.03 and (grasped(object) or bottom(object) < top(target) + 0.02)",
        "progress": "1 - clip(xy_dist(object, target) / 0.3, 0, 1)",
        "doc": "held over the plate",
    },
    {
        "name": "place",
        "done": "on(object, target)",
        "progress": "1 - clip((bottom(object) - top(target)) / 0.15, 0, 1)",
        "doc": "resting on the plate, released (the verifier)",
    },
]
