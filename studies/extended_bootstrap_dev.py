"""Answers the extended table's bootstrap recipe (issue #39, item 4; FINDINGS #43). The extended space's
seed-0 bootstrap — the core table's recipe, 20 seed demonstrations per family and 2,000 SFT steps — starts
near the floor even in distribution (ID 14 % on `extended50`, the core's 77.5 % on `frozen50`). Is that the
amount of data, or the policy? A development measurement, for choosing the extended table's recipe honestly.

    python -m studies.extended_bootstrap_dev                              # 20 and 60 demonstrations, seed 0
    python -m studies.extended_bootstrap_dev --recipes 20x2000,120x2000 --seeds 0,1

Each recipe `<demos>x<steps>` is the extended table's bootstrap (`experiments.table.cells.bootstrap_cell`:
round 0 of its `sft` cell, seed scenes drawn from the extended space's seed distribution, expert
demonstrations, SFT) with `seed_demos` and `learn.sft_steps` set, run with `agents.run` like a table cell (a
killed study resumes). Its policy is scored on development scenes of the extended space —
`studies.update_dev`'s draws from their own seed, `--per-split` per family in distribution and with every
factor out — never on a frozen suite. The recipe the table already uses (20x2000) is the table's kept
bootstrap where the seed has one, so it is scored, not trained again. Records land in
`<results>/extended_bootstrap_dev/` (default runs/results/findings; the committed ones: `--results
docs/results/findings`), and `extended_bootstrap_dev.md` is rebuilt from them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common.cli import comma_list, command_parser, seed_list
from common.markdown import md_table
from experiments.table.cells import bootstrap_cell, children_cpu_s, evaluate, run_cell, table_bootstrap
from experiments.table.presets import TABLES
from experiments.table.record import ROOT, RUNS_RESULTS, provenance, sha256
from experiments.table.stats import mean_se
from studies.update_dev import SPLITS, dev_scenes

RESULTS = RUNS_RESULTS / "findings"  # the committed records: --results docs/results/findings
TABLE = "extended"


def recipe(text: str) -> tuple[int, int]:
    """`<demos>x<steps>` → (seed demonstrations per family, SFT steps); ValueError saying the form."""
    try:
        demos, steps = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"recipe {text!r}: write <demos>x<steps>, e.g. 120x1500") from None
    if demos < 1 or steps < 1:
        raise ValueError(f"recipe {text!r}: demonstrations and steps must be >= 1")
    return demos, steps


def recipe_config(demos: int, steps: int, seed: int, out: Path) -> tuple[Any, Path]:
    """The extended table's bootstrap config of `seed` with the recipe, and its run directory."""
    cfg, _ = bootstrap_cell(TABLES.get(TABLE), seed, "rules", 2, out)
    cfg = dataclasses.replace(cfg, seed_demos=demos, learn=dataclasses.replace(cfg.learn, sft_steps=steps))
    return cfg, out / f"{demos}x{steps}_seed{seed}"


def one_recipe(demos: int, steps: int, seed: int, *, out: Path, kept: Path, scenes: Sequence[Any],
               pool: Any) -> dict[str, Any]:
    cfg, run = recipe_config(demos, steps, seed, out)
    base, _ = bootstrap_cell(TABLES.get(TABLE), seed, "rules", 2, out)
    t0, cpu0 = time.perf_counter(), children_cpu_s()
    policy = table_bootstrap(TABLES.get(TABLE), kept, seed) \
        if (demos, steps) == (base.seed_demos, base.learn.sft_steps) else None
    if policy is None:
        run_cell(cfg, run)
        policy = run / "policy" / "round_00.safetensors"
    trained = {"train_wall_s": round(time.perf_counter() - t0, 1),
               "train_cpu_s": round(children_cpu_s() - cpu0, 1)} if policy.parent.parent == run else \
        {"kept_bootstrap": str(policy.relative_to(ROOT) if policy.is_relative_to(ROOT) else policy)}
    t1 = time.perf_counter()
    got = evaluate(policy, scenes, seed, pool, cfg.rollout_max_steps)
    return {"recipe": f"{demos}x{steps}", "seed_demos": demos, "sft_steps": steps, "seed": seed,
            "policy": sha256(policy), **trained,
            **{split: {f: got[f][split] for f in cfg.families} for split in SPLITS},
            "eval_s": round(time.perf_counter() - t1, 1), "code_commit": provenance("")["commit"]}


