"""`PolicyTrainer`: the `train` and `bootstrap` nodes' access to `coda_policy` — SFT on expert
demonstrations, the advantage-weighted round (chunk critic on shaped returns, DESIGN §4), and the
picklable policy factory that rollouts hand to `sim.pool`.

The graph sees only the `Trainer` protocol of `agents.graph.deps`, so tests swap in a trainer without torch.
Every method writes the new checkpoint to `out` and returns a few numbers for metrics.jsonl.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.config import LearnConfig
from programs.model import TrainingProgram
from sim.pool import PolicyFactory


class PolicyTrainer:
    """SFT and advantage-weighted updates of the `coda_policy` object-token policy."""

    def __init__(self, config: LearnConfig, seed: int = 0) -> None:
        self.config = config
        self.seed = seed

    def factory(self, policy: Path, seed: int) -> PolicyFactory:
        """A picklable factory for pool workers: the checkpoint with its sampling seed."""
        from coda_policy.awr import SeededPolicy

        return SeededPolicy(str(policy), seed, device=self.config.rollout_device)

    def _threads(self) -> None:
        """Training runs in the main process: the policy config's `torch_threads` (1, measured; see
        `ObjectTokenConfig.torch_threads`). Set before every update, since a policy factory called in this
        process (episodes with workers=0) sets the pool workers' count."""
        import torch

        torch.set_num_threads(self.config.policy.torch_threads)

    @staticmethod
    def _data(policy: Any, demos: Sequence[Path]) -> Any:
        """The policy backend's training chunks of the successful demonstrations (`chunk_data`)."""
        from sim.episode import Episode

        return policy.chunk_data([Episode.load(p) for p in demos])

    def _sft(self, policy: Any, data: Any, steps: int) -> dict[str, float]:
        from coda_policy.sft import SFTConfig, train

        cfg = SFTConfig(name="agents", demos=max(1, data.episodes), steps=steps,
                        warmup=finetune_warmup(steps), ema=0.0, policy=policy.config,
                        log_every=max(1, steps), device=self.config.device)
        return train(policy, data.tensors, cfg)

    def initial(self, demos: Sequence[Path], out: Path) -> dict[str, Any]:
        """The policy before any training of this run: `init_policy` as given, or a fresh network with the
        demonstrations' normalisation statistics (the zero-shot starting point)."""
        out.parent.mkdir(parents=True, exist_ok=True)
        if self.config.init_policy:
            from coda_policy.checkpoint import read_meta

            read_meta(self.config.init_policy)  # a checkpoint, not an old pickle, before it is copied
            shutil.copyfile(self.config.init_policy, out)
            return {"init": self.config.init_policy}
        from coda_policy.registry import make_policy

        policy = make_policy(self.config.policy)
        policy.set_stats(self._data(policy, demos).stats)
        policy.save(out)
        return {"init": "fresh"}

    def bootstrap(self, demos: Sequence[Path], out: Path, steps: int | None = None) -> dict[str, Any]:
        """SFT on the seed demonstrations (from `init_policy` when given, else from scratch) for `steps`
        (default `sft_steps`); with `sft_steps` = 0, `init_policy` as given."""
        self._threads()
        from coda_policy.registry import load_policy, make_policy

        steps = self.config.sft_steps if steps is None else steps
        if self.config.sft_steps == 0:
            return {**self.initial(demos, out), "sft_steps": 0}
        if self.config.init_policy:
            policy = load_policy(self.config.init_policy)
            data = self._data(policy, demos)
        else:
            policy = make_policy(self.config.policy)
            data = self._data(policy, demos)
            policy.set_stats(data.stats)
        speed = self._sft(policy, data, steps)
        policy.save(out)
        return {"sft_steps": steps, "demos": data.episodes, "chunks": data.chunks,
                "train_s": round(speed["train_s"], 2)}

    def finetune(self, policy_path: Path, demos: Sequence[Path], out: Path) -> dict[str, Any]:
        """A round's SFT update on its expert demonstrations (normalisation kept)."""
        self._threads()
        from coda_policy.registry import load_policy

        policy = load_policy(policy_path)
        data = self._data(policy, demos)
        speed = self._sft(policy, data, self.config.finetune_steps)
        policy.save(out)
        return {"finetune_steps": self.config.finetune_steps, "demos": data.episodes,
                "chunks": data.chunks, "train_s": round(speed["train_s"], 2)}

    def aw_update(self, policy_path: Path, groups: Sequence[tuple[TrainingProgram, Sequence[Path]]],
                  out: Path, *, shaping: str, seed: int) -> dict[str, Any]:
        """Fit a chunk critic on shaped returns of rollouts and demos (each group shaped by its own training
        program), then update the policy by advantage-weighted flow matching."""
        self._threads()
        from coda_policy.advantages import build_table
        from coda_policy.awr import AWRConfig, advantage_weighted_update, load_seeded
        from coda_policy.critic import ChunkCriticConfig
        from sim.episode import Episode

        lc = self.config
        policy = load_seeded(policy_path, seed, fresh=True)
        episodes, batches, sources = [], [], []
        for program, paths in groups:
            eps = [Episode.load(p) for p in paths]
            if eps:
                batches.append((len(episodes), self._shape(eps, program, policy.config, shaping)))
                episodes += eps
                sources += [str(Path(p).resolve().with_suffix(".npz")) for p in paths]
        chunks = _concat(batches)
        if chunks is None or not len(chunks):
            shutil.copyfile(policy_path, out)
            return {"skipped": "no chunks to train on"}
        t0 = time.perf_counter()
        table = build_table(episodes, chunks, policy)
        critic_cfg = ChunkCriticConfig(hidden=lc.critic_hidden, steps=lc.critic_steps,
                                       batch_size=lc.critic_batch, seed=seed)
        if shaping == "frozen_actor":
            return self._frozen_actor(policy, table, critic_cfg, out, t0)
        awr = AWRConfig(steps=lc.awr_steps, batch_size=lc.awr_batch, tau=lc.awr_tau, lr=lc.awr_lr, seed=seed,
                        folds=lc.awr_folds, demo_fraction=lc.awr_demo_fraction, schedule=lc.awr_schedule,
                        warmup=finetune_warmup(lc.awr_steps) if lc.awr_schedule == "cosine" else 0,
                        self_normalize=lc.awr_self_normalize, rollouts=lc.awr_rollouts, device=lc.device)
        m = advantage_weighted_update(policy, table, critic_cfg, awr)
        cm, wm, um = m["critic"], m["weights"], m["update"]
        policy.save(out)
        save_chunk_weights(out, sources, chunks, m["chunk_weights"].numpy())
        return {"shaping": shaping, "episodes": len(episodes), "chunks": len(chunks),
                "demo_chunks": int(chunks.demo.sum()), "return_mean": float(chunks.ret.mean()),
                "critic_explained_var": float(cm.get("explained_var", float("nan"))), "w_mean": wm["w_mean"],
                "w_ess": wm["w_ess"], "w_at_cap": wm["w_at_cap"],
                **{k: wm[k] for k in ("adv_demo", "adv_rollout_success", "adv_rollout_failure")},
                "flow_mse_last": um["flow_mse_last"], "update_lr": um["lr"], "backtracks": um["backtracks"],
                **({"check_loss": um["check_loss"]} if "check_loss" in um else {}),
                "train_s": round(time.perf_counter() - t0, 2)}

    def _frozen_actor(self, policy: Any, table: Any, critic_cfg: Any, out: Path, t0: float) -> dict[str, Any]:
        """The frozen-actor ablation's round: the actor stays as it is; a critic fitted on every chunk (the
        programs' shaped returns, no potential input: it runs at deployment, where none is evaluated) is
        saved with it, and at every decision picks the best of `select_k` sampled chunks by Q."""
        from coda_policy.advantages import critic_inputs, fit_table_critic
        from coda_policy.awr import save_q_select

        critic, cm = fit_table_critic(critic_inputs(policy, table), critic_cfg, device=self.config.device)
        save_q_select(policy, critic.cpu(), self.config.select_k, out)
        chunks = table.chunks
        return {"shaping": "frozen_actor", "episodes": len(np.unique(chunks.episode)), "chunks": len(chunks),
                "demo_chunks": int(chunks.demo.sum()), "return_mean": float(chunks.ret.mean()),
                "critic_explained_var": float(cm.get("explained_var", float("nan"))),
                "select_k": self.config.select_k, "train_s": round(time.perf_counter() - t0, 2)}

    def _shape(self, eps: list[Any], program: TrainingProgram, pc: Any, shaping: str) -> Any:
        from coda_policy.shaping import ShapingConfig, shape_episodes

        return shape_episodes(eps, ShapingConfig(mode=shaping), program, h=pc.chunk,
                              demo_stride=self.config.demo_stride, rollout_stride=pc.execute)


