"""Answers no FINDINGS entry: the speed comparison of docs/libero.md. Control steps per second, side by side
in one run: a LIBERO scene through robosuite against our own MuJoCo backend on the closest family scene
(pick-place of one object into a container), each without and with two cameras rendered at every step.

    python -m studies.libero_speed [--steps 100] [--repeats 3] [--size 128] \
        [--out docs/results/libero/speed.json]

CPU seconds (process time) per control step, median over interleaved repeats, so the four variants meet the
same load; wall time beside it. Resets are not timed (robosuite's rebuilds its model). Both sides step a
fixed small action sequence from a reset (the physics of a still arm with objects resting on the table;
the expert's contact-rich phases cost more on both sides).
LIBERO: the first task of `libero_object` (pick the alphabet soup, place it in the basket), cameras
`agentview` + `robot0_eye_in_hand`; ours: `pick_place`'s default scene, cameras `front` + `wrist`.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from common.cli import command_parser
from sim.env import SimEnv
from sim.families import get_family

LIBERO_CAMERAS = ("agentview", "robot0_eye_in_hand")
OUR_CAMERAS = ("front", "wrist")


def actions(n: int) -> np.ndarray:
    """A gentle back-and-forth of the hand, gripper open: the same sequence for both backends."""
    t = np.arange(n)
    a = np.zeros((n, 7))
    a[:, 0] = 0.3 * np.sin(t / 10)
    a[:, 1] = 0.3 * np.cos(t / 10)
    a[:, 6] = -1.0
    return a


Variant = tuple[Callable[[], None], Callable[[], None], Callable[[], None]]  # reset, the timed steps, close


def ours(steps: int, size: int, cameras: bool) -> Variant:
    fam = get_family("pick_place")
    env = SimEnv(fam.make_scene(fam.default_factors()))
    renderer = None
    if cameras:
        from sim.render import Renderer

        renderer = Renderer(env.model, size, size)
    acts = actions(steps)

    def run() -> None:
        for a in acts:
            env.step(a)
            if renderer is not None:
                for c in OUR_CAMERAS:
                    renderer.render(env.data, c)

    return env.reset, run, (renderer.close if renderer is not None else lambda: None)


def libero(steps: int, size: int, cameras: bool) -> Variant:
    from experiments.liberopro.evaluate import tasks
    from sim.libero.env import LiberoEnv

    task = tasks("libero_object", "none")[0]
    env = LiberoEnv(task.bddl, task.name, cameras=LIBERO_CAMERAS if cameras else (), image_size=size)
    acts = actions(steps)

    def run() -> None:
        for a in acts:
            env.step(a)

    return (lambda: env.reset(seed=0)), run, env.close


def measure(steps: int, repeats: int, size: int) -> dict:
    runs = {f"{side} {'with' if cam else 'without'} cameras": make(steps, size, cam)
            for side, make in (("ours", ours), ("LIBERO", libero)) for cam in (False, True)}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    wall: dict[str, list[float]] = {k: [] for k in runs}
    try:
        for reset, run, _ in runs.values():  # warm-up (first frames upload textures)
            reset()
            run()
        for _ in range(repeats):
            for k, (reset, run, _) in runs.items():
                reset()
                w0, c0 = time.perf_counter(), time.process_time()
                run()
                cpu[k].append(time.process_time() - c0)
                wall[k].append(time.perf_counter() - w0)
    finally:
        for _, _, close in runs.values():
            close()
    out = {k: {"ctrl_steps_per_s_cpu": round(steps / statistics.median(cpu[k]), 1),
               "ctrl_steps_per_s_wall": round(steps / statistics.median(wall[k]), 1)} for k in runs}
    base = out["LIBERO without cameras"]["ctrl_steps_per_s_cpu"]
    for k in out:
        out[k]["x_libero_without_cameras"] = round(out[k]["ctrl_steps_per_s_cpu"] / base, 2)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_speed", __doc__)
    ap.add_argument("--steps", type=int, default=100, help="control steps per pass (after each reset)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", type=int, default=128, help="square camera images")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if min(a.steps, a.repeats, a.size) < 1:
        ap.error("--steps, --repeats and --size must be >= 1")
    res = {"steps": a.steps, "repeats": a.repeats, "size": a.size,
           "results": measure(a.steps, a.repeats, a.size)}
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
