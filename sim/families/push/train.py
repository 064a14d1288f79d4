"""Seed training program: push (slide the object until it touches the target block).

Stages follow the expert: bring the closed hand down behind the object, then push it until it touches the
target. "reach" stays true while pushing (the hand rides against the object) and once the object touches
the target, so the completed prefix only grows; the last `done` is the family's goal, the task verifier.
Literal assignments only: the loader reads them with `ast.literal_eval` and never runs this file.
"""

FAMILY = "push"
ROLES = {"object": "goal[0].args[0]", "target": "goal[0].args[1]"}
BETA = 1.0
GAMMA = 0.99
CHUNK = 10
SUBGOALS = [
    {
        "name": "reach",
        "done": "dist('ee', object) < 0.06 or in_contact(object, target)",
        "progress": "1 - clip(dist('ee', object) / 0.3, 0, 1)",
        "doc": "the hand low behind the object",
    },
    {
        "name": "push",
        "done": "in_contact(object, target)",
        "progress": "1 - clip(xy_dist(object, target) / 0.25, 0, 1)",
        "doc": "the object touches the target (the verifier)",
    },
]
