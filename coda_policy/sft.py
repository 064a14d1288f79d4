"""Supervised fine-tuning from expert demonstrations, then closed-loop evaluation.

`python -m coda_policy.sft --preset default --family pick_place --demos 300` collects the demos (a
`sim.pool.EpisodePool`, saved under `runs/<name>/episodes/round_00/`, reused on rerun), trains the policy,
saves `runs/<name>/policy/round_00.safetensors` and evaluates it on held-out in-distribution scenes (seeds
disjoint from the demos) and out-of-distribution scenes; prints success, training throughput and
inference latency, and writes `sft_summary.json`, `sft_metrics.jsonl` and `sft_loss.png` in the run directory.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from coda_policy.dataset import ChunkDataset, batch_keys, load_episodes
from coda_policy.device import check_device_spec, resolve_device, to_device
from coda_policy.evaluate import EvalResult, eval_scenes, evaluate, latency_ms
from coda_policy.object_token.configuration_object_token import ObjectTokenConfig
from coda_policy.registry import make_policy
from coda_policy.threads import WORKER_THREADS
from common.cli import command_parser
from common.cli import console as cli_console
from common.registry import Registry
from sim.families import get_family
from sim.pool import EpisodeJob, EpisodePool


@dataclass(frozen=True, kw_only=True)
class SFTConfig:
    """One SFT run: demos → training → evaluation."""

    # run name: everything goes to <runs_dir>/<name>/
    name: str = "sft_pick_place"
    # parent folder of run directories
    runs_dir: str = "runs"
    # task family of the demos and of the evaluation scenes
    family: str = "pick_place"
    # expert demonstrations (scenes `sample_scene(demo_seed0 + i)`); failed ones stay on disk, untrained on
    demos: int = 300
    # first demo seed
    demo_seed0: int = 0
    # optimiser steps
    steps: int = 1000
    # linear warm-up steps, then cosine decay to 0
    warmup: int = 50
    # exponential moving average of the weights that is saved and evaluated (0 = off)
    ema: float = 0.999
    # the policy's own configuration (sizes, chunk, lr, batch size, seed)
    policy: ObjectTokenConfig = field(default_factory=ObjectTokenConfig)
    # held-out in-distribution / out-of-distribution evaluation episodes
    eval_id: int = 50
    eval_ood: int = 50
    # first evaluation seed (in-distribution seeds never overlap the demo seeds)
    eval_seed0: int = 100_000
    # control-step limit of an evaluation episode; None keeps the scene's own `max_steps`
    eval_max_steps: int | None = None
    # episode pool workers (demos and evaluation)
    workers: int = 2
    # log the loss every n steps
    log_every: int = 50
    # where training runs: cpu, cuda, cuda:N or auto (`coda_policy.device`); evaluation episodes act on
    # the CPU
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.demos < 1 or self.steps < 1:
            raise ValueError("demos and steps must be >= 1")
        if self.demo_seed0 + self.demos > self.eval_seed0:
            raise ValueError("demo seeds would overlap the in-distribution evaluation seeds")
        if not 0.0 <= self.ema < 1.0:
            raise ValueError(f"ema must be in [0, 1), got {self.ema}")
        check_device_spec(self.device)

    @property
    def run_dir(self) -> Path:
        return Path(self.runs_dir) / self.name


PRESETS: Registry[SFTConfig] = Registry("sft preset")
PRESETS.register("default", SFTConfig())
PRESETS.register(
    "smoke",
    SFTConfig(
        name="sft_smoke",
        demos=4,
        steps=20,
        warmup=2,
        ema=0.0,
        eval_id=2,
        eval_ood=2,
        eval_max_steps=40,
        log_every=5,
        policy=ObjectTokenConfig(d_model=32, n_layers=1, n_decoder_layers=1, batch_size=16),
    ),
)


# ---- stages ----------------------------------------------------------------------------------------
def collect_demos(cfg: SFTConfig, pool: EpisodePool, progress: Callable[[Any], None] | None = None) -> Path:
    """Expert episodes under `<run>/episodes/round_00/`; files already there are reused."""
    out = cfg.run_dir / "episodes" / "round_00"
    fam = get_family(cfg.family)
    jobs = []
    for seed in range(cfg.demo_seed0, cfg.demo_seed0 + cfg.demos):
        path = out / f"demo_{seed:05d}"
        if not path.with_suffix(".npz").exists():
            jobs.append(EpisodeJob(scene=fam.sample_scene(seed), out=path))
    errors = [r.error for r in pool.run(jobs, progress) if r.error]
    if errors:
        raise RuntimeError(f"{len(errors)} demo episodes failed to run; first: {errors[0]}")
    return out


class _Ema:
    """Exponential moving average of a module's parameters and buffers."""

    def __init__(self, module: torch.nn.Module, decay: float) -> None:
        self.decay, self.updates = decay, 0
        self.shadow = {k: v.detach().clone() for k, v in module.state_dict().items()}

    @torch.no_grad()
    def update(self, module: torch.nn.Module) -> None:
        # warm-up of the decay: a short run must not average in its untrained first steps
        self.updates += 1
        decay = min(self.decay, (1 + self.updates) / (10 + self.updates))
        for k, v in module.state_dict().items():
            if v.dtype.is_floating_point:
                self.shadow[k].lerp_(v, 1.0 - decay)
            else:
                self.shadow[k].copy_(v)

    def copy_to(self, module: torch.nn.Module) -> None:
        module.load_state_dict(self.shadow)


