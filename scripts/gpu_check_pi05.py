"""GPU check of the π0.5 backend (≤ 8 minutes on one H100/H200): N weighted fine-tuning steps on frames
rendered from expert demonstrations; prints step time, peak memory and loss.

    .venv-pi05/bin/python scripts/gpu_check_pi05.py [--pretrained DIR --tokenizer DIR] [--steps 20]

With `--pretrained` (a local lerobot PI05 checkpoint: config.json + model.safetensors) and `--tokenizer` (a
local PaliGemma tokenizer folder) it fine-tunes π0.5 itself at 224 px in bfloat16; without them, the tiny
configuration (which proves the plumbing on any device, not π0.5's speed). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import torch

from coda_policy.pi05.configuration_pi05 import PI05_TINY, Pi05Config
from coda_policy.pi05.data import samples
from coda_policy.registry import make_policy
from sim.episode import run_episode
from sim.families import get_family


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pretrained", default="")
    ap.add_argument("--tokenizer", default="")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--demos", type=int, default=2)
    a = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if a.pretrained:
        cfg = Pi05Config(size="full", pretrained=a.pretrained, tokenizer=a.tokenizer, image_size=224,
                         chunk=50, execute=10, dtype="bfloat16" if dev == "cuda" else "float32",
                         batch_size=a.batch)
    else:
        cfg = dataclasses.replace(PI05_TINY, batch_size=a.batch)
    fam = get_family("pick_place")
    eps = [run_episode(fam.sample_scene(k)) for k in range(a.demos)]
    data = samples(eps, cfg.chunk, cfg.cameras, cfg.image_size, stride=2)
    policy = make_policy(cfg)
    policy.fit_stats(data.states, data.actions)
    policy.model.to(dev)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    rng = np.random.default_rng(0)
    times, losses = [], []
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for _ in range(a.steps):
        idx = rng.integers(len(data.actions), size=cfg.batch_size)
        batch = policy.features([data.instructions[i] for i in idx], data.states[idx], data.images[idx],
                                data.actions[idx])
        weights = torch.as_tensor(rng.uniform(0.5, 1.5, size=len(idx)), dtype=torch.float32)
        t0 = time.perf_counter()
        loss, _ = policy(batch, weights)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if dev == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    peak = torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else float("nan")
    print(f"device {dev} · size {cfg.size} · {len(data.actions)} samples · batch {cfg.batch_size}")
    print(f"step time median {np.median(times[1:] or times):.3f} s (first {times[0]:.2f} s) · "
          f"peak memory {peak:.1f} GiB · loss {losses[0]:.4f} → {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
