"""Answers FINDINGS #9 (and the weighted update's step size, `awr_lr`). One advantage-weighted round on top of
an SFT checkpoint, measured before/after on held scenes.

`python -m studies.aw_round --preset default --name sft_pick_place [--mode text2potential,sparse]`

Per seed: roll the SFT policy out on sampled scenes, keep those it fails (plus some it solves), collect
more rollouts (other sampling seeds) and expert demonstrations there, shape chunk returns per mode
(`coda_policy.shaping`), fit a fresh chunk critic, and update a copy of the policy by advantage-weighted
flow matching (`coda_policy.awr`) — or, for `frozen_actor`, leave it and pick among K sampled chunks by Q.
Success on a fixed held set of scenes (by default from the family's out-of-distribution ranges, like the
candidates, since the SFT policy may solve every in-distribution scene) is measured before and after with
the same sampling seed, beside a smaller regression set from the other ranges. Everything lands under
`runs/<name>/aw_round/<checkpoint hash>/`; episodes are reused on rerun.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from coda_policy.advantages import build_table, critic_inputs, fit_table_critic
from coda_policy.awr import AWRConfig, QSelectFactory, SeededPolicy, advantage_weighted_update, load_seeded
from coda_policy.critic import ChunkCriticConfig
from coda_policy.shaping import SHAPING_MODES, ShapingConfig, shape_episodes
from coda_policy.threads import TRAIN_THREADS
from common.cli import command_parser
from common.cli import console as cli_console
from common.registry import Registry
from sim.episode import Episode
from sim.families import get_family
from sim.pool import EpisodeJob, EpisodePool


@dataclass(frozen=True, kw_only=True)
class AWRoundConfig:
    """One advantage-weighted round and its before/after measurement."""

    # SFT run name: loads <runs_dir>/<name>/policy/round_00.safetensors and writes under
    # <runs_dir>/<name>/aw_round/
    name: str = "sft_pick_place"
    # parent folder of run directories
    runs_dir: str = "runs"
    # an explicit checkpoint instead of the run's round_00.safetensors
    checkpoint: str | None = None
    # task family of every scene
    family: str = "pick_place"
    # shaping modes to train and compare (see coda_policy.shaping.SHAPING_MODES)
    modes: tuple[str, ...] = ("text2potential",)
    # round seeds: scene sampling, sampling noise, critic init and minibatches; results are their mean
    seeds: tuple[int, ...] = (0, 1, 2)
    # candidate and held scenes come from the family's out-of-distribution factor ranges (where the SFT
    # policy fails; in distribution it may solve everything); False: in-distribution ranges
    ood: bool = True
    # candidate scenes the SFT policy is tried on, per seed
    candidates: int = 40
    # solved candidate scenes kept per failed one (at least one when any was solved)
    solved_per_failed: float = 0.5
    # extra policy rollouts (other sampling seeds) on each kept scene
    rollouts_per_scene: int = 1
    # expert chunks start every this many steps of a demonstration
    demo_stride: int = 2
    # SFT demonstrations (<run>/episodes/round_00) replayed beside the round's data, against forgetting
    replay: int = 60
    # held scenes for before/after, from the same ranges as the candidates (one set for every seed)
    held: int = 50
    # extra held scenes from the other ranges (a regression check; 0 = skip)
    held_other: int = 20
    # first seed of candidate scenes (seed k uses scene_seed0 + 1000·k + i) and of held scenes
    scene_seed0: int = 300_000
    held_seed0: int = 200_000
    # training program file for text2potential (None: the family's seed program)
    program: str | None = None
    # shaping (its mode is set per mode), critic and update settings
    shaping: ShapingConfig = field(default_factory=ShapingConfig)
    critic: ChunkCriticConfig = field(default_factory=ChunkCriticConfig)
    awr: AWRConfig = field(default_factory=AWRConfig)
    # frozen_actor: chunks sampled per decision
    select_k: int = 8
    # episode pool workers
    workers: int = 2
    # torch threads for training in this process (its own knob, as a separate script; the default and
    # the measurement behind it: coda_policy.threads.TRAIN_THREADS)
    threads: int = TRAIN_THREADS

    def __post_init__(self) -> None:
        bad = [m for m in self.modes if m not in SHAPING_MODES]
        if bad or not self.modes:
            raise ValueError(f"unknown mode(s) {bad}; modes: {', '.join(SHAPING_MODES)}")
        if not self.seeds or self.candidates < 1 or self.held < 1:
            raise ValueError("need at least one seed, candidate scene and held scene")
        if self.candidates > 1000 or min(self.seeds) < 0:
            raise ValueError("candidates must be <= 1000 and seeds >= 0 (each seed owns 1000 scene seeds)")
        cand_end = self.scene_seed0 + 1000 * max(self.seeds) + self.candidates
        if self.scene_seed0 < self.held_seed0 + self.held and self.held_seed0 < cand_end:
            raise ValueError("candidate scene seeds would overlap the held scenes")

    @property
    def run_dir(self) -> Path:
        return Path(self.runs_dir) / self.name

    @property
    def scene_kind(self) -> str:
        return "OOD" if self.ood else "ID"

    @property
    def other_kind(self) -> str:
        return "ID" if self.ood else "OOD"

    @property
    def checkpoint_path(self) -> Path:
        return Path(self.checkpoint) if self.checkpoint else self.run_dir / "policy" / "round_00.safetensors"


PRESETS: Registry[AWRoundConfig] = Registry("aw_round preset")
PRESETS.register("default", AWRoundConfig())
PRESETS.register("smoke", AWRoundConfig(
    name="sft_smoke", seeds=(0,), candidates=3, rollouts_per_scene=1, held=3, held_other=2, replay=2,
    demo_stride=4, select_k=2,
    critic=ChunkCriticConfig(hidden=32, steps=20, batch_size=32), awr=AWRConfig(steps=5, batch_size=16)))


# ---- stages ----------------------------------------------------------------------------------------
def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:10]


def _program(cfg: AWRoundConfig) -> Any:
    from programs.render import load_program
    from programs.seeds import seed_library

    return load_program(cfg.program) if cfg.program else seed_library()[cfg.family][1]


@dataclass(frozen=True)
class Ran:
    """One job's outcome, with its episode loaded when it was saved."""

    success: bool
    error: str | None
    episode: Episode | None


