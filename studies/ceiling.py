"""Answers FINDINGS #5 (and #11's `mixed` draws). How far can a generator move the policy at Table 1's budget?
An oracle measurement outside the loop.

    python -m studies.ceiling             # id, mixed, ood at budgets 6 and 24, with/without replay
    python -m studies.ceiling --sources ood --budgets 6 --seeds 1
    python -m studies.ceiling --table core --sources ood --budgets 6 --replay yes --seeds 5   # issue #39

Every method of Table 1 differs only in which scenes it trains on. This asks what the best possible choice
would give: start from a seed's shared bootstrap policy (the one every Table 1 cell starts from) and
fine-tune it exactly as the `sft` method does (`finetune_steps` per round, `rounds` rounds, one round's
expert demonstrations each), on scenes drawn from a fixed source:

    id      the seed distribution (what `sft` trains on; a reproduction check of that row)
    ood     every factor out of distribution: the very distribution of the frozen `ood` split, drawn with
            other seeds — an oracle no method has, since none knows the test distribution
    mixed   half `id`, half `ood` scenes each round
    ood_single  in distribution but for one factor moved out of it, as the frozen `ood_single` split
            draws them (the factor drawn at random of the ones that split moves): the oracle for that split
    ood_added   `ood_single` with the moved factor one of the extension's counts (distractors, obstacles,
            clutter: the scenes that add objects, which no method's rounds lifted, FINDINGS #47); the
            extended space only. Can the policy learn them at all when every scene holds them?

`budget` is accepted scenes per family per round (Table 1's `default`: 6). With replay, each round
fine-tunes on every demonstration so far (the bootstrap's and each round's) instead of the round's alone.
Success is measured on the frozen suites like every Table 1 cell. If the oracle at Table 1's budget cannot
lift OOD success much above the `sft` row, no generator can, and Table 1's margins at that budget measure
noise; the budget at which it can says what the table needs. Each (source, budget, replay, seed) lands in
`<results>/ceiling/` (default runs/results/findings; the committed ones: `--results docs/results/findings`)
as it finishes (a killed run resumes), and `ceiling.md` is rebuilt from
them. `--table core` measures the same at another table's size — its rounds, its suite set (`frozen50`),
its seeds' kept bootstraps — into `<results>/ceiling_core/` and `ceiling_core.md`: the oracle the `core`
table's rows are compared with (every generator now reaches every value the `ood` split draws, so the
oracle on what a generator can reach and the oracle on everything are the same draw).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser
from experiments.table import suites as frozen
from experiments.table.cells import cell_config, evaluate, shared_bootstrap
from experiments.table.presets import TABLES
from experiments.table.record import (
    ROOT,
    RUNS_RESULTS,
    SCENES,
    oracle_folder,
    oracle_name,
    provenance,
    sha256,
)
from experiments.table.stats import mean_se
from sim.extension import ADDED_COUNTS

SOURCES = ("id", "mixed", "ood", "ood_single", "ood_added")
CEILING_SEED = 8_200_000  # the oracle's training scenes: disjoint from the suites' and the loop's seeds
RESULTS = RUNS_RESULTS / "findings"  # the committed records: --results docs/results/findings


def draw(family: str, source: str, round_no: int, i: int, attempt: int, space: str = "core") -> Any:
    """Candidate training scene `i` of round `round_no` in factor space `space` (deterministic, shared by
    every policy seed)."""
    from sim.families import get_family

    fam = get_family(family)
    ood = source == "ood" or (source == "mixed" and i % 2 == 1)
    rng = np.random.default_rng([CEILING_SEED, frozen.FAMILIES.index(family), round_no, i, attempt])
    seed = CEILING_SEED + 100_000 * round_no + 100 * i + attempt
    values = fam.sample_factors(rng, ood=ood, space=space)
    if source in ("ood_single", "ood_added"):  # the frozen split's rule, with this study's own numbers
        movable = frozen.movable_ood(fam, space)
        if source == "ood_added":
            movable = [f for f in movable if f.name in ADDED_COUNTS]
            if not movable:
                raise ValueError(f"the {space} space has no count that adds objects: ood_added needs "
                                 "--table extended")
        f = movable[int(rng.integers(len(movable)))]
        values[f.group][f.name] = f.sample(rng, ood=True)
    return fam.make_scene(values, seed=seed)


def _demo(spec_json: str, out: str) -> bool:
    """Validity checks with the expert's solve (a pool worker); saves the demonstration when valid."""
    from sim.scene import SceneSpec
    from sim.validity import check_scene

    report = check_scene(SceneSpec.from_json(spec_json), solve=True)
    if report.ok and report.demo is not None:
        report.demo.save(out)
        return True
    return False


