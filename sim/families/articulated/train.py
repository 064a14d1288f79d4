"""Seed training program: articulated (open or close a drawer or the cabinet door).

The goal names the joint, the test (`opened` / `closed`) and its threshold; the roles read all three
from the scene's goal, so one program serves opening and closing, drawers and doors. Progress while
dragging is the share of the way to the threshold. Literal assignments only: the loader reads them and
never runs this file.
"""

FAMILY = "articulated"
ROLES = {"joint": "goal[0].args[0]", "test": "goal[0].fn", "level": "goal[0].args[1]"}
BETA = 1.0
GAMMA = 0.99
CHUNK = 10
SUBGOALS = [
    {
        "name": "reach",
        "done": "handle_dist(joint) < 0.03 or grasped(joint)",
        "progress": "1 - clip(handle_dist(joint) / 0.4, 0, 1)",
        "doc": "grip site at the handle bar",
    },
    {
        "name": "grasp",
        "done": "grasped(joint)",
        "progress": "clip((0.04 - gripper()) / 0.024, 0, 1)",
        "doc": "fingers closed on the handle; progress: the fingers closing from half open",
    },
    {
        "name": "move",
        "done": "opened(joint, level) if test == 'opened' else closed(joint, level)",
        "progress": "open_frac(joint) / level if test == 'opened' else (1 - open_frac(joint)) / (1 - level)",
        "doc": "the joint past the goal threshold (the verifier)",
    },
]