def _saved(job: EpisodeJob) -> bool:
    """An episode of this job's scene is already saved at its path."""
    meta = Path(job.out).with_suffix(".json")
    return meta.exists() and json.loads(meta.read_text())["scene_id"] == job.scene.scene_id


def run_jobs(pool: EpisodePool, jobs: list[EpisodeJob], progress: Callable) -> list[Ran]:
    """Run the jobs, reusing any episode an earlier run saved at the same path; saved episodes are loaded."""
    todo = [j for j in jobs if j.out is None or not _saved(j)]
    for _ in range(len(jobs) - len(todo)):
        progress(None)
    by_job = {id(j): r for j, r in zip(todo, pool.run(todo, progress), strict=True)}
    out = []
    for j in jobs:
        r = by_job.get(id(j))
        if r is not None and (r.error or j.out is None):
            out.append(Ran(r.success, r.error, None))
        else:
            ep = Episode.load(j.out)
            out.append(Ran(ep.success, None, ep))
    return out


def select_scenes(success: list[bool], ratio: float, rng: np.random.Generator) -> list[int]:
    """Indices of every failed candidate plus round(ratio · failures) solved ones (≥ 1 if any solved)."""
    failed = [i for i, s in enumerate(success) if not s]
    solved = [i for i, s in enumerate(success) if s]
    n = min(len(solved), max(1 if solved else 0, round(ratio * len(failed))))
    return failed + sorted(rng.choice(solved, n, replace=False).tolist() if n else [])


def collect(cfg: AWRoundConfig, seed: int, ckpt: Path, pool: EpisodePool, out: Path,
            progress: Callable) -> tuple[list[Episode], dict[str, Any]]:
    """Candidate rollouts → kept scenes → more rollouts and expert demos there; returns the training
    episodes (successful demos only) and what happened."""
    fam = get_family(cfg.family)
    seeds = [cfg.scene_seed0 + 1000 * seed + i for i in range(cfg.candidates)]
    scenes = [fam.sample_scene(s, ood=cfg.ood) for s in seeds]
    job = lambda sc, pol, tag: EpisodeJob(scene=sc, policy=pol, out=out / tag, record_every=1)  # noqa: E731
    jobs = [job(sc, SeededPolicy(str(ckpt), seed), f"cand_{s}") for s, sc in zip(seeds, scenes, strict=True)]
    cand = run_jobs(pool, jobs, progress("candidates", len(jobs)))
    kept = select_scenes([r.success for r in cand], cfg.solved_per_failed, np.random.default_rng(seed))
    jobs = [job(scenes[i], SeededPolicy(str(ckpt), 1000 * (seed + 1) + j), f"roll_{seeds[i]}_{j}")
            for i in kept for j in range(cfg.rollouts_per_scene)]
    jobs += [job(scenes[i], "expert", f"demo_{seeds[i]}") for i in kept]
    more = run_jobs(pool, jobs, progress("rollouts+demos", len(jobs)))
    eps = [r.episode for r in (*[cand[i] for i in kept], *more) if r.episode is not None]
    replay = replay_demos(cfg, seed)
    train = [e for e in eps if not e.is_demonstration or e.success] + replay
    info = {"candidates": len(cand), "candidate_success": float(np.mean([r.success for r in cand])),
            "kept_scenes": len(kept), "kept_failed": sum(not cand[i].success for i in kept),
            "rollouts": sum(not e.is_demonstration for e in train),
            "rollout_success": float(np.mean([e.success for e in train if not e.is_demonstration] or [0.0])),
            "demos": sum(e.is_demonstration for e in train) - len(replay),
            "replayed_sft_demos": len(replay)}
    errors = [r.error for r in (*cand, *more) if r.error]
    info |= {"errors": len(errors), "first_error": errors[0] if errors else None}
    return train, info


