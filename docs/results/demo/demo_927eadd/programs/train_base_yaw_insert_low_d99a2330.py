# ====================================================================================================
# CoDA training program train_base_yaw_insert_low_d99a2330
#
#   family      stack_insert
#   mode        base_yaw_insert_low
#   round       1
#   parent      ab0f96c6 (ab0f96c6b1cdc4fb95f1a4a9430f6ef43d9ec0a9b12d03923a0ea2941158a980)
#   id          d99a2330845163beac20e6064fe34a6015bb621c8a0a69c4873f0e1ca5637bc8
#   diagnosis   writer failed: WriterError: Your previous answer could not be used (schema: the new
#               stage `insert_fail` is reached before `grasp` on 0 of 4 expert demonstrations (at
#               least 50% needed), so it shapes nothing: its condition `dist('ee', piece) < 0.25 and
#               bottom(piece) > top(base) + 0.03 and not in_contact('ee', base)` almost never holds
#               on the way to `grasp`.
#               On the expert's way to `grasp` (every state before it first holds):
#               - `dist('ee', piece)` went from 0.002 to 0.337
#               - `bottom(piece) > top(base) + 0.03` held
#
# Text2potential: Φ(s) = 5 when the verifier (the last `done`) holds; otherwise
# Φ(s) = k* + clip(progress of subgoal k*+1, 0, 1), k* = how many leading subgoals are done.
# Chunk shaping uses β = 1.0, γ = 0.99, h = 10 control steps.
#
#   1. reach (subgoal): grip site at the piece
#        done:     dist('ee', piece) < 0.03 or grasped(piece)
#        progress: 1 - clip(dist('ee', piece) / 0.3, 0, 1)
#   2. grasp (subgoal): both finger pads on the piece (or it was just let go on the target)
#        done:     grasped(piece) or (xy_dist(piece, base) < 0.02 and bottom(piece) < top(base) + 0.02)
#        progress: clip((0.08 - gripper()) / 0.04, 0, 1)
#   3. lift (subgoal): held 5 cm above the table (or already over the target)
#        done:     xy_dist(piece, base) < 0.02 and (grasped(piece) or bottom(piece) < top(base) + 0.02) or grasped(piece) and bottom(piece) > 0.05
#        progress: clip(bottom(piece) / 0.05, 0, 1)
#   4. align (subgoal): held over the target
#        done:     xy_dist(piece, base) < 0.02 and (grasped(piece) or bottom(piece) < top(base) + 0.02)
#        progress: 1 - clip(xy_dist(piece, base) / 0.3, 0, 1)
#   5. seat (verifier): stacked on block B / inserted in the hole (the verifier)
#        done:     stacked(piece, base) if test == 'stacked' else inserted(piece, base)
#        progress: 1 - clip((bottom(piece) - top(base) + 0.03) / 0.2, 0, 1)
#   roles: piece = goal[0].args[0], base = goal[0].args[1], test = goal[0].fn
#
# Written by CoDA. Literal assignments only: CoDA reads them, it never runs this file.
# ====================================================================================================
FAMILY = "stack_insert"
MODE_ID = "base_yaw_insert_low"
PARENT_ID = "ab0f96c6b1cdc4fb95f1a4a9430f6ef43d9ec0a9b12d03923a0ea2941158a980"
ROUND = 1
DIAGNOSIS = "writer failed: WriterError: Your previous answer could not be used (schema: the new stage `insert_fail` is reached before `grasp` on 0 of 4 expert demonstrations (at least 50% needed), so it shapes nothing: its condition `dist('ee', piece) < 0.25 and bottom(piece) > top(base) + 0.03 and not in_contact('ee', base)` almost never holds on the way to `grasp`.\nOn the expert's way to `grasp` (every state before it first holds):\n- `dist('ee', piece)` went from 0.002 to 0.337\n- `bottom(piece) > top(base) + 0.03` held "
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
        "done": "xy_dist(piece, base) < 0.02 and (grasped(piece) or bottom(piece) < top(base) + 0.02) or grasped(piece) and bottom(piece) > 0.05",
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