def demos(families: Sequence[str], source: str, round_no: int, budget: int, out: Path, pool: Any,
          max_draws: int = 20, space: str = "core") -> list[Path]:
    """`budget` valid scenes per family for one round, with their expert demos (cached under `out`)."""
    paths = []
    for family in families:
        for i in range(budget):
            for start in range(0, max_draws, 2):
                cands = [draw(family, source, round_no, i, a, space) for a in range(start, start + 2)]
                files = [out / f"{family}_r{round_no}_{i:02d}_{a}" for a in range(start, start + 2)]
                done = [f for f in files if f.with_suffix(".npz").exists()]
                if done:
                    paths.append(done[0].with_suffix(".npz"))
                    break
                oks = [pool.executor.submit(_demo, c.to_json(), str(f))
                       for c, f in zip(cands, files, strict=True)]
                hit = [f for f, ok in zip(files, oks, strict=True) if ok.result()]
                if hit:
                    paths.append(hit[0].with_suffix(".npz"))
                    break
            else:
                raise RuntimeError(f"{family} {source} round {round_no} scene {i}: "
                                   f"no valid draw in {max_draws}")
    return paths


def run_one(source: str, budget: int, seed: int, *, replay: bool, out: Path, boot_out: Path, pool: Any,
            per_split: int | None, table: str = "default", kept: Path | None = None) -> dict[str, Any]:
    """Fine-tune the seed's bootstrap on `source` scenes round by round (with `replay`, on every
    demonstration so far: the bootstrap's round-0 demos and each round's); the final policy on the
    suites of `table`'s preset (its rounds and suite set; `kept`: the results folder whose kept bootstrap
    policies its seeds start from)."""
    from agents.graph.trainer import PolicyTrainer

    preset = TABLES.get(table)
    cfg = cell_config(preset, "sft", seed, "rules", 2)
    boot_run = shared_bootstrap(preset, seed, "rules", 2, boot_out, kept)
    boot = boot_run / "policy" / "round_00.safetensors"
    seen = sorted((boot_run / "episodes" / "round_00").glob("demo_*.npz")) if replay else []
    t0 = time.perf_counter()
    trainer, policy = PolicyTrainer(cfg.learn, seed=seed), boot
    work = out / oracle_name(source, budget, replay, seed)
    work.mkdir(parents=True, exist_ok=True)
    for r in range(1, cfg.rounds + 1):
        folder = source if cfg.space == "core" else f"{source}_{cfg.space}"  # a space's draws apart
        eps = demos(cfg.families, source, r, budget, out / "demos" / folder, pool, space=cfg.space)
        nxt = work / f"round_{r:02d}.safetensors"
        seen += eps
        trainer.finetune(policy, seen if replay else eps, nxt)
        policy = nxt
    scenes = frozen.suite(cfg.families, per_split=per_split, set_name=preset.suite)
    final = evaluate(policy, scenes, cfg.seed, pool, cfg.rollout_max_steps, outcomes=True)
    return {"source": source, "budget": budget, "replay": replay, "seed": seed, "rounds": cfg.rounds,
            **({} if table == "default" else {"table": table, "suite": preset.suite, "per_split": per_split}),
            "finetune_steps": cfg.learn.finetune_steps, "families": list(cfg.families),
            "bootstrap_sha256": sha256(boot), "policy_sha256": sha256(policy),
            **{split: {f: final[f][split] for f in cfg.families} for split in frozen.SPLITS},
            "scenes": final[SCENES],  # each episode's outcome (`cells.scene_outcomes` reads them by scene)
            "wall_s": round(time.perf_counter() - t0, 1), "code_commit": provenance("")["commit"]}


def markdown(cells: Sequence[dict[str, Any]], command: str) -> str:
    rows = sorted({(c["source"], c["budget"], c["replay"]) for c in cells},
                  key=lambda k: (k[2], k[1], SOURCES.index(k[0])))
    lines = ["| source | scenes per family per round | trains on | avg OOD | ID | OOD-single | instruction "
             "| seeds |", "|---|---|---|---|---|---|---|---|"]

    def avg(c: dict[str, Any], split: str) -> float:
        return sum(c[split].values()) / len(c[split])

    for source, budget, replay in rows:
        cs = [c for c in cells if (c["source"], c["budget"], c["replay"]) == (source, budget, replay)]
        vals = {s: mean_se([avg(c, s) for c in cs]) for s in frozen.SPLITS}
        shown = [f"{vals[s]['mean']:.1f} ± {vals[s]['se']:.1f}" for s in ("ood", "id", "ood_single",
                                                                          "instruction")]
        seeds = sorted(c["seed"] for c in cs)
        data = "every demo so far" if replay else "the round's demos"
        lines.append(f"| {source} | {budget} | {data} | " + " | ".join(shown) + f" | {seeds} |")
    meta = provenance(command)
    commits = sorted({c["code_commit"] for c in cells})
    sizes = "/".join(str(n) for n in sorted({c.get("per_split") or 10 for c in cells}))
    return ("\n".join(lines) + f"\n\nSuccess in % on the frozen suites ({sizes} scenes per family and "
            "split), mean ± standard error over seeds, averaged over the four families; every row starts "
            "from the seed's shared Table 1 bootstrap and fine-tunes as the `sft` method does. Command: "
            f"`{command}` · computed at {', '.join(commits)} · {meta['versions']}\n")


