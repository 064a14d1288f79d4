"""Answers FINDINGS #11. Which policy update turns a round's scenes into held-out success? A development
measurement on scenes that are not the frozen suites, for choosing the update honestly.

    python -m studies.update_dev                         # every update, seed 0, two rounds
    python -m studies.update_dev --updates sft,aw --seeds 2

Table 1's SFT-updated rows gained 10-17.5 pp OOD over their bootstrap, its advantage-weighted rows −5 to
+5 pp (FINDINGS #8-#10), and every change of the weighted update tried so far was measured on the frozen
suites it is reported on. This measures the updates outside the table on a development set:

- start from a seed's shared Table 1 bootstrap (the policy every cell starts from) and its seed demos;
- each round, draw `budget` valid scenes per family, half in distribution and half with every factor out
  of distribution (`studies.ceiling`'s `mixed` source, its own seeds), with the expert's demos;
- roll the update's current policy out on them (the rollouts the weighted update trains its critic on);
- update as Table 1's `default` preset does (every demonstration so far replayed; the weighted update's
  groups shaped by each family's seed training program), once per listed update;
- evaluate every final policy on development scenes: `per_split` validated scenes per family in
  distribution (`id`) and with every factor out (`ood`), drawn from `DEV_SEED`, disjoint from the frozen
  suites' seeds, the loop's and the training draws'.

Results land in `<results>/update_dev/` (default runs/results/findings; the committed ones: `--results
docs/results/findings`) per (update, seed) as each finishes (a killed run
resumes; demos, rollouts, policies and their update metrics are cached under `--out`), and `update_dev.md` is
rebuilt from them; another `--per-split` gets its own folder and table (`update_dev_n<N>`) and re-evaluates
the cached policies on the larger development set.
The frozen suites are never read here.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.config import PRESETS, WEIGHTED_UPDATE_BEFORE, LearnConfig
from common.cli import comma_list, command_parser
from common.markdown import md_table
from experiments.table import suites as frozen
from experiments.table.cells import cell_config, evaluate, shared_bootstrap
from experiments.table.presets import TABLES
from experiments.table.record import ROOT, RUNS_RESULTS, provenance, sha256
from experiments.table.stats import mean_se
from studies import ceiling

DEV_SEED = 7_560_000  # the development scenes: disjoint from the suites (7_340_000), the ceiling's draws
SPLITS = ("id", "ood")
RESULTS = RUNS_RESULTS / "findings"  # the committed records: --results docs/results/findings
_BASE = PRESETS.get("default").learn


def _learn(**over: Any) -> LearnConfig:
    """The earlier weighted update (`WEIGHTED_UPDATE_BEFORE`) with `over` changed: every row names its
    settings against that one, whatever `LearnConfig`'s defaults are now."""
    return dataclasses.replace(_BASE, **{**WEIGHTED_UPDATE_BEFORE, **over})


# update name → (the round's update: "sft" or "aw", its LearnConfig, what it is)
UPDATES: dict[str, tuple[str, LearnConfig, str]] = {
    "sft": ("sft", _BASE, "SFT fine-tune on every demo so far (lr 1e-3, warm-up + cosine)"),
    "aw": ("aw", _learn(),
           "the weighted update before FINDINGS #11: half rollouts, lr 1e-4 constant, mean-1 weights"),
    "aw_flat": ("aw", _learn(awr_tau=1e9),
                "the same with τ → ∞ (every weight 1): SFT on the demo/rollout mixture"),
    "aw_demo_sched": ("aw", _learn(awr_demo_fraction=1.0, awr_lr=1e-3, awr_schedule="cosine",
                                   awr_self_normalize=True),
                      "demo chunks only at SFT's step and schedule, weights self-normalised per minibatch"),
    "aw_demo_sched_tau3": ("aw", _learn(awr_demo_fraction=1.0, awr_lr=1e-3, awr_schedule="cosine",
                                        awr_self_normalize=True, awr_tau=3.0),
                           "the same at τ = 3 (tempered weights: exp(Â/3), more chunks carry the update)"),
    "aw_demo_sched_flat": ("aw", _learn(awr_demo_fraction=1.0, awr_lr=1e-3, awr_schedule="cosine",
                                        awr_self_normalize=True, awr_tau=1e9),
                           "the same with τ → ∞: SFT through the weighted update's code path"),
    "aw_success_sched": ("aw", _learn(awr_lr=1e-3, awr_schedule="cosine", awr_self_normalize=True,
                                      awr_rollouts="success"),
                         "half successful-rollout chunks (failed ones only fit the critic) at SFT's step and "
                         "schedule, self-normalised weights"),
    "aw_mix_sched": ("aw", _learn(awr_lr=1e-3, awr_schedule="cosine", awr_self_normalize=True),
                     "half rollouts at SFT's step and schedule, weights self-normalised per minibatch"),
}


