"""The critic against ground truth it cannot see: counterfactual failures in all four task families.

    python -m bench.agents.critic_truth                              # rules critic, every family
    python -m bench.agents.critic_truth --critics rules,local        # and the embedded LLM critic (hybrid)
    python -m bench.agents.critic_truth --critics rules,local --prompts alone,hybrid \
        --local-model qwen2.5-coder-0.5b                              # both prompts, the smaller model
    python -m bench.agents.critic_truth --critics rules,openai --base-url URL --model NAME
    python -m bench.agents.critic_truth --verify-n 12                # and verify every diagnosis
    python -m bench.agents.critic_truth --draws 40 --save-cases runs/critic_cases     # keep the cases, then
    python -m bench.agents.critic_truth --cases runs/critic_cases --critics rules,local --llm-max 12

We build every scene, so a cause can be planted and checked. Per family, scenes are drawn from the seed
program with `--k` distinct spatial or attribute factors moved out of distribution (random factors, random
sides: past the low or high end of the in-distribution range, or an unseen choice —
`programs.factor_space.variant_edit`, what Table 1's variants do), each beside its k counterfactual twins:
the same seed and values with one of those factors moved back. A scene the expert solves (valid) and the
policy (default: the shipped bootstrap, `checkpoints/seed_sft_4fam.safetensors`) fails, which exactly
one twin turns into a success, is a case whose cause is known: moving that factor back alone fixes it.
The critic diagnoses each case's failed episode, alone and with every other episode of the family in the
benchmark as peers (moved scenes and twins, solved or not: as the loop's `diagnose` node gives it the
round's other rollouts), and is scored on naming that factor; two naive baselines (the factor farthest
outside its range; a random factor) are scored beside it. The phase
it names is compared with where the episode got stuck (privileged phase labels). With `--verify-n`, the
diagnoses of each critic (the first `--verify`) are verified as in the loop (targeted vs control batches on
the family's seed program, same policy): verdicts, split by whether the diagnosis was right. Diagnoses
hold the failing scene's other OOD factors as context, as Table 1's default preset does
(`--no-ood-context`: without).

Seeds start at 7,700,000 (never the frozen suites', the development scenes' or the loop's); nothing was
tuned on these cases. Results: `--out FILE` (JSON), a table on stdout.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.graph.rundir import write_json
from bench.agents import bench_llm, local_model_argument
from coda_policy.pretrained import SEED_SFT_4FAM
from common.cli import comma_list, command_parser, worker_count
from common.markdown import md_table

PRETRAINED = SEED_SFT_4FAM
SEED0 = 7_700_000
CRITICS = ("rules", "local", "openai")
PROMPTS = ("hybrid", "alone")
SETTINGS = ("alone", "peers")


@dataclass
class Case:
    """One counterfactual failure: the moved factor is its cause."""

    family: str
    factor: str
    side: str
    seed: int
    episode: Any  # the failed `sim.episode.Episode` on the moved scene
    episode_path: Path | None = None  # where it is saved
    moved: list[str] = field(default_factory=list)  # every factor moved out of distribution in the scene
    # the family's other episodes of the benchmark, (flat factor values, success): the critic's peers
    peers: list[tuple[dict[str, Any], bool]] = field(default_factory=list)
    diagnoses: dict[str, Any] = field(default_factory=dict)  # "<critic>/<alone|peers>" → Diagnosis or error
    seconds: dict[str, float] = field(default_factory=dict)  # the same keys → seconds the diagnosis took


def _draws(families: list[str], draws: int, k: int, seed0: int) -> list[dict[str, Any]]:
    """Per family, `draws` scenes with `k` distinct factors moved out of distribution (random factors and
    sides), each beside its k counterfactual twins with one of those factors moved back: sandbox tasks."""
    from programs.edits import edit_many
    from programs.factor_space import seen_movable, variant_edit, variant_sides
    from programs.seeds import seed_library
    from sandbox.pool import SandboxTask

    out = []
    for family in families:
        gen = seed_library()[family][0]
        factors = [f for f in gen.factors if f.group in ("spatial", "attribute") and seen_movable(f)]
        for _ in range(draws):
            seed = seed0 + len(out)
            rng = np.random.default_rng(seed)
            base = gen.sample_factors(rng)
            picked = [factors[i] for i in rng.choice(len(factors), size=min(k, len(factors)), replace=False)]
            sides = {f.name: variant_sides(f)[int(rng.integers(len(variant_sides(f))))] for f in picked}
            edits = {name: variant_edit(gen.factor(name), side) for name, side in sides.items()}
            moved = edit_many(gen, edits)
            values = {name: moved.factor(name).sample(np.random.default_rng([seed, 1 + j]))
                      for j, name in enumerate(edits)}
            tasks = [SandboxTask(source=moved.source, factors={**base, **values}, seed=seed)]
            for name in edits:  # the twin with `name` moved back to its in-distribution value
                rest = {n: v for n, v in edits.items() if n != name}
                twin = edit_many(gen, rest) if rest else gen
                tasks.append(SandboxTask(source=twin.source, seed=seed,
                                         factors={**base, **{n: v for n, v in values.items() if n != name}}))
            out.append({"family": family, "seed": seed, "moved": list(edits), "sides": sides, "tasks": tasks})
    return out


def collect(families: list[str], draws: int, k: int, policy: Path, workers: int, seed0: int,
            log: Any = print) -> tuple[list[Case], dict[str, Any]]:
    """The benchmark's cases — a failure on a scene with `k` factors moved, which exactly one of its
    counterfactual twins (that factor moved back) turns into a success — and how they were found."""
    from coda_policy.awr import SeededPolicy
    from sandbox.pool import PoolConfig, SandboxPool
    from sim.episode import Episode
    from sim.pool import EpisodeJob, EpisodePool

    drawn = _draws(families, draws, k, seed0)
    counts: dict[str, int] = defaultdict(int)
    cases: list[Case] = []
    peers: dict[str, list[tuple[dict[str, Any], bool, tuple[int, int]]]] = defaultdict(list)
    with SandboxPool(PoolConfig(workers=workers)) as sandbox, EpisodePool(workers) as pool:
        made = sandbox.run_many([t for d in drawn for t in d["tasks"]])
        at = 0
        ok = []
        for d in drawn:
            res, at = made[at: at + len(d["tasks"])], at + len(d["tasks"])
            if all(r.error is None for r in res):
                ok.append((d, [r.scenes[0] for r in res]))
        counts["drawn"], counts["generated"] = len(drawn), len(ok)
        expert = pool.run([EpisodeJob(scene=scenes[0], policy="expert") for _, scenes in ok])
        valid = [t for t, e in zip(ok, expert, strict=True) if e.success]
        counts["expert_solves_moved"] = len(valid)
        factory = SeededPolicy(str(policy), 0)
        tmp = Path(_tmpdir())
        jobs = [EpisodeJob(scene=s, policy=factory, out=tmp / f"{n}_{j}.npz" if j == 0 else None)
                for n, (_, scenes) in enumerate(valid) for j, s in enumerate(scenes)]
        res = pool.run(jobs)
        at = 0
        for d, scenes in valid:
            rs, at = res[at: at + len(scenes)], at + len(scenes)
            if any(r.error for r in rs):
                raise RuntimeError(f"episode failed to run: {next(r.error for r in rs if r.error)}")
            for j, (scene, r) in enumerate(zip(scenes, rs, strict=True)):
                peers[d["family"]].append((_flat(scene), r.success, (d["seed"], j)))
            if rs[0].success:
                counts["policy_solves_moved"] += 1
                continue
            fixes = [name for name, r in zip(d["moved"], rs[1:], strict=True) if r.success]
            counts[f"failures_fixed_by_{min(len(fixes), 2)}{'+' if len(fixes) >= 2 else ''}"] += 1
            if len(fixes) == 1:
                cases.append(Case(family=d["family"], factor=fixes[0], side=str(d["sides"][fixes[0]]),
                                  seed=d["seed"], episode=Episode.load(rs[0].path), moved=list(d["moved"]),
                                  episode_path=rs[0].path))
    for case in cases:  # every other episode of the family: moved scenes and twins, solved or not
        case.peers = [(f, ok) for f, ok, key in peers[case.family] if key != (case.seed, 0)]
    counts["cases"] = len(cases)
    log(f"cases: {dict(counts)}")
    return cases, dict(counts)


def save_cases(cases: list[Case], counts: dict[str, Any], folder: Path) -> None:
    """The cases (their failed episodes copied into `folder`) and how they were found, for `load_cases`."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, c in enumerate(cases):
        name = f"case_{k:03d}_{c.family}.npz"
        shutil.copyfile(c.episode_path, folder / name)
        sidecar = Path(c.episode_path).with_suffix(".json")  # `Episode.save` writes a JSON beside the arrays
        if sidecar.exists():
            shutil.copyfile(sidecar, (folder / name).with_suffix(".json"))
        rows.append({"family": c.family, "factor": c.factor, "side": c.side, "seed": c.seed,
                     "moved": c.moved, "peers": c.peers, "episode": name})
    write_json(folder / "cases.json", {"counts": counts, "cases": rows})