def replay_demos(cfg: AWRoundConfig, seed: int) -> list[Episode]:
    """`cfg.replay` successful SFT demos (a seeded sample), recorded every step; none if the run has none."""
    paths = sorted((cfg.run_dir / "episodes" / "round_00").glob("*.npz"))
    if not cfg.replay or not paths:
        return []
    pick = np.random.default_rng(seed).permutation(len(paths))[: cfg.replay]
    eps = [Episode.load(paths[i]) for i in sorted(pick)]
    return [e for e in eps if e.success and len(e.states) == len(e.actions) + 1]


def held_success(cfg: AWRoundConfig, factory: Any, pool: EpisodePool, progress: Callable,
                 other: bool = False) -> float:
    """Success rate on the held scenes (no episodes saved; errors count as failures); `other`: the
    regression set from the other factor ranges."""
    fam = get_family(cfg.family)
    n, ood = (cfg.held_other, not cfg.ood) if other else (cfg.held, cfg.ood)
    scenes = [fam.sample_scene(cfg.held_seed0 + i, ood=ood) for i in range(n)]
    res = run_jobs(pool, [EpisodeJob(scene=s, policy=factory) for s in scenes], progress)
    return float(np.mean([r.success for r in res]))


def train_mode(cfg: AWRoundConfig, mode: str, seed: int, ckpt: Path, episodes: list[Episode], table: Any,
               out: Path, log: Callable) -> tuple[Any, dict[str, Any]]:
    """Critic (and, unless frozen_actor, a weighted update) for one mode; returns the policy factory to
    evaluate and the metrics."""
    torch.set_num_threads(cfg.threads)
    policy = load_seeded(ckpt, seed, fresh=True)
    pc = policy.config
    chunks = shape_episodes(episodes, dataclasses.replace(cfg.shaping, mode=mode), _program(cfg), h=pc.chunk,
                            demo_stride=cfg.demo_stride, rollout_stride=pc.execute)
    same = np.array_equal(chunks.start, table.chunks.start) and np.array_equal(chunks.end, table.chunks.end)
    if not same:
        raise RuntimeError("chunk endpoints differ between shaping modes")  # the table is shared by modes
    table = dataclasses.replace(table, chunks=chunks)
    t0 = time.perf_counter()
    # the frozen actor's critic runs at deployment, where no potential is evaluated (and βΦ(s) is a
    # constant across the K chunks it ranks, so it could not change the pick anyway)
    ccfg = dataclasses.replace(cfg.critic, seed=seed,
                               potential_feature=cfg.critic.potential_feature and mode != "frozen_actor")
    m: dict[str, Any] = {"chunks": len(chunks), "demo_chunks": int(chunks.demo.sum()),
                         "return_mean": float(chunks.ret.mean()), "return_std": float(chunks.ret.std())}
    if mode == "frozen_actor":
        critic, m["critic"] = fit_table_critic(critic_inputs(policy, table, ccfg.potential_feature), ccfg)
        m["critic_s"] = round(time.perf_counter() - t0, 1)
        _log_critic(log, seed, mode, m["critic"])
        critic_path = critic.save(out / "critic_frozen_actor.safetensors")
        return QSelectFactory(str(ckpt), str(critic_path), seed, cfg.select_k), m
    # the loop's own update (`advantage_weighted_update`: the same composition as the `train` node)
    m |= advantage_weighted_update(policy, table, ccfg, dataclasses.replace(cfg.awr, seed=seed))
    m.pop("chunk_weights")  # per chunk, not a figure of the round
    m["critic_update_s"] = round(time.perf_counter() - t0, 1)
    _log_critic(log, seed, mode, m["critic"])
    log(f"seed {seed} {mode}: mean normalised advantage by chunk source: "
        + ", ".join(f"{k[4:]} {v:+.2f}" for k, v in m["weights"].items() if k.startswith("adv_")
                    and k not in ("adv_mean", "adv_std")))
    path = policy.save(out / f"policy_{mode}.safetensors")
    return SeededPolicy(str(path), seed), m