@dataclasses.dataclass(frozen=True)
class DevScene:
    """One development scene on disk (what `experiments.table.cells.evaluate` reads, like a suite's)."""

    path: Path
    family: str
    split: str

    def load(self) -> Any:
        from sim.scene import SceneSpec

        return SceneSpec.from_json(self.path.read_text())


def dev_scenes(families: Sequence[str], per_split: int, out: Path, pool: Any,
               space: str = "core") -> list[DevScene]:
    """The development set: validated draws from `DEV_SEED` in `space`, cached under `out` (the extended
    space's draws share the core factors' values with the core set's: `sample_factors` draws them first)."""
    scenes = []
    for family in families:
        fam_i = frozen.FAMILIES.index(family)
        for split in SPLITS:
            for i in range(per_split):
                path = out / family / split / f"{i:02d}.json"
                if not path.exists():
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(_valid_draw(family, fam_i, split, i, pool, space).to_json())
                scenes.append(DevScene(path, family, split))
    return scenes


def _valid_draw(family: str, fam_i: int, split: str, i: int, pool: Any, space: str = "core") -> Any:
    from sim.families import get_family

    fam = get_family(family)
    for start in range(0, frozen.MAX_DRAWS, 2):
        cands = []
        for a in range(start, start + 2):
            rng = np.random.default_rng([DEV_SEED, fam_i, SPLITS.index(split), i, a])
            values = fam.sample_factors(rng, ood=split == "ood", space=space)
            seed = DEV_SEED + 10_000 * SPLITS.index(split) + 100 * i + a
            try:  # a draw that cannot be built (no room for what the extended space places) is rejected
                cands.append(fam.make_scene(values, seed=seed))
            except ValueError:
                continue
        checks = [pool.executor.submit(frozen._check, c.to_json()) for c in cands]
        ok = [c for c, f in zip(cands, checks, strict=True) if f.result()[0]]
        if ok:
            return ok[0]
    raise RuntimeError(f"{family}/{split} development scene {i}: no valid draw in {frozen.MAX_DRAWS}")


def _scene(episode: Path) -> dict[str, Any]:
    """An episode's scene, read from its JSON sidecar (the arrays stay unread)."""
    return json.loads(episode.with_suffix(".json").read_text())["scene"]


def rollouts(policy: Path, demos: Sequence[Path], seed: int, out: Path, pool: Any,
             max_steps: int | None) -> list[Path]:
    """`policy` on every demo's scene, episodes saved under `out` (cached)."""
    from coda_policy.awr import SeededPolicy
    from sim.pool import EpisodeJob
    from sim.scene import SceneSpec

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{d.stem}.npz" for d in demos]
    factory = SeededPolicy(str(policy), seed)
    jobs = [EpisodeJob(scene=SceneSpec.model_validate(_scene(d)), policy=factory, out=p.with_suffix(""),
                       max_steps=max_steps)
            for d, p in zip(demos, paths, strict=True) if not p.exists()]
    for r in pool.run(jobs):
        if r.error is not None:
            raise RuntimeError(f"rollout failed: {r.error}")
    return paths


def run_one(update: str, seed: int, *, rounds: int, budget: int, per_split: int, out: Path, boot_out: Path,
            pool: Any) -> dict[str, Any]:
    from agents.graph.trainer import PolicyTrainer
    from programs.seeds import seed_library

    kind, learn, _ = UPDATES[update]
    cfg = cell_config(TABLES.get("default"), "sft", seed, "rules", 2)
    boot_run = shared_bootstrap(TABLES.get("default"), seed, "rules", 2, boot_out)
    boot = boot_run / "policy" / "round_00.safetensors"
    seen = sorted((boot_run / "episodes" / "round_00").glob("demo_*.npz"))
    trainer, policy, library = PolicyTrainer(learn, seed=seed), boot, seed_library()
    work = out / f"{update}_seed{seed}"
    work.mkdir(parents=True, exist_ok=True)
    # the bootstrap these policies were trained from, hashed before any training read it and kept with
    # them (a re-evaluation of cached policies must not name whatever file is in the folder now)
    mark = work / "bootstrap.sha256"
    if not mark.exists():
        mark.write_text(sha256(boot))
    boot_sha = mark.read_text().strip()
    t0 = time.perf_counter()
    log = work / "train.json"  # each round's update metrics, kept with the policies they made
    info = json.loads(log.read_text()) if log.exists() else []
    for r in range(1, rounds + 1):
        eps = ceiling.demos(cfg.families, "mixed", r, budget, out / "demos", pool)
        seen += eps
        nxt = work / f"round_{r:02d}.safetensors"
        if nxt.exists():
            policy = nxt
            continue
        if kind == "sft":
            info.append(trainer.finetune(policy, seen, nxt))
        else:
            ran = rollouts(policy, eps, seed, work / f"rollouts_{r:02d}", pool, cfg.rollout_max_steps)
            by_family: dict[str, list[Path]] = {f: [] for f in cfg.families}
            for p in seen + ran:
                by_family[_scene(p)["family"]].append(p)
            groups = [(library[f][1], eps) for f, eps in by_family.items()]
            info.append(trainer.aw_update(policy, groups, nxt, shaping="text2potential",
                                          seed=seed + 1000 * r))
        log.write_text(json.dumps(info, indent=1))
        policy = nxt
    scenes = dev_scenes(cfg.families, per_split, out / "dev_scenes", pool)
    success = evaluate(policy, scenes, seed, pool, cfg.rollout_max_steps)
    return {"update": update, "seed": seed, "rounds": rounds, "budget": budget, "per_split": per_split,
            "families": list(cfg.families), "bootstrap_sha256": boot_sha, "success": success,
            "train": info, "wall_s": round(time.perf_counter() - t0, 1),
            "code_commit": provenance("")["commit"]}