def _avg(cell: dict[str, Any], split: str) -> float:
    return sum(cell[split].values()) / len(cell[split])


def markdown(cells: Sequence[dict[str, Any]], command: str, per_split: int) -> str:
    recipes = sorted({c["recipe"] for c in cells}, key=recipe)
    families = list(cells[0]["id"]) if cells else []
    rows = []
    for r in recipes:
        cs = [c for c in cells if c["recipe"] == r]
        show = [mean_se([_avg(c, split) for c in cs]) for split in SPLITS]
        per_family = " / ".join(f"{sum(c['id'][f] for c in cs) / len(cs):.0f}" for f in families)
        rows.append((f"`{r}`", *(f"{v['mean']:.1f} ± {v['se']:.1f}" for v in show), per_family,
                     sorted(c["seed"] for c in cs)))
    head = ("recipe (demos per family × SFT steps)", *(f"dev {s.upper()}" for s in SPLITS),
            f"dev ID per family ({' / '.join(families)})", "seeds")
    return ("\n".join(md_table(head, rows)) + f"\n\nDevelopment scenes of the extended space only "
            f"(`studies.update_dev`'s seed, {per_split} per family and split; never `extended50`); "
            f"success in %, mean ± SE over seeds.\n\nCommand: `{command}`\n")


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.extended_bootstrap_dev", __doc__)
    ap.add_argument("--recipes", type=comma_list(recipe), default=[(20, 2000), (60, 2000)],
                    help="comma-separated <demos>x<steps> (default 20x2000,60x2000: the table's and 3x)")
    ap.add_argument("--seeds", type=seed_list, default=[0], help="N (seeds 0..N-1) or a list (default 0,)")
    ap.add_argument("--per-split", type=int, default=25, help="development scenes per family and split")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "extended_bootstrap_dev", help="the runs")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="where extended_bootstrap_dev/ and its .md go (default runs/results/findings)")
    a = ap.parse_args(argv)
    recipes = a.recipes
    if a.per_split < 1:
        print("error: --per-split must be at least 1", file=sys.stderr)
        return 2
    from sim.pool import EpisodePool

    given = argv if argv is not None else sys.argv[1:]
    command = ("python -m studies.extended_bootstrap_dev " + " ".join(given)).strip()
    folder = a.results / "extended_bootstrap_dev"
    folder.mkdir(parents=True, exist_ok=True)
    families = recipe_config(*recipes[0], 0, a.out)[0].families
    with EpisodePool(2) as pool:
        scenes = dev_scenes(families, a.per_split, a.out / f"dev_scenes_n{a.per_split}", pool,
                            space="extended")
        for seed in a.seeds:
            for demos, steps in recipes:
                rec = folder / f"{demos}x{steps}_seed{seed}_n{a.per_split}.json"
                if rec.exists():
                    continue
                res = one_recipe(demos, steps, seed, out=a.out, kept=ROOT / "docs" / "results",
                                 scenes=scenes, pool=pool)
                rec.write_text(json.dumps(res, indent=1) + "\n")
                print(f"{demos}x{steps} seed {seed}: dev ID {_avg(res, 'id'):.1f} %, "
                      f"OOD {_avg(res, 'ood'):.1f} %", flush=True)
                cells = [json.loads(p.read_text()) for p in sorted(folder.glob(f"*_n{a.per_split}.json"))]
                (a.results / "extended_bootstrap_dev.md").write_text(markdown(cells, command, a.per_split))
    print((a.results / "extended_bootstrap_dev.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
