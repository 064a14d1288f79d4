"""Training samples for the π0.5 backend from recorded episodes: at every `stride`-th recorded state of a
successful episode, the cameras' frames (replayed, `sim.render.frames_at`), the proprio state, the
instruction and the next `chunk` actions (padded by repeating the last, `coda_policy.shaping`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from coda_policy.shaping import chunk_actions
from sim.episode import Episode, proprio
from sim.render import frames_at


@dataclass
class Samples:
    instructions: list[str]
    states: np.ndarray  # (N, 10)
    images: np.ndarray  # (N, n_cameras, S, S, 3) uint8
    actions: np.ndarray  # (N, h, 7)
    episode: np.ndarray  # (N,) index into the episodes given
    step: np.ndarray  # (N,) control step of each sample


def samples(episodes: Sequence[Episode], chunk: int, cameras: Sequence[str], size: int, *,
            stride: int = 1, only_success: bool = True) -> Samples:
    ins, states, images, acts, eps, steps = [], [], [], [], [], []
    for k, ep in enumerate(episodes):
        if only_success and not ep.success:
            continue
        picks = [(i, int(t)) for i, t in enumerate(ep.state_steps) if t < ep.steps][::stride]
        if not picks:
            continue
        images.append(frames_at(ep, [t for _, t in picks], cameras, size))
        for i, t in picks:
            a = chunk_actions(ep.actions, t, chunk)
            ins.append(ep.scene.instruction)
            states.append(proprio(ep.states[i]))
            acts.append(a)
            eps.append(k)
            steps.append(t)
    if not acts:
        kind = "successful episode" if only_success else "episode"
        raise ValueError(f"no {kind} with steps among {len(episodes)}")
    return Samples(ins, np.stack(states), np.concatenate(images), np.stack(acts).astype(np.float32),
                   np.array(eps), np.array(steps))