def averages(cell: dict[str, Any]) -> dict[str, float]:
    fams = cell["success"].values()
    return {s: sum(f[s] for f in fams) / len(cell["success"]) for s in SPLITS}


def markdown(cells: Sequence[dict[str, Any]], command: str) -> str:
    rows = []
    for name, (_, _, what) in UPDATES.items():
        cs = [c for c in cells if c["update"] == name]
        if not cs:
            continue
        vals = {s: mean_se([averages(c)[s] for c in cs]) for s in SPLITS}
        ess = [t["w_ess"] for c in cs for t in c["train"] if "w_ess" in t]
        rows.append((f"`{name}`", what, *(f"{vals[s]['mean']:.1f} ± {vals[s]['se']:.1f}" for s in SPLITS),
                     f"{np.mean(ess):.2f}" if ess else "–", sorted(c["seed"] for c in cs)))
    lines = md_table(("update", "what it is", *(f"dev {s.upper()}" for s in SPLITS), "weights' ESS", "seeds"),
                     rows)
    c0 = cells[0]
    return ("\n".join(lines) + f"\n\nSuccess in % on development scenes ({c0['per_split']} per family and "
            f"split, drawn from seed {DEV_SEED}, never the frozen suites), mean ± standard error over seeds, "
            f"averaged over the four families; {c0['rounds']} rounds of {c0['budget']} scenes per family "
            f"from each seed's Table 1 bootstrap (sha256 "
            f"{', '.join(sorted({c['bootstrap_sha256'][:12] for c in cells}))}). Command: `{command}` · "
            f"computed at "
            f"{', '.join(sorted({c['code_commit'] for c in cells}))} · {provenance(command)['versions']}\n")


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.update_dev", __doc__)
    ap.add_argument("--updates", type=comma_list(choices=list(UPDATES)), default=list(UPDATES),
                    help=f"comma-separated, of {', '.join(UPDATES)}")
    ap.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1 (each with its Table 1 bootstrap)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of updates (Table 1's default: 2)")
    ap.add_argument("--budget", type=int, default=6, help="scenes per family per round (Table 1's: 6)")
    ap.add_argument("--per-split", type=int, default=10, help="development scenes per family and split")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "update_dev",
                    help="demos, rollouts, policies")
    ap.add_argument("--bootstraps", type=Path, default=ROOT / "runs" / "table1_default",
                    help="Table 1's run directories, whose shared bootstraps are reused (made if missing)")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="where update_dev/ and update_dev.md go (default runs/results/findings)")
    a = ap.parse_args(argv)
    if min(a.seeds, a.rounds, a.budget, a.per_split) < 1:
        print("error: --seeds, --rounds, --budget and --per-split must be at least 1", file=sys.stderr)
        return 2
    from sim.pool import EpisodePool

    given = argv if argv is not None else sys.argv[1:]
    command = ("python -m studies.update_dev " + " ".join(given)).strip()
    # one folder and table per development-set size: a larger set re-evaluates the cached policies
    name = "update_dev" if a.per_split == 10 else f"update_dev_n{a.per_split}"
    (a.results / name).mkdir(parents=True, exist_ok=True)
    with EpisodePool(2) as pool:
        for seed in range(a.seeds):
            for update in a.updates:
                rec = a.results / name / f"{update}_seed{seed}.json"
                if rec.exists():
                    continue
                res = run_one(update, seed, rounds=a.rounds, budget=a.budget, per_split=a.per_split,
                              out=a.out, boot_out=a.bootstraps, pool=pool)
                rec.write_text(json.dumps(res, indent=1) + "\n")
                avg = averages(res)
                print(f"{update} seed {seed}: dev ID {avg['id']:.1f} %, dev OOD {avg['ood']:.1f} % "
                      f"({res['wall_s']:.0f} s)", flush=True)
    cells = [json.loads(p.read_text()) for p in sorted((a.results / name).glob("*.json"))]
    if cells:  # rebuilt from every record, whatever this call ran
        (a.results / f"{name}.md").write_text(markdown(cells, command))
        print((a.results / f"{name}.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