def load_cases(folder: Path) -> tuple[list[Case], dict[str, Any]]:
    from sim.episode import Episode

    data = json.loads((folder / "cases.json").read_text())
    cases = [Case(family=r["family"], factor=r["factor"], side=r["side"], seed=r["seed"], moved=r["moved"],
                  peers=[(f, bool(ok)) for f, ok in r["peers"]], episode=Episode.load(folder / r["episode"]),
                  episode_path=folder / r["episode"])
             for r in data["cases"]]
    return cases, data["counts"]


def spread(cases: list[Case], n: int | None) -> list[Case]:
    """At most `n` cases, taken from the families in turn (all when `n` is None)."""
    if n is None or n >= len(cases):
        return cases
    by: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        by[c.family].append(c)
    out: list[Case] = []
    while len(out) < n:
        for fam in sorted(by):
            if by[fam] and len(out) < n:
                out.append(by[fam].pop(0))
    return out


def _tmpdir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="coda-critic-truth-")


def _flat(scene: Any) -> dict[str, Any]:
    return {n: v for group in scene.factors.values() for n, v in group.items()}


def diagnose_all(cases: list[Case], critic: str, llm: Any, log: Any = print, *,
                 ood_context: bool = True, ood_first: bool = True, prompt: str = "hybrid",
                 settings: tuple[str, ...] = ("alone", "peers"), key: str | None = None) -> None:
    """Every case diagnosed by `critic` in each of `settings` — alone, and with peers (an unusable LLM
    answer recorded as such), under `key` (default: the critic); an LLM critic is asked with `prompt`
    (`CriticConfig.llm_prompt`). With `ood_context` (Table 1's default preset) each diagnosis holds the
    scene's other OOD factors, with `ood_first` the rules critic ranks out-of-distribution factors first."""
    from agents.config import CriticConfig
    from agents.critic.diagnose import diagnose
    from agents.llm.base import LLMOutputError
    from programs.seeds import seed_library

    config = CriticConfig(allow_ood=True, ood_context=ood_context, ood_first=ood_first, llm_prompt=prompt)
    key = key or critic
    for k, case in enumerate(cases):
        gen = seed_library()[case.family][0]
        for setting in settings:
            t0 = time.perf_counter()
            try:
                dx: Any = diagnose(case.episode, gen, llm, critic="rules" if critic == "rules" else "llm",
                                   config=config, peers=case.peers if setting == "peers" else ())
            except LLMOutputError as e:  # an answer that cannot be used; a dead backend stops the benchmark
                dx = f"unusable: {type(e).__name__}: {str(e)[:160]}"
            case.diagnoses[f"{key}/{setting}"] = dx
            case.seconds[f"{key}/{setting}"] = round(time.perf_counter() - t0, 2)
            if critic != "rules":
                log(f"{key} {setting} {k + 1}/{len(cases)} {case.family} {case.factor}: "
                    f"{getattr(dx, 'factor', dx)} ({time.perf_counter() - t0:.1f} s)")