def warmup_cosine(step: int, warmup: int, steps: int) -> float:
    """The learning rate at `step` as a share of the peak: linear warm-up over `warmup` steps, then a cosine
    to zero at `steps`."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def train(
    policy: Any,
    data: dict[str, torch.Tensor],
    cfg: SFTConfig,
    on_log: Callable[[int, dict[str, float]], None] | None = None,
) -> dict[str, float]:
    """Minibatch flow-matching SFT on the whole-dataset tensors `data`, on `cfg.device` (the policy is moved
    there and stays; minibatch indices come from a CPU generator). Returns throughput figures."""
    pc = cfg.policy
    n = len(data["actions"])
    dev = resolve_device(cfg.device)
    policy.to(dev)
    opt = torch.optim.AdamW(policy.parameters(), lr=pc.lr, weight_decay=pc.weight_decay)

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: warmup_cosine(step, cfg.warmup, cfg.steps))
    ema = _Ema(policy, cfg.ema) if cfg.ema > 0 else None
    gen = torch.Generator().manual_seed(pc.seed)
    torch.manual_seed(pc.seed)
    keys = batch_keys(policy, data)
    policy.train()
    t0, c0 = time.perf_counter(), time.process_time()
    for step in range(cfg.steps):
        idx = torch.randint(n, (pc.batch_size,), generator=gen)
        loss, metrics = policy(to_device({k: data[k][idx] for k in keys}, dev))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        sched.step()
        if ema:
            ema.update(policy)
        if on_log and (step % cfg.log_every == 0 or step == cfg.steps - 1):
            on_log(step, metrics | {"lr": sched.get_last_lr()[0]})
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if ema:
        ema.copy_to(policy)
    policy.eval()
    samples = cfg.steps * pc.batch_size
    # CPU seconds too: on shared cores wall time says as much about the neighbours as about this code
    return {
        "train_s": wall,
        "samples_per_s": samples / wall,
        "train_cpu_s": cpu,
        "samples_per_cpu_s": samples / max(cpu, 1e-9),
        "train_chunks": n,
    }


def plot_losses(log: list[dict[str, float]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([r["step"] for r in log], [r["loss"] for r in log])
    ax.set(xlabel="step", ylabel="flow-matching loss", yscale="log", title="SFT loss")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ---- main ------------------------------------------------------------------------------------------
def _progress(console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    cols = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
    )
    return Progress(*cols, console=console)


def fit(cfg: SFTConfig, demo_dir: Path, bar: Any) -> tuple[Any, ChunkDataset, dict[str, float], list[dict]]:
    """Dataset from the successful demos, statistics, training; logs to `<run>/sft_metrics.jsonl` live."""
    dataset = ChunkDataset(load_episodes(demo_dir), cfg.policy.chunk, only_success=True,
                           grounding=cfg.policy.grounding, targets=cfg.policy.target_loss > 0)
    if not len(dataset):
        raise RuntimeError(f"no successful demos under {demo_dir}")
    policy = make_policy(cfg.policy)
    policy.set_stats(dataset.stats())
    task = bar.add_task("train", total=cfg.steps, info="")
    log: list[dict[str, float]] = []

    def on_log(step: int, m: dict[str, float]) -> None:
        log.append({"step": step, **m})
        with open(cfg.run_dir / "sft_metrics.jsonl", "a" if step else "w") as f:  # readable while training
            f.write(json.dumps(log[-1]) + "\n")
        bar.update(task, completed=step + 1, info=f"loss {m['loss']:.4f}")

    speed = train(policy, dataset.tensors(), cfg, on_log)
    return policy, dataset, speed, log


def evaluate_sets(cfg: SFTConfig, ckpt: Path, pool: EpisodePool, bar: Any) -> dict[str, EvalResult]:
    """Held-out in-distribution scenes (seeds from `eval_seed0`, disjoint from the demos) and OOD scenes."""
    evals = {}
    for name, n, ood in (("in_distribution", cfg.eval_id, False), ("ood", cfg.eval_ood, True)):
        scenes = eval_scenes(cfg.family, range(cfg.eval_seed0, cfg.eval_seed0 + n), ood=ood)
        task = bar.add_task(f"eval {name}", total=n, info="")
        evals[name] = evaluate(
            ckpt,
            scenes,
            pool,
            name=name,
            max_steps=cfg.eval_max_steps,
            progress=lambda r, t=task: bar.advance(t),
        )
    return evals


def run(cfg: SFTConfig, console: Any = None) -> dict[str, Any]:
    """The whole pipeline; returns (and writes) the summary."""

    console = console or cli_console()
    t0 = time.perf_counter()
    run_dir = cfg.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "sft_config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
    torch.set_num_threads(cfg.policy.torch_threads)
    with EpisodePool(cfg.workers) as pool, _progress(console) as bar:
        task = bar.add_task("demos", total=cfg.demos, info="")
        demo_dir = collect_demos(cfg, pool, lambda r: bar.advance(task))
        bar.update(task, completed=cfg.demos)
        policy, dataset, speed, log = fit(cfg, demo_dir, bar)
        ckpt = policy.save(run_dir / "policy" / "round_00.safetensors")
        evals = evaluate_sets(cfg, ckpt, pool, bar)
    torch.set_num_threads(WORKER_THREADS)  # latency as a pool worker sees it (on the CPU)
    lat = latency_ms(policy.cpu(), eval_scenes(cfg.family, [cfg.eval_seed0])[0])
    summary = _summary(cfg, dataset, speed, evals, lat, ckpt) | {"wall_s": round(time.perf_counter() - t0, 1)}
    plot_losses(log, run_dir / "sft_loss.png")
    (run_dir / "sft_summary.json").write_text(json.dumps(summary, indent=1))
    _print(console, summary)
    return summary


def _summary(
    cfg: SFTConfig,
    dataset: ChunkDataset,
    speed: dict[str, float],
    evals: dict[str, EvalResult],
    lat: float,
    ckpt: Path,
) -> dict[str, Any]:
    return {
        "family": cfg.family,
        "checkpoint": str(ckpt),
        "demos": cfg.demos,
        "demos_successful": len(dataset.episodes),
        "train_chunks": len(dataset),
        "steps": cfg.steps,
        "batch_size": cfg.policy.batch_size,
        "train_s": round(speed["train_s"], 1),
        "samples_per_s": round(speed["samples_per_s"], 1),
        "train_cpu_s": round(speed["train_cpu_s"], 1),
        "samples_per_cpu_s": round(speed["samples_per_cpu_s"], 1),
        "latency_ms_per_chunk": round(lat, 2),
        "chunk": cfg.policy.chunk,
        "execute": cfg.policy.execute,
        **{f"{k}_success": round(v.success_rate, 3) for k, v in evals.items()},
        "eval": {k: v.summary() for k, v in evals.items()},
    }


def _print(console: Any, s: dict[str, Any]) -> None:
    from rich.table import Table

    t = Table(title=f"SFT on {s['family']} ({s['demos_successful']}/{s['demos']} demos succeeded)")
    for col in ("in-distribution success", "OOD success", "train samples/s", "latency ms/chunk (median)"):
        t.add_column(col, justify="right")
    ev = s["eval"]
    t.add_row(
        f"{s['in_distribution_success']:.1%} (n={ev['in_distribution']['n']})",
        f"{s['ood_success']:.1%} (n={ev['ood']['n']})",
        f"{s['samples_per_s']:.0f} ({s['samples_per_cpu_s']:.0f} per CPU-s)",
        f"{s['latency_ms_per_chunk']:.1f}",
    )
    console.print(t)
    console.print(
        f"checkpoint: {s['checkpoint']}  failing phases: ID {ev['in_distribution']['failing_phases']}"
        f"  OOD {ev['ood']['failing_phases']}\n"
        f"training {s['train_s']:.0f} s wall / {s['train_cpu_s']:.0f} CPU-s"
        f" ({s['steps']} steps x {s['batch_size']}); whole run {s['wall_s']:.0f} s wall"
    )


RUN_FLAGS = {
    "name": str,
    "runs_dir": str,
    "family": str,
    "demos": int,
    "steps": int,
    "eval_id": int,
    "eval_ood": int,
    "workers": int,
    "device": str,
}
POLICY_FLAGS = {
    "chunk": int,
    "execute": int,
    "batch_size": int,
    "lr": float,
    "d_model": int,
    "seed": int,
    "torch_threads": int,
}


def config_from_args(argv: list[str] | None = None) -> SFTConfig:
    """A preset with command-line overrides; a typo in a preset or family name exits with "did you mean"."""
    p = command_parser("coda_policy.sft", __doc__)
    p.add_argument("--preset", default="default", help=f"one of {PRESETS.names()}")
    for name, typ in RUN_FLAGS.items():
        p.add_argument(f"--{name.replace('_', '-')}", type=typ)
    for name, typ in POLICY_FLAGS.items():
        p.add_argument(f"--{name.replace('_', '-')}", type=typ, help="policy config")
    a = vars(p.parse_args(argv))
    try:
        cfg = PRESETS.get(a.pop("preset"))
        get_family(a["family"] or cfg.family)
        pol = {k: v for k in POLICY_FLAGS if (v := a.pop(k)) is not None}
        if "chunk" in pol and "execute" not in pol:
            pol["execute"] = min(cfg.policy.execute, pol["chunk"])
        cfg = dataclasses.replace(
            cfg,
            policy=dataclasses.replace(cfg.policy, **pol),
            **{k: v for k, v in a.items() if v is not None},
        )
        resolve_device(cfg.device)  # a missing GPU is found before the demos are collected
        return cfg
    except (KeyError, ValueError) as e:
        p.error(str(e))


def main(argv: list[str] | None = None) -> None:
    run(config_from_args(argv))


if __name__ == "__main__":
    main()
