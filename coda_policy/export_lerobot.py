"""`python -m coda_policy.export_lerobot RUN_DIR --out DATASET_DIR`: a run's recorded episodes (seed
demonstrations and rollouts) as a LeRobotDataset v3 on disk, which lerobot's own loader reads offline.

Per frame (one per control step, replayed from each episode's actions, `sim.render.frames_at`):
`observation.images.<camera>` (uint8 images, not videos), `observation.state` (ee position, rotation's
first two columns, gripper opening), `action` (the 7-D end-effector action), `task` (the instruction),
`episode_success`, `is_demo` (an expert demonstration, not a policy rollout) and `advantage_weight`: the
weight the loop's last advantage-weighted update that trained on the episode gave the chunk starting at
that frame or, between chunk starts, at the last start before it (the `train` node keeps them beside each
checkpoint, `policy/round_XX.weights.npz`); NaN where no update weighted the episode (held-out
evaluations, verification batches, a run without weighted updates). A lerobot trainer weights its
per-sample losses by it as `(loss * w).sum() / w.sum()` over the finite ones. Runs in .venv-pi05.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from coda_policy.dataset import episode_paths
from common.cli import command_parser
from sim.builder import SUBSTEPS, TIMESTEP
from sim.episode import Episode, proprio
from sim.render import frames_at

FPS = round(1.0 / (TIMESTEP * SUBSTEPS))


def features(cameras: Sequence[str], size: int) -> dict[str, dict]:
    out = {f"observation.images.{c}": {"dtype": "image", "shape": (size, size, 3),
                                       "names": ["height", "width", "channels"]} for c in cameras}
    out["observation.state"] = {"dtype": "float32", "shape": (10,), "names": None}
    out["action"] = {"dtype": "float32", "shape": (7,), "names": None}
    out["episode_success"] = {"dtype": "bool", "shape": (1,), "names": None}
    out["is_demo"] = {"dtype": "bool", "shape": (1,), "names": None}
    out["advantage_weight"] = {"dtype": "float32", "shape": (1,), "names": None}
    return out


def run_weights(run: Path) -> dict[str, dict[int, float]]:
    """{episode file: {chunk start step: weight}} from every weighted update of a run, later rounds over
    earlier ones (a demonstration reweighted each round keeps its last weight)."""
    out: dict[str, dict[int, float]] = {}
    for path in sorted((run / "policy").glob("round_*.weights.npz")):
        with np.load(path) as z:
            rows = zip(z["episode"].tolist(), z["start"].tolist(), z["weight"].tolist(), strict=True)
            for ep, start, w in rows:
                out.setdefault(str(ep), {})[int(start)] = float(w)
    return out


def frame_weights(starts: dict[int, float], steps: int) -> np.ndarray:
    """Per frame: the weight of the chunk that starts there or, between starts, the last start before."""
    w = np.full(steps, np.nan, np.float32)
    for t in sorted(starts):
        if 0 <= t < steps:
            w[t:] = starts[t]
    return w


def export(episodes: Sequence[Episode], out: Path, *, cameras: Sequence[str] = ("front", "wrist"),
           size: int = 224, repo_id: str = "coda/run",
           weights: Sequence[dict[int, float]] | None = None) -> Path:
    """Write `episodes` as a LeRobotDataset at `out` (which must not exist); `weights[k]` = {chunk start
    step: advantage weight} of episode k (none: NaN). Returns `out`."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    if out.exists():
        raise FileExistsError(f"{out} exists; choose a new --out (an export never overwrites a dataset)")
    ds = LeRobotDataset.create(repo_id, FPS, features(cameras, size), root=out, robot_type="panda",
                               use_videos=False)
    for k, ep in enumerate(episodes):
        by_step = {int(t): s for t, s in zip(ep.state_steps, ep.states, strict=True)}
        if len(by_step) < ep.steps:
            raise ValueError(f"episode {ep.scene.scene_id} kept every few states only; the export needs "
                             "every step's state (record_every=1)")
        w = frame_weights(weights[k] if weights else {}, ep.steps)
        frames = frames_at(ep, range(ep.steps), cameras, size)
        for t in range(ep.steps):
            frame = {f"observation.images.{c}": frames[t, i] for i, c in enumerate(cameras)}
            frame.update({"observation.state": proprio(by_step[t]).astype(np.float32),
                          "action": ep.actions[t].astype(np.float32),
                          "episode_success": np.array([ep.success]),
                          "is_demo": np.array([ep.is_demonstration]),
                          "advantage_weight": w[t: t + 1],
                          "task": ep.scene.instruction})
            ds.add_frame(frame)
        # lerobot 0.4.4 checks a (1,) feature as shape (1,) in add_frame, then writes it as a scalar column
        # whose cast, float(row), numpy >= 2.4 refuses for a 1-element array: hand it 0-d rows
        buf = ds.episode_buffer
        buf["advantage_weight"] = [np.asarray(v, np.float32).reshape(()) for v in buf["advantage_weight"]]
        ds.save_episode()
    ds.finalize()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = command_parser("coda_policy.export_lerobot", __doc__)
    ap.add_argument("run", type=Path, help="a run directory (episodes/**), an episodes folder or one .npz")
    ap.add_argument("--out", type=Path, required=True, help="the dataset folder to create")
    ap.add_argument("--cameras", default="front,wrist")
    ap.add_argument("--size", type=int, default=224, help="square image size (π0.5: 224)")
    ap.add_argument("--repo-id", default="coda/run", help="the dataset's name in its metadata")
    a = ap.parse_args(argv)
    try:
        paths = episode_paths(a.run)
        if not paths:
            raise FileNotFoundError(f"no episodes (*.npz) under {a.run}")
        eps = [Episode.load(p) for p in paths]
        by_file = run_weights(a.run) if a.run.is_dir() else {}
        weights = [by_file.get(str(p.resolve()), {}) for p in paths]
        export(eps, a.out, cameras=tuple(a.cameras.split(",")), size=a.size, repo_id=a.repo_id,
               weights=weights)
    except (FileNotFoundError, FileExistsError, ValueError) as e:
        sys.exit(f"export_lerobot: {e}")
    weighted = sum(1 for w in weights if w)
    frames = sum(e.steps for e in eps)
    print(f"wrote {len(eps)} episodes ({weighted} with advantage weights), {frames} frames at {FPS} fps "
          f"→ {a.out}")


if __name__ == "__main__":
    main()