def chunk_weights_path(policy_path: Path) -> Path:
    """Where a weighted update's per-chunk weights lie, beside the checkpoint it wrote."""
    return Path(policy_path).with_suffix(".weights.npz")


def save_chunk_weights(policy_path: Path, sources: Sequence[str], chunks: Any, weights: np.ndarray) -> Path:
    """Each chunk's advantage weight with the episode file and control step it starts at (what
    `coda_policy.export_lerobot` writes as a column)."""
    path = chunk_weights_path(policy_path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        np.savez(f, episode=np.array([sources[int(e)] for e in chunks.episode]),
                 start=np.asarray(chunks.start, np.int64), weight=np.asarray(weights, np.float32),
                 demo=np.asarray(chunks.demo, bool))
    tmp.replace(path)
    return path


def retrain_steps(sft_steps: int, demos: int, bootstrap_demos: int) -> int:
    """SFT steps of a retraining on `demos` demonstrations that sees each about as often as the bootstrap's
    `sft_steps` saw its `bootstrap_demos` (`LearnConfig.retrain_steps` "scaled"); never fewer than
    `sft_steps`."""
    if bootstrap_demos < 1:
        raise ValueError(f"retrain_steps: the bootstrap had {bootstrap_demos} demonstrations")
    return max(sft_steps, round(sft_steps * demos / bootstrap_demos))


def finetune_warmup(steps: int) -> int:
    """Warm-up steps of a round's update of `steps` steps: a tenth, at least 1, at most 200."""
    return max(1, min(200, steps // 10))


def _concat(batches: list[tuple[int, Any]]) -> Any:
    """One `ChunkBatch` from per-group batches; episode indices shifted by each group's offset, every
    other column as it is (its dtype kept: the boolean `demo` and `success` masks must stay masks)."""
    if not batches:
        return None
    first = batches[0][1]
    cols = {}
    for f in dataclasses.fields(first):
        parts = [getattr(b, f.name) + off if f.name == "episode" else getattr(b, f.name)
                 for off, b in batches]
        cols[f.name] = np.concatenate(parts)
    return type(first)(**cols)