def baselines(cases: list[Case], seed: int) -> None:
    """The factor farthest outside its range, and a random factor, as diagnoses to score beside critics."""
    from agents.critic.diagnose import summarize_failure
    from programs.seeds import seed_library

    rng = np.random.default_rng(seed)
    for case in cases:
        gen = seed_library()[case.family][0]
        names = {f.name for f in gen.factors if f.group in ("spatial", "attribute")}
        readings = [r for r in summarize_failure(case.episode, schema=gen.factors).factors if r.name in names]
        case.diagnoses["most_atypical"] = max(readings, key=lambda r: (abs(r.position), r.name)).name
        case.diagnoses["random"] = readings[int(rng.integers(len(readings)))].name


def named(dx: Any) -> str | None:
    return dx if isinstance(dx, str) and not dx.startswith("unusable") else getattr(dx, "factor", None)


def score(cases: list[Case]) -> dict[str, Any]:
    """Per diagnoser: factor right, phase right (where a phase is named), unusable — overall and by family."""
    keys = sorted({k for c in cases for k in c.diagnoses})
    stuck = {id(c): _stuck(c) for c in cases if any(hasattr(dx, "phase") for dx in c.diagnoses.values())}
    out: dict[str, Any] = {}
    for key in keys:
        rows = [(c, c.diagnoses[key]) for c in cases if key in c.diagnoses]
        by_family: dict[str, list[bool]] = defaultdict(list)
        for c, dx in rows:
            by_family[c.family].append(named(dx) == c.factor)
        phased = [(c, dx) for c, dx in rows if hasattr(dx, "phase")]
        out[key] = {"factor_right": sum(named(dx) == c.factor for c, dx in rows), "of": len(rows),
                    "phase_right": sum(dx.phase == stuck[id(c)] for c, dx in phased), "phase_of": len(phased),
                    "unusable": sum(isinstance(dx, str) and dx.startswith("unusable") for _, dx in rows),
                    "by_family": {f: {"right": sum(v), "of": len(v)} for f, v in sorted(by_family.items())}}
        secs = [c.seconds[key] for c, _ in rows if key in c.seconds]
        if secs and not key.startswith("rules"):
            out[key]["seconds"] = {"median": round(float(np.median(secs)), 1),
                                   "p90": round(float(np.percentile(secs, 90)), 1), "n": len(secs)}
        setting = key.rsplit("/", 1)[-1]
        rules = f"rules/{setting}"
        if key != rules and "/" in key:  # where it names another factor than the rules critic (both usable)
            apart = [(c, dx) for c, dx in rows if named(c.diagnoses.get(rules)) and named(dx)
                     and named(dx) != named(c.diagnoses[rules])]
            out[key]["departs"] = {
                "n": len(apart), "right": sum(named(dx) == c.factor for c, dx in apart),
                "rules_right": sum(named(c.diagnoses[rules]) == c.factor for c, _ in apart)}
    return out


