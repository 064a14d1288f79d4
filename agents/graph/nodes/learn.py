"""`bootstrap`, `train` and `measure` (DESIGN §5.9–5.10): the policy before round 1, its update each round,
and success before/after per arm → the learning-progress ledger; held-out in-distribution and OOD
evaluation is measured every round for the record and never steers anything.

Checkpoints are policy/round_XX.safetensors; a node that re-runs after a crash finds a finished update
(checkpoint + train/round_XX.json) and keeps it.
"""

from __future__ import annotations

import math
import shutil
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.graph.deps import Deps
from agents.graph.nodes.arms import load_program, seed_programs
from agents.graph.nodes.rollout import outcomes, scene_id
from agents.graph.nodes.work import generate_scenes, run_policy, stable_seed, validate_scenes
from agents.graph.rundir import read_json, write_json
from agents.graph.state import RoundState
from agents.graph.trainer import retrain_steps


def _finished(deps: Deps, round_no: int) -> dict[str, Any] | None:
    """The saved update of `round`, if both its checkpoint and its record exist."""
    rec = deps.run.dir("train") / f"round_{round_no:02d}.json"
    return read_json(rec) if rec.exists() and deps.run.policy(round_no).exists() else None


def _record(deps: Deps, round_no: int, info: dict[str, Any]) -> dict[str, Any]:
    write_json(deps.run.dir("train") / f"round_{round_no:02d}.json", info)
    return info


def eval_scenes(deps: Deps) -> list[str]:
    """Held-out evaluation scenes per family (in distribution and OOD), written once to scenes/eval/."""
    from sim.families import get_family

    d, cfg, out = deps.run.dir("scenes") / "eval", deps.config, []
    d.mkdir(parents=True, exist_ok=True)
    for family in cfg.families:
        fam = get_family(family)
        for split, n, ood in (("id", cfg.eval_id, False), ("ood", cfg.eval_ood, True)):
            for i in range(n):
                spec = fam.sample_scene(cfg.eval_seed0 + i, ood=ood)
                path = d / f"{family}_{split}_{spec.scene_id}.json"
                if not path.exists():
                    path.write_text(spec.to_json())
                out.append(deps.run.rel(path))
    return out


def heldout(deps: Deps, policy: str, round_no: int) -> dict[str, dict[str, float]]:
    """Success of `policy` per family on the held-out ID and OOD scenes."""
    scenes = eval_scenes(deps)
    tick = deps.reporter.progress("held-out eval", len(scenes))
    ran = run_policy(deps, scenes, policy, round_no=round_no, prefix="eval",
                     seed=stable_seed(deps.config.seed, "eval"), record_every=10, tick=tick)
    acc: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for s, r in zip(scenes, ran, strict=True):
        family, split = Path(s).stem.rsplit("_", 2)[:2]
        acc[family][split].append(r.success)
    return {f: {k: sum(v) / len(v) for k, v in splits.items()} for f, splits in acc.items()}


def first_demos(deps: Deps, scenes: Sequence[str], need: int, tick: Callable[[Any], None]) -> list[str]:
    """The demonstrations of the first `need` valid scenes of `scenes`, in order — the ones validating every
    scene would keep — validating in order batches only as many scenes as that takes (each batch the
    demonstrations still missing, at least one per worker): the oversampled rest stays unvalidated."""
    demos: list[str] = []
    i = 0
    while len(demos) < need and i < len(scenes):
        batch = scenes[i: i + max(need - len(demos), getattr(deps.episodes, "workers", 0) or 1)]
        i += len(batch)
        demos += [r["demo"] for r in validate_scenes(deps, batch, round_no=0, tick=tick) if r.get("ok")]
    return demos[:need]


def bootstrap(state: RoundState, deps: Deps) -> dict[str, Any]:
    """Round 0: write the seed programs, collect seed demonstrations, make the starting policy."""
    cfg = deps.config
    programs, demos, history = [], [], {}
    for family in cfg.families:
        gen, train = seed_programs(deps, family)
        programs += [gen, train]
        got = generate_scenes(deps, load_program(deps, gen), math.ceil(cfg.seed_demos * cfg.oversample),
                              round_no=0, tag="seed", attempt=0)
        tick = deps.reporter.progress(f"seed demos: {family}", cfg.seed_demos)
        history[family] = first_demos(deps, got.scenes, cfg.seed_demos, tick)
        demos += history[family]
    if not demos:
        raise RuntimeError("no seed demonstration succeeded: the seed programs or the simulator are broken")
    out = deps.run.policy(0)
    info = _finished(deps, 0)
    if info is None:
        paths = [deps.run.abs(p) for p in demos]
        made = deps.trainer.bootstrap(paths, out) if cfg.method_config.bootstrap_sft else \
            deps.trainer.initial(paths, out)
        info = _record(deps, 0, {"update": "sft" if cfg.method_config.bootstrap_sft else "none",
                                 "demos": len(paths), **made})
    policy = deps.run.rel(out)
    return {"round": 0, "policy": policy, "programs": programs, "train_metrics": info,
            "demo_history": history, "measured": {"arms": [], "eval": heldout(deps, policy, 0),
                                                  "demos": len(demos)}}


