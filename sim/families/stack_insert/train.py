"""Seed training program: stack-insert (block A onto block B, or the peg into the hole block).

The piece is carried like in pick-place; the target is block B (an object) or the hole (a region of the
hole block), and `top` reads either. The verifier is the goal test, `stacked` or `inserted`, read from
the scene's goal. Literal assignments only: the loader reads them and never runs this file.
"""

FAMILY = "stack_insert"
ROLES = {"piece": "goal[0].args[0]", "base": "goal[0].args[1]", "test": "goal[0].fn"}
BETA = 1.0
GAMMA = 0.99
CHUNK = 10
SUBGOALS = [
    {
        "name": "reach",
        "done": "dist('ee', piece) < 0.03 or grasped(piece)",
        "progress": "1 - clip(dist('ee', piece) / 0.3, 0, 1)",
        "doc": "grip site at the piece",
    },
    {
        "name": "grasp",
        "done": "grasped(piece) or (xy_dist(piece, base) < 0.02 and bottom(piece) < top(base) + 0.02)",
        "progress": "clip((0.08 - gripper()) / 0.04, 0, 1)",
        "doc": "both finger pads on the piece (or it was just let go on the target)",
    },
    {
        "name": "lift",
        "done": "xy_dist(piece, base) < 0.02 and (grasped(piece) or bottom(piece) < top(base) + 0.02)"
                " or grasped(piece) and bottom(piece) > 0.05",
        "progress": "clip(bottom(piece) / 0.05, 0, 1)",
        "doc": "held 5 cm above the table (or already over the target)",
    },
    {
        "name": "align",
        "done": "xy_dist(piece, base) < 0.02 and (grasped(piece) or bottom(piece) < top(base) + 0.02)",
        "progress": "1 - clip(xy_dist(piece, base) / 0.3, 0, 1)",
        "doc": "held over the target",
    },
    {
        "name": "seat",
        "done": "stacked(piece, base) if test == 'stacked' else inserted(piece, base)",
        "progress": "1 - clip((bottom(piece) - top(base) + 0.03) / 0.2, 0, 1)",
        "doc": "stacked on block B / inserted in the hole (the verifier)",
    },
]
