"""Seed training program: LIBERO-Object (put the item into the basket).

Put-inside's stages: the container is the basket's inside, a region (`basket_1_contain_region`), which
`top`, `bottom` and `xy_dist` read; the verifier is LIBERO's goal `(In item basket_1_contain_region)` as
our `inside` reads it. Literal assignments only: the loader reads them and never runs this file.
"""

FAMILY = "libero_object"
ROLES = {"object": "goal[0].args[0]", "container": "goal[0].args[1]"}
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
        "done": "grasped(object) or (xy_dist(object, container) < 0.05 and bottom(object) < top(container))",
        "progress": "clip((0.08 - gripper()) / 0.04, 0, 1)",
        "doc": "both finger pads on the object (or it was just let go into the container)",
    },
    {
        "name": "lift",
        "done": "xy_dist(object, container) < 0.05 and (grasped(object) or bottom(object) < top(container))"
                " or grasped(object) and bottom(object) > 0.05",
        "progress": "clip(bottom(object) / 0.05, 0, 1)",
        "doc": "held 5 cm above the table (or already over the container)",
    },
    {
        "name": "carry",
        "done": "xy_dist(object, container) < 0.05 and (grasped(object) or bottom(object) < top(container))",
        "progress": "1 - clip(xy_dist(object, container) / 0.3, 0, 1)",
        "doc": "held over the container",
    },
    {
        "name": "place",
        "done": "inside(object, container)",
        "progress": "1 - clip((bottom(object) - bottom(container)) / 0.2, 0, 1)",
        "doc": "inside the container, released (the verifier)",
    },
]