def _log_critic(log: Callable, seed: int, mode: str, cm: dict[str, float]) -> None:
    val = f", held-out episodes {cm['val_explained_var']:.3f}" if "val_explained_var" in cm else ""
    log(f"seed {seed} {mode}: critic explained variance of TD targets: fit {cm['explained_var']:.3f}{val}")


# ---- main ------------------------------------------------------------------------------------------
def run_seed(cfg: AWRoundConfig, seed: int, ckpt: Path, base: Path, pool: EpisodePool, progress: Callable,
             log: Callable) -> dict[str, Any]:
    out = base / f"seed{seed}"
    t0 = time.perf_counter()
    episodes, info = collect(cfg, seed, ckpt, pool, out / f"episodes_{cfg.scene_kind}", progress)
    log(f"seed {seed}: {info}")
    policy = load_seeded(ckpt, seed)
    pc = policy.config
    chunks = shape_episodes(episodes, cfg.shaping, _program(cfg), h=pc.chunk, demo_stride=cfg.demo_stride,
                            rollout_stride=pc.execute)
    table = build_table(episodes, chunks, policy)
    res: dict[str, Any] = {"data": info, "collect_s": round(time.perf_counter() - t0, 1)}
    # the SFT's held success, reused on rerun
    cache = out / f"before_{cfg.scene_kind}_{cfg.held_seed0}_{cfg.held}_{cfg.held_other}.json"
    if cache.exists():
        res |= json.loads(cache.read_text())
    else:
        res |= measure(cfg, SeededPolicy(str(ckpt), seed), pool, progress, "SFT", "before")
        cache.write_text(json.dumps({k: res[k] for k in ("before", "before_other")}))
    res["modes"] = {}
    for mode in cfg.modes:
        factory, m = train_mode(cfg, mode, seed, ckpt, episodes, table, out, log)
        m |= measure(cfg, factory, pool, progress, mode, "after")
        res["modes"][mode] = m
        log(f"seed {seed} {mode}: held {cfg.scene_kind} success {res['before']:.1%} → {m['after']:.1%}")
    return res


def measure(cfg: AWRoundConfig, factory: Any, pool: EpisodePool, progress: Callable, what: str,
            key: str) -> dict[str, float | None]:
    """Held success on the main set and (if any) the other-ranges set."""
    out: dict[str, float | None] = {key: held_success(cfg, factory, pool, progress(
        f"held {cfg.scene_kind}: {what}", cfg.held))}
    out[f"{key}_other"] = held_success(cfg, factory, pool, progress(
        f"held {cfg.other_kind}: {what}", cfg.held_other), other=True) if cfg.held_other else None
    return out