def aw_groups(deps: Deps, state: RoundState) -> list[tuple[Any, list[Path]]]:
    """(training program, its episodes) per program: each slot's training-scene rollouts and demos."""
    by_scene = outcomes(deps, state.get("rollouts", []))
    groups: dict[str, list[Path]] = defaultdict(list)
    history = state.get("demo_history", {}) if deps.config.learn.replay else {}
    repeat = round_repeat(deps.config.learn.round_share, sum(len(s["demos"]) for s in state["slots"]),
                           sum(len(d) for d in history.values()))
    for slot in state["slots"]:
        tp = slot["train_program"] or seed_programs(deps, slot["family"])[1]
        groups[tp] += [deps.run.abs(by_scene[scene_id(s)].path) for s in slot["accepted"]
                       if scene_id(s) in by_scene]
        groups[tp] += [deps.run.abs(d) for d in slot["demos"]] * repeat
    for family, demos in history.items():  # earlier rounds' demos, shaped by their family's seed program
        groups[seed_programs(deps, family)[1]] += [deps.run.abs(d) for d in demos]
    return [(load_program(deps, tp), eps) for tp, eps in groups.items() if eps]


def round_repeat(share: float, new: int, replayed: int) -> int:
    """How many times the round's `new` demonstrations go into the update beside `replayed` ones so that
    they are about `share` of all (`LearnConfig.round_share`); once when the share is 0 or either is none."""
    if share <= 0 or not new or not replayed:
        return 1
    return max(1, round(share / (1 - share) * replayed / new))


def _history(state: RoundState) -> dict[str, list[str]]:
    """The demonstration history after this round: the earlier rounds' and this round's."""
    out = {f: dict.fromkeys(v) for f, v in state.get("demo_history", {}).items()}
    for slot in state["slots"]:
        out.setdefault(slot["family"], {}).update(dict.fromkeys(slot["demos"]))
    return {f: list(v) for f, v in out.items()}


def _retrain_steps(deps: Deps, demos: int) -> int | None:
    """A retraining's SFT steps: the config's (None) or, `learn.retrain_steps` "scaled", scaled from the
    bootstrap's demonstrations (its recorded count) to `demos`."""
    learn = deps.config.learn
    if learn.retrain_steps == "fixed":
        return None
    boot = _finished(deps, 0) or {}
    return retrain_steps(learn.sft_steps, demos, int(boot.get("demos") or 0))


def train(state: RoundState, deps: Deps) -> dict[str, Any]:
    """The round's policy update: none, SFT on the round's demos, advantage-weighted, or (`learn.retrain`,
    any method that updates) the bootstrap's recipe retrained on every demonstration so far."""
    r, method = state["round"], deps.config.method_config
    src, out = deps.run.abs(state["policy"]), deps.run.policy(r)
    info = _finished(deps, r)
    if info is None:
        demos = [deps.run.abs(d) for s in state["slots"] for d in s["demos"]]
        if deps.config.learn.replay:
            demos += [deps.run.abs(d) for ds in state.get("demo_history", {}).values() for d in ds]
        if method.update == "none" or (method.update == "sft" and not demos):
            shutil.copyfile(src, out)
            made: dict[str, Any] = {"skipped": "no update" if method.update == "none" else "no demos"}
        elif deps.config.learn.retrain:
            every = [deps.run.abs(d) for ds in _history(state).values() for d in ds]
            made = {"retrain": True, **deps.trainer.bootstrap(every, out, _retrain_steps(deps, len(every)))}
        elif method.update == "sft":
            made = deps.trainer.finetune(src, demos, out)
        else:
            made = deps.trainer.aw_update(src, aw_groups(deps, state), out, shaping=method.shaping,
                                          seed=stable_seed(deps.config.seed, r, "train"))
        info = _record(deps, r, {"update": method.update, **made})
    return {"policy": deps.run.rel(out), "train_metrics": info, "demo_history": _history(state)}


def measure(state: RoundState, deps: Deps) -> dict[str, Any]:
    """Before/after success per arm on its measurement scenes → ledger; held-out evaluation."""
    r = state["round"]
    held = [(slot, s) for slot in state["slots"] for s in slot["held_scenes"]]
    tick = deps.reporter.progress("measure: held scenes", len(held))
    after = run_policy(deps, [s for _, s in held], state["policy"], round_no=r, prefix="meas",
                       seed=stable_seed(deps.config.seed, r, "measure"), record_every=10, tick=tick)
    before = outcomes(deps, state.get("rollouts", []))
    arms: dict[tuple[str, str], dict[str, list[bool]]] = defaultdict(lambda: {"before": [], "after": []})
    for (slot, s), a in zip(held, after, strict=True):
        arm = arms[(slot["mode_id"], slot["family"])]
        arm["after"].append(a.success)
        if scene_id(s) in before:
            arm["before"].append(before[scene_id(s)].success)
    rows = []
    for (mode, family), v in sorted(arms.items()):
        b = sum(v["before"]) / len(v["before"]) if v["before"] else None
        a = sum(v["after"]) / len(v["after"])
        deps.ledger.record(mode, family, r, a, len(v["after"]), before=b)
        rows.append({"mode": mode, "family": family, "n": len(v["after"]), "before": b, "after": a})
    return {"measured": {"arms": rows, "eval": heldout(deps, state["policy"], r)}}


def summary_train(update: Mapping[str, Any]) -> str:
    m = update.get("train_metrics", {})
    m = {**m, "update": "retrain (the bootstrap's recipe)"} if m.get("retrain") else m
    keys = ("update", "skipped", "chunks", "episodes", "demos", "train_s")
    return ", ".join(f"{k} {m[k]}" for k in keys if k in m)


def summary_measure(update: Mapping[str, Any]) -> str:
    ev = update.get("measured", {}).get("eval", {})
    ood = [v.get("ood") for v in ev.values() if v.get("ood") is not None]
    idd = [v.get("id") for v in ev.values() if v.get("id") is not None]
    mean = lambda xs: f"{sum(xs) / len(xs):.0%}" if xs else "-"  # noqa: E731
    return f"held-out success ID {mean(idd)}, OOD {mean(ood)}"
