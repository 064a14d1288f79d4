"""Seed training program: pick-place (put the object on the target plate).

Stages follow the expert: reach the object, close the fingers on it, lift it, carry it over the target,
set it down. Each `done` stays true through the later stages of a demonstration (e.g. "lifted" also
counts once the held object is over the target and being lowered, and every stage up to "carry" counts
while the just-released object drops the last millimetres onto the target), so the prefix only grows;
the last `done` is the family's goal, the task verifier. Literal assignments only: the loader reads them
with `ast.literal_eval` and never runs this file.
"""

FAMILY = "pick_place"
ROLES = {"object": "goal[0].args[0]", "target": "goal[0].args[1]"}
BETA = 1.0
GAMMA = 0.99
CHUNK = 10
SUBGOALS = [
    {
        "name": "reach",
        "done": "dist('ee', object) < 0.03 or grasped(object)",
        "progress": "1 - clip(dist('ee', object) / 0.3, 0, 1)",
        "doc": "grip site at the object",
    },
    {
        "name": "grasp",
        "done": "grasped(object) or (xy_dist(object, target) < 0.03 and bottom(object) < top(target) + 0.02)",
        "progress": "clip((0.08 - gripper()) / 0.04, 0, 1)",
        "doc": "both finger pads on the object; progress: the fingers closing",
    },
    {
        "name": "lift",
        "done": "xy_dist(object, target) < 0.03 and (grasped(object) or bottom(object) < top(target) + 0.02)"
                " or grasped(object) and bottom(object) > 0.05",
        "progress": "clip(bottom(object) / 0.05, 0, 1)",
        "doc": "held 5 cm above the table (or already over the target)",
    },
    {
        "name": "carry",
        "done": "xy_dist(object, target) < 0.03 and (grasped(object) or bottom(object) < top(target) + 0.02)",
        "progress": "1 - clip(xy_dist(object, target) / 0.3, 0, 1)",
        "doc": "held over the target",
    },
    {
        "name": "place",
        "done": "on(object, target)",
        "progress": "1 - clip((bottom(object) - top(target)) / 0.15, 0, 1)",
        "doc": "resting on the target, released (the verifier)",
    },
]