def summarise(cfg: AWRoundConfig, per_seed: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Mean and std over seeds of success before and after each mode."""

    def stat(xs: list[float]) -> dict[str, Any]:
        return {"mean": statistics.fmean(xs), "std": statistics.pstdev(xs), "per_seed": xs}

    rows = [("before", [r for r in per_seed.values()])]
    rows += [(mode, [r["modes"][mode] for r in per_seed.values()]) for mode in cfg.modes]
    out: dict[str, Any] = {}
    for name, rs in rows:
        key = "before" if name == "before" else "after"
        out[name] = stat([r[key] for r in rs])
        if cfg.held_other:
            out[name]["other"] = stat([r[f"{key}_other"] for r in rs])
        if name != "before":
            out[name]["delta_mean"] = out[name]["mean"] - out["before"]["mean"]
    return out


def print_table(console: Any, cfg: AWRoundConfig, summary: dict[str, Any]) -> None:
    from rich.table import Table

    t = Table(title=f"Advantage-weighted round on {cfg.family}: held success, {cfg.held} {cfg.scene_kind} "
                    f"scenes, {len(cfg.seeds)} seed(s)")
    t.add_column("policy")
    for s in cfg.seeds:
        t.add_column(f"seed {s}", justify="right")
    t.add_column("mean ± std", justify="right")
    t.add_column("Δ vs SFT", justify="right")
    if cfg.held_other:
        t.add_column(f"{cfg.other_kind} ({cfg.held_other} scenes) mean", justify="right")
    for key, label in (("before", "SFT (before)"), *((m, f"after: {m}") for m in cfg.modes)):
        r = summary[key]
        delta = f"{100 * r['delta_mean']:+.1f} pp" if "delta_mean" in r else ""
        other = [f"{r['other']['mean']:.1%}"] if cfg.held_other else []
        t.add_row(label, *(f"{x:.1%}" for x in r["per_seed"]), f"{r['mean']:.1%} ± {r['std']:.1%}", delta,
                  *other)
    console.print(t)


def run(cfg: AWRoundConfig, console: Any = None) -> dict[str, Any]:
    """The whole round for every seed and mode; writes `<run>/aw_round_<modes>.json` and returns it."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = console or cli_console()
    ckpt = cfg.checkpoint_path
    if not ckpt.exists():
        raise FileNotFoundError(f"no SFT checkpoint at {ckpt}: run `python -m coda_policy.sft --name "
                                f"{cfg.name}` first, or pass --checkpoint")
    base = cfg.run_dir / "aw_round" / _digest(ckpt)
    base.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.threads)
    cols = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    t0, per_seed = time.perf_counter(), {}
    with EpisodePool(cfg.workers) as pool, Progress(*cols, console=console) as bar:

        def progress(what: str, total: int) -> Callable:
            task = bar.add_task(what, total=total)
            return lambda r: bar.advance(task)

        for seed in cfg.seeds:
            tick = lambda what, n, s=seed: progress(f"seed {s}: {what}", n)  # noqa: E731
            per_seed[seed] = run_seed(cfg, seed, ckpt, base, pool, tick, bar.console.log)
    summary = summarise(cfg, per_seed)
    result = {"config": dataclasses.asdict(cfg), "checkpoint": str(ckpt), "artifacts": str(base),
              "wall_s": round(time.perf_counter() - t0, 1), "summary": summary,
              "seeds": {str(k): v for k, v in per_seed.items()}}
    tag = "all" if set(cfg.modes) == set(SHAPING_MODES) else "+".join(cfg.modes)
    path = cfg.run_dir / f"aw_round_{tag}.json"
    path.write_text(json.dumps(result, indent=1))
    print_table(console, cfg, summary)
    console.print(f"results: {path}  (wall {result['wall_s']:.0f} s)")
    return result


def config_from_args(argv: list[str] | None = None) -> AWRoundConfig:
    p = command_parser("studies.aw_round", __doc__)
    p.add_argument("--preset", default="default", help=f"one of {PRESETS.names()}")
    p.add_argument("--mode", help="comma-separated shaping modes ('all' = every one): "
                   + ", ".join(SHAPING_MODES))
    p.add_argument("--seeds", help="comma-separated round seeds, e.g. 0,1,2")
    for flag, typ in (("name", str), ("runs-dir", str), ("checkpoint", str), ("family", str),
                      ("program", str), ("candidates", int), ("held", int), ("rollouts-per-scene", int),
                      ("workers", int), ("threads", int)):
        p.add_argument(f"--{flag}", type=typ)
    for flag, typ in (("critic-steps", int), ("awr-steps", int), ("tau", float), ("w-max", float),
                      ("lr", float), ("beta", float)):
        p.add_argument(f"--{flag}", type=typ)
    a = vars(p.parse_args(argv))
    cfg = PRESETS.get(a.pop("preset"))
    mode, seeds = a.pop("mode"), a.pop("seeds")
    critic_steps, beta = a.pop("critic_steps"), a.pop("beta")
    awr = {k: v for k, v in (("steps", a.pop("awr_steps")), ("tau", a.pop("tau")), ("w_max", a.pop("w_max")),
                             ("lr", a.pop("lr"))) if v is not None}
    over: dict[str, Any] = {k: v for k, v in a.items() if v is not None}
    if mode:
        over["modes"] = SHAPING_MODES if mode == "all" else tuple(m.strip() for m in mode.split(","))
    if seeds:
        over["seeds"] = tuple(int(s) for s in seeds.split(","))
    if critic_steps is not None:
        over["critic"] = dataclasses.replace(cfg.critic, steps=critic_steps)
    if beta is not None:
        over["shaping"] = dataclasses.replace(cfg.shaping, beta=beta)
    get_family(over.get("family", cfg.family))  # a typo fails here, with "did you mean"
    return dataclasses.replace(cfg, awr=dataclasses.replace(cfg.awr, **awr), **over)


def main(argv: list[str] | None = None) -> None:
    run(config_from_args(argv))


if __name__ == "__main__":
    main()