def _stuck(case: Case) -> str:
    from agents.critic.diagnose import summarize_failure

    return summarize_failure(case.episode).failing_phase


def verify_some(cases: list[Case], critics: list[str], n: int, k: int | None, policy: Path, workers: int,
                seed: int, log: Any = print, control: str = "other") -> dict[str, Any]:
    """The first `k` diagnoses (with peers; all when `k` is None) of each critic verified as the loop
    verifies them (targeted vs control batches on the family's seed program, the diagnosis's context held
    in both): verdict counts, split by whether the diagnosis named the case's cause, and every verdict's
    evidence."""
    from agents.config import RunConfig
    from agents.critic.verify import (
        VerifyConfig,
        episode_rollout,
        loop_config,
        run_verification,
        sandbox_run_batch,
    )
    from coda_policy.awr import SeededPolicy
    from programs.seeds import seed_library
    from sandbox.pool import PoolConfig, SandboxPool
    from sim.pool import EpisodePool

    run = RunConfig()  # the loop's test: its significance level and its rule for which failures count
    config = loop_config(run.verify, VerifyConfig().critic, alpha=run.verify_alpha, n=n, control=control)
    out: dict[str, Any] = {}
    with SandboxPool(PoolConfig(workers=workers)) as sandbox, EpisodePool(workers) as pool:
        batch = sandbox_run_batch(sandbox, episode_rollout(pool, SeededPolicy(str(policy), 11)))
        for critic in critics:
            verdicts: dict[str, int] = defaultdict(int)
            right: dict[str, int] = defaultdict(int)
            rows = []
            dxs = [(c, d) for c in cases if hasattr(d := c.diagnoses.get(f"{critic}/peers"), "factor")]
            for j, (c, dx) in enumerate(dxs[:k]):
                res = run_verification(dx, seed_library()[c.family][0], batch, n=n,
                                       rng=np.random.default_rng([seed, j]), config=config)
                v, ok = res.verdict, dx.factor == c.factor
                verdicts[v.status] += 1
                right[f"{v.status}_{'right' if ok else 'wrong'}"] += 1
                rows.append({"family": c.family, "seed": c.seed, "cause": c.factor, "named": dx.factor,
                             "right": ok, "phase": dx.phase, "context": sorted(set(dx.edit) - {dx.factor}),
                             "control": res.control_factor, "status": v.status,
                             "targeted": v.targeted_failure_rate, "control_rate": v.control_failure_rate,
                             "p": round(v.p_value, 4), "counts": res.counts})
                log(f"verify {critic} {j + 1}/{len(dxs[:k])} {c.family} {dx.factor} "
                    f"({'right' if ok else 'wrong'}): {v.status} {v.targeted_failure_rate:.2f} vs "
                    f"{v.control_failure_rate:.2f} (any phase {_any_phase(res.counts)})")
            out[critic] = {"verdicts": dict(verdicts), "by_correctness": dict(right), "n": n,
                           "alpha": config.alpha, "count": config.count, "control": config.control,
                           "rows": rows}
    return out


