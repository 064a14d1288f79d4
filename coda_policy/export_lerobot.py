"""`python -m coda_policy.export_lerobot RUN_DIR --out DATASET_DIR`: a run's recorded episodes (seed
demonstrations and rollouts) as a LeRobotDataset v3 on disk, which lerobot's own loader reads offline.

Per frame (one per control step, replayed from each episode's actions, `sim.render.frames_at`):
`observation.images.<camera>` (uint8 images, not videos), `observation.state` (ee position, rotation's
first two columns, gripper opening), `action` (the 7-D end-effector action), `task` (the instruction),
`episode_success` and `is_demo` (an expert demonstration, not a policy rollout). Runs in .venv-pi05 (lerobot).

Not exported yet: the advantage weight of each sample — the `train` node does not keep its per-chunk
weights; until it does, a weights column would be invented, so there is none.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from coda_policy.dataset import episode_paths
from coda_policy.pi05.data import proprio
from sim.builder import SUBSTEPS, TIMESTEP
from sim.episode import Episode
from sim.render import frames_at

FPS = round(1.0 / (TIMESTEP * SUBSTEPS))


def features(cameras: Sequence[str], size: int) -> dict[str, dict]:
    out = {f"observation.images.{c}": {"dtype": "image", "shape": (size, size, 3),
                                       "names": ["height", "width", "channels"]} for c in cameras}
    out["observation.state"] = {"dtype": "float32", "shape": (10,), "names": None}
    out["action"] = {"dtype": "float32", "shape": (7,), "names": None}
    out["episode_success"] = {"dtype": "bool", "shape": (1,), "names": None}
    out["is_demo"] = {"dtype": "bool", "shape": (1,), "names": None}
    return out


def export(episodes: Sequence[Episode], out: Path, *, cameras: Sequence[str] = ("front", "wrist"),
           size: int = 224, repo_id: str = "coda/run") -> Path:
    """Write `episodes` as a LeRobotDataset at `out` (which must not exist); returns `out`."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset


    if out.exists():
        raise FileExistsError(f"{out} exists; choose a new --out (an export never overwrites a dataset)")
    ds = LeRobotDataset.create(repo_id, FPS, features(cameras, size), root=out, robot_type="panda",
                               use_videos=False)
    for ep in episodes:
        frames = frames_at(ep, range(ep.steps), cameras, size)
        by_step = {int(t): s for t, s in zip(ep.state_steps, ep.states, strict=True)}
        if len(by_step) < ep.steps:
            raise ValueError(f"episode {ep.scene.scene_id} kept every few states only; the export needs "
                             "every step's state (record_every=1)")
        for t in range(ep.steps):
            frame = {f"observation.images.{c}": frames[t, i] for i, c in enumerate(cameras)}
            frame.update({"observation.state": proprio(by_step[t]).astype(np.float32),
                          "action": ep.actions[t].astype(np.float32),
                          "episode_success": np.array([ep.success]),
                          "is_demo": np.array([ep.policy == "expert"]),
                          "task": ep.scene.instruction})
            ds.add_frame(frame)
        ds.save_episode()
    ds.finalize()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m coda_policy.export_lerobot",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path, help="a run directory (episodes/**), an episodes folder or one .npz")
    ap.add_argument("--out", type=Path, required=True, help="the dataset folder to create")
    ap.add_argument("--cameras", default="front,wrist")
    ap.add_argument("--size", type=int, default=224, help="square image size (π0.5: 224)")
    ap.add_argument("--repo-id", default="coda/run", help="the dataset's name in its metadata")
    a = ap.parse_args(argv)
    try:
        eps = [Episode.load(p) for p in episode_paths(a.run)]
        if not eps:
            raise FileNotFoundError(f"no episodes (*.npz) under {a.run}")
        export(eps, a.out, cameras=tuple(a.cameras.split(",")), size=a.size, repo_id=a.repo_id)
    except (FileNotFoundError, FileExistsError, ValueError) as e:
        sys.exit(f"export_lerobot: {e}")
    print(f"wrote {len(eps)} episodes, {sum(e.steps for e in eps)} frames at {FPS} fps → {a.out}")


if __name__ == "__main__":
    main()