def _cell(source: str, budget: int, replay: bool, seed: int, a: argparse.Namespace, pool: Any,
          per_split: int | None, command: str) -> None:
    """One (source, budget, replay, seed) unless recorded; the table rebuilt after it."""
    folder, name = a.results / oracle_folder(a.table), oracle_name(source, budget, replay, seed)
    rec = folder / f"{name}.json"
    if rec.exists():
        return
    kept = ROOT / "docs" / "results" if TABLES.get(a.table).bootstraps else None
    res = run_one(source, budget, seed, replay=replay, out=a.out, boot_out=a.bootstraps, pool=pool,
                  per_split=per_split, table=a.table, kept=kept)
    rec.write_text(json.dumps(res, indent=1) + "\n")
    ood = sum(res["ood"].values()) / len(res["ood"])
    print(f"{name}: avg OOD {ood:.1f} % ({res['wall_s']:.0f} s)", flush=True)
    cells = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    (a.results / f"{oracle_folder(a.table)}.md").write_text(markdown(cells, command))


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.ceiling", __doc__)
    ap.add_argument("--sources", default=",".join(SOURCES), help=f"comma-separated, of {', '.join(SOURCES)}")
    ap.add_argument("--budgets", default="6,24", help="scenes per family per round, comma-separated")
    ap.add_argument("--replay", default="no,yes",
                    help="comma-separated: no (each round fine-tunes on its own demos, as `sft` does), yes "
                         "(on every demo so far, the bootstrap's included)")
    ap.add_argument("--seeds", type=int, default=2, help="seeds 0..N-1 (each with its Table 1 bootstrap)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "ceiling", help="demos and policies")
    ap.add_argument("--table", default="default", choices=TABLES.names(),
                    help="the table size to measure at: its rounds, suite set and bootstraps (default)")
    ap.add_argument("--bootstraps", type=Path,
                    help="the table's run directories, whose shared bootstraps are reused (made if missing; "
                         "default runs/table1_<table>)")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="where ceiling/ and ceiling.md go (default runs/results/findings)")
    a = ap.parse_args(argv)
    try:
        sources = [s.strip() for s in a.sources.split(",") if s.strip()]
        bad = [s for s in sources if s not in SOURCES]
        if bad or not sources:
            raise ValueError(f"unknown source(s) {bad}; sources: {', '.join(SOURCES)}")
        space = TABLES.get(a.table).overrides.get("space", "core")
        if "ood_added" in sources and space != "extended":
            raise ValueError(f"--sources ood_added moves a count that adds objects, which only the extended "
                             f"space has; --table {a.table} draws from the {space} space: use --table "
                             "extended")
        budgets = [int(b) for b in a.budgets.split(",") if b.strip()]
        replays = [{"no": False, "yes": True}[r.strip()] for r in a.replay.split(",") if r.strip()]
        if not budgets or min(budgets) < 1 or a.seeds < 1 or not replays:
            raise ValueError("--budgets must be positive integers and --seeds at least 1")
        frozen.manifest()
    except KeyError as e:
        print(f"error: --replay takes no and/or yes, got {e}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from sim.pool import EpisodePool

    given = argv if argv is not None else sys.argv[1:]
    command = ("python -m studies.ceiling " + " ".join(given)).strip()
    per_split = TABLES.get(a.table).per_split
    a.bootstraps = a.bootstraps or ROOT / "runs" / f"table1_{a.table}"
    (a.results / oracle_folder(a.table)).mkdir(parents=True, exist_ok=True)
    with EpisodePool(2) as pool:
        for seed in range(a.seeds):
            for replay in replays:
                for budget in budgets:
                    for source in sources:
                        _cell(source, budget, replay, seed, a, pool, per_split, command)
    print((a.results / f"{oracle_folder(a.table)}.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