def _any_phase(c: dict[str, int]) -> str:
    return f"{c['targeted_failures']}/{c['targeted_n']} vs {c['control_failures']}/{c['control_n']}"


def table(scores: dict[str, Any]) -> str:
    fams = sorted({f for s in scores.values() for f in s["by_family"]})
    rows = []
    for key, s in scores.items():
        pct = 100 * s["factor_right"] / max(s["of"], 1)
        phase = f"{s['phase_right']}/{s['phase_of']}" if s["phase_of"] else "–"
        fam = [f"{s['by_family'][f]['right']}/{s['by_family'][f]['of']}" if f in s["by_family"] else "–"
               for f in fams]
        d = s.get("departs")
        departs = f"{d['n']} ({d['right']} right, rules {d['rules_right']})" if d else "–"
        sec = s.get("seconds")
        secs = f"{sec['median']} / {sec['p90']}" if sec else "–"
        rows.append((key, f"{s['factor_right']}/{s['of']} ({pct:.0f} %)", phase, s["unusable"], departs, secs,
                     *fam))
    head = ("diagnoser", "factor right", "phase right", "unusable", "departs from rules (right; rules right)",
            "s/call median / p90", *fams)
    return "\n".join(md_table(head, rows))


def main(argv: list[str] | None = None) -> int:
    from programs.seeds import seed_library

    ap = command_parser("bench.agents.critic_truth", __doc__)
    from agents.config import RunConfig

    fams, default = sorted(seed_library()), list(RunConfig().families)
    ap.add_argument("--families", type=comma_list(choices=fams), default=default,
                    help=f"comma-separated of {', '.join(fams)} (default: Table 1's {', '.join(default)})")
    ap.add_argument("--draws", type=int, default=16, help="scenes drawn per family (default 16)")
    ap.add_argument("--k", type=int, default=3,
                    help="factors moved out of distribution per scene (default 3, as Table 1's variants)")
    ap.add_argument("--critics", type=comma_list(choices=CRITICS), default=["rules"],
                    help=f"comma-separated of {', '.join(CRITICS)} (default rules)")
    ap.add_argument("--prompts", type=comma_list(choices=PROMPTS), default=["hybrid"],
                    help="how an LLM critic is asked, comma-separated: hybrid (it decides over the rules "
                         "critic's ranked candidates) and/or alone (evidence and every factor); "
                         "default hybrid")
    ap.add_argument("--llm-settings", type=comma_list(choices=SETTINGS), default=list(SETTINGS),
                    help="settings an LLM critic diagnoses in: alone (the episode only) and/or peers (with "
                         "the family's other episodes, as the loop does); default both")
    ap.add_argument("--local-structured", choices=("grammar", "tools"), default="grammar",
                    help="how the local critic's answer is asked for: under the schema's grammar (default) "
                         "or as a forced function call with the schema in the prompt (as before)")
    local_model_argument(ap, "--critics local")
    ap.add_argument("--policy", type=Path, default=PRETRAINED, help="the policy whose failures are diagnosed")
    ap.add_argument("--base-url", help="OpenAI-compatible endpoint for --critics openai")
    ap.add_argument("--model", help="endpoint model name for --critics openai")
    ap.add_argument("--verify-n", type=int, default=0, help="episodes per verification batch (0: no verify)")
    ap.add_argument("--verify", type=int, help="diagnoses verified per critic (with --verify-n; default all)")
    ap.add_argument("--no-ood-context", dest="ood_context", action="store_false",
                    help="diagnoses without the failing scene's other OOD factors (Table 1 holds them)")
    ap.add_argument("--control", choices=("other", "moveback"), default="other",
                    help="the verification's control batch: another factor moved as far (the loop's), or "
                         "the diagnosed factor moved back into its range")
    ap.add_argument("--no-ood-first", dest="ood_first", action="store_false",
                    help="the rules critic's single ranking by score (before FINDINGS #16)")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--threads", type=int, default=2,
                    help="llama.cpp threads of the local critic (1 when other work shares the cores)")
    ap.add_argument("--seed", type=int, default=SEED0, help=f"first scene seed (default {SEED0})")
    ap.add_argument("--llm-max", type=int, help="cases an LLM critic diagnoses, spread over the families "
                    "(default all; the rules critic and the baselines always see every case)")
    ap.add_argument("--save-cases", type=Path, help="keep the cases (episodes and JSON) in this folder")
    ap.add_argument("--cases", type=Path, help="diagnose the cases saved in this folder instead of drawing")
    ap.add_argument("--out", type=Path, help="write the results as JSON here (LLM call logs beside it)")
    a = ap.parse_args(argv)
    families = a.families
    if not a.policy.is_file():
        ap.error(f"--policy {a.policy} does not exist")
    if a.draws < 1 or a.k < 1 or a.verify_n < 0:
        ap.error("--draws and --k must be >= 1 and --verify-n >= 0")
    t0 = time.perf_counter()
    if a.cases is not None:
        if not (a.cases / "cases.json").is_file():
            ap.error(f"--cases {a.cases} holds no cases.json (write one with --save-cases)")
        cases, counts = load_cases(a.cases)
    else:
        cases, counts = collect(families, a.draws, a.k, a.policy, a.workers, a.seed)
        if a.save_cases:
            save_cases(cases, counts, a.save_cases)
    if not cases:
        ap.exit(1, "no case: no failure that exactly one factor moved back turns into a success; "
                   "draw more scenes (--draws)\n")
    baselines(cases, a.seed)
    log_dir = a.out.parent if a.out else Path(_tmpdir())
    timing = {}
    for critic in a.critics:
        # with --out, answers are cached beside it: a killed benchmark rerun with the same flags replays the
        # answers it already had (their seconds then are the replay's; the call log keeps the real ones)
        from agents.llm import ResponseCache

        cache = (ResponseCache(log_dir / f"llm_cache_{critic}.sqlite") if a.out and critic != "rules"
                 else None)
        llm = None if critic == "rules" else bench_llm(critic, a, log_dir, cache)
        try:
            for prompt in ["hybrid"] if critic == "rules" else a.prompts:  # the rules critic reads none
                key = critic if critic == "rules" else f"{critic}-{prompt}"
                t1 = time.perf_counter()
                diagnose_all(cases if critic == "rules" else spread(cases, a.llm_max), critic, llm,
                             ood_context=a.ood_context, ood_first=a.ood_first, prompt=prompt, key=key,
                             settings=SETTINGS if critic == "rules" else tuple(a.llm_settings))
                timing[key] = round(time.perf_counter() - t1, 1)
        finally:
            if llm is not None:
                llm.close()
    scores = score(cases)
    res: dict[str, Any] = {"families": families, "draws": a.draws, "k": a.k, "policy": str(a.policy),
                           "seed": a.seed, "ood_context": a.ood_context, "ood_first": a.ood_first,
                           "local_model": a.local_model, "local_structured": a.local_structured,
                           "prompts": a.prompts,
                           "counts": counts, "scores": scores,
                           "critic_s": timing,
                           "cases": [{"family": c.family, "factor": c.factor, "side": c.side, "seed": c.seed,
                                      "moved": c.moved,
                                      **{k: named(v) or str(v) for k, v in c.diagnoses.items()},
                                      "seconds": c.seconds}
                                     for c in cases]}
    if a.verify_n:
        res["verification"] = verify_some(cases, list(timing), a.verify_n, a.verify, a.policy, a.workers,
                                          a.seed, control=a.control)
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    print(table(scores))
    if "verification" in res:
        print(json.dumps({c: {k: v for k, v in r.items() if k != "rows"}
                          for c, r in res["verification"].items()}, indent=1))
    if a.out:
        write_json(a.out, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
