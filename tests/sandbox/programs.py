"""Program sources shared by the sandbox tests."""

from __future__ import annotations

# A normal generation program: the pool must still run this after every hostile one.
OK_PROGRAM = '''
import math
import numpy as np
from sim.scene import ObjectSpec, Predicate, SceneSpec


def generate(rng, size=0.02, **factors):
    x, y = rng.uniform(-0.1, 0.1, size=2)
    yaw = float(rng.uniform(-math.pi, math.pi))
    cube = ObjectSpec(name="cube", kind="box", category="cube", size=(size, size, size),
                      pos=(float(x), float(y)), yaw=yaw)
    plate = ObjectSpec(name="plate", kind="box", category="plate", size=(0.05, 0.05, 0.01), pos=(0.1, 0.12))
    return SceneSpec(family="pick_place", instruction="put the cube on the plate", objects=(cube, plate),
                     goal=(Predicate(fn="on", args=("cube", "plate")),),
                     factors={"attribute": {"size": size}})
'''

# Appended to hostile snippets that need a valid return value after the hostile part.
SCENE = '''
from sim.scene import ObjectSpec, Predicate, SceneSpec


def _scene(instruction="lift the cube"):
    cube = ObjectSpec(name="cube", kind="box", category="cube", size=(0.02, 0.02, 0.02), pos=(0.0, 0.0))
    return SceneSpec(family="hostile", instruction=instruction, objects=(cube,),
                     goal=(Predicate(fn="lifted", args=("cube", 0.1)),))
'''


def body(code: str) -> str:
    """Wrap statements (4-space indented) into `generate` that ends by returning a valid scene."""
    return SCENE + "\n\ndef generate(rng, **factors):\n" + code.rstrip() + "\n    return _scene()\n"


# Full Python only (a pool with `python_layers=False`): writes PAYLOAD (an expression giving bytes) as a
# result frame on every blocking descriptor (the result pipe), then exits.
FORGE = "import os, json\nfrom sandbox.protocol import write_frame\n" + body('''
    for fd in range(3, 64):
        try:
            if os.get_blocking(fd):
                write_frame(fd, PAYLOAD)
        except OSError:
            pass
    os._exit(0)''')
