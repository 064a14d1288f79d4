"""`diagnose` and `verify`: the critic explains failed rollouts; each explanation is then tested by a
targeted-edit batch against a control batch (DESIGN §5.5–5.6).

A diagnosis file per episode, diagnoses/round_XX/<episode>.json, holds the diagnosis, the episode and the
program it came from, and — after `verify` — the verdict; a re-run node skips episodes already done.
Malformed, truncated or schema-violating critic output (or a rules critic without an answer) is retried
with the error appended, at most `max_retries` times — at most 1 + max_retries LLM calls per episode, this
being the only retry loop; then the episode is reported undiagnosed and the round goes on. Anything else
the critic raises stops the run, naming the episode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.graph.deps import Deps
from agents.graph.nodes.arms import arm_base, load_program
from agents.graph.nodes.rollout import outcomes, scene_id
from agents.graph.nodes.work import agent_failures, error_text, raised_in, retry_feedback, stable_seed
from agents.graph.rundir import read_json, write_json
from agents.graph.state import RoundState, Slot, slot_key


def _failed_train_episodes(deps: Deps, state: RoundState,
                           by_scene: Mapping[str, Any]) -> list[tuple[Slot, str]]:
    """Failed rollouts on training scenes, at most `diagnose_max`: taken in turn from each family (so the
    families listed last are not left without a diagnosis), and within a family in turn from its slots."""
    per_family: dict[str, list[list[tuple[Slot, str]]]] = {}
    for slot in state["slots"]:
        fails = [by_scene[scene_id(s)].path for s in slot["accepted"]
                 if scene_id(s) in by_scene and not by_scene[scene_id(s)].success]
        per_family.setdefault(slot["family"], []).append([(slot, p) for p in fails])
    queues = [_interleave(qs) for qs in per_family.values()]
    return _interleave(queues)[: deps.config.diagnose_max]


def _interleave(queues: list[list[Any]]) -> list[Any]:
    """The first item of every queue, then the second of every queue, ..."""
    longest = max((len(q) for q in queues), default=0)
    return [q[i] for i in range(longest) for q in queues if i < len(q)]


def round_peers(deps: Deps, state: RoundState,
                by_scene: Mapping[str, Any]) -> dict[str, list[tuple[str, dict[str, Any], bool]]]:
    """Per family: (episode, flat factor values, success) of every rollout of the round — the evidence
    the critic compares a failure against."""
    out: dict[str, list[tuple[str, dict[str, Any], bool]]] = {}
    for slot in state["slots"]:
        for rel in slot["accepted"] + slot["held_scenes"]:
            got = by_scene.get(scene_id(rel))
            if got is None:
                continue
            grouped = read_json(deps.run.abs(rel)).get("factors", {})
            flat = {k: v for group in grouped.values() for k, v in group.items()}
            out.setdefault(slot["family"], []).append((got.path, flat, got.success))
    return out


def _diagnose_one(deps: Deps, slot: Slot, episode_path: str,
                  peers: Sequence[tuple[dict[str, Any], bool]] = ()) -> tuple[Any | None, list[str]]:
    """The critic on one episode, at most 1 + max_retries calls (one LLM call each: the critic's own
    retries are 0), each fed the previous call's error; (diagnosis or None, the errors seen). Only an
    expected failure (`agent_failures`) is retried: a backend that cannot answer (or a replay miss) stops
    the run to be resumed later, and a bug stops it too."""
    from sim.episode import Episode

    episode = Episode.load(deps.run.abs(episode_path))
    program = load_program(deps, slot["program"])
    expected = agent_failures()
    errors: list[str] = []
    critic = "random" if deps.config.method_config.diagnoser == "random" else deps.config.critic_kind
    for _ in range(deps.config.max_retries + 1):
        try:
            return deps.agents.diagnose(episode, program, deps.llm, critic=critic,
                                        episode_id=Path(episode_path).stem,
                                        feedback=retry_feedback(errors), peers=peers), errors
        except expected as e:
            errors.append(error_text(e))
    return None, errors


def diagnose(state: RoundState, deps: Deps) -> dict[str, Any]:
    """Diagnose failed training rollouts; write one file per episode; count the critic's unusable answers."""
    d = deps.run.round_dir("diagnoses", state["round"])
    by_scene = outcomes(deps, state.get("rollouts", []))
    todo = _failed_train_episodes(deps, state, by_scene)
    peers = round_peers(deps, state, by_scene) if todo else {}
    tick = deps.reporter.progress("diagnose: episodes", len(todo))
    files, failures = [], list(state.get("critic_failures", []))
    unusable = dict(state.get("unusable_answers", {}))
    for slot, ep in todo:
        path = d / f"{Path(ep).stem}.json"
        if path.exists():  # diagnosed before a crash: its unusable answers are on file
            unusable["critic"] = unusable.get("critic", 0) + read_json(path).get("retries", 0)
        else:
            with raised_in(f"diagnose: episode {ep} of slot {slot_key(slot)}"):
                others = [(f, ok) for path, f, ok in peers.get(slot["family"], []) if path != ep]
                dx, errors = _diagnose_one(deps, slot, ep, others)
            unusable["critic"] = unusable.get("critic", 0) + len(errors)
            if dx is None:
                failures.append(f"{ep}: critic failed {len(errors)}× — last: {errors[-1][:300]}")
                tick(None)
                continue
            write_json(path, {"diagnosis": dx.model_dump(mode="json"), "family": slot["family"],
                              "slot": slot_key(slot), "episode": ep, "program": slot["program"],
                              "retries": len(errors), "verdict": None})
        files.append(deps.run.rel(path))
        tick(None)
    return {"diagnoses": files, "critic_failures": failures, "unusable_answers": unusable}


def make_run_batch(deps: Deps, state: RoundState, tag: str) -> Any:
    """`run_batch(items) -> [EpisodeResult]`: each item's program (`agents.critic.verify.BatchItem`: program,
    factors, seed) run in the sandbox, then the current policy rolled out on the scene (nothing saved)."""
    from sandbox import SandboxTask
    from sim.pool import EpisodeJob, EpisodeResult

    policy = deps.trainer.factory(deps.run.abs(state["policy"]), stable_seed(deps.config.seed, tag))

    def run_batch(items: Sequence[Any]) -> list[Any]:
        tasks = [SandboxTask(source=it.program.source, factors=dict(it.factors), seed=it.seed)
                 for it in items]
        made = deps.sandbox.run_many(tasks)
        deps.meter.sandbox_runs += len(tasks)
        out: list[Any] = [EpisodeResult(index=i, success=False, failing_phase=None, steps=0, wall_s=0.0,
                                        path=None, error=f"generation failed: {res.error}")
                          for i, res in enumerate(made)]
        where = [i for i, res in enumerate(made) if res.ok]
        jobs = [EpisodeJob(scene=made[i].scenes[0], policy=policy, max_steps=deps.config.rollout_max_steps)
                for i in where]
        for i, r in zip(where, deps.episodes.run(jobs), strict=True):
            deps.meter.sim_steps += r.steps
            deps.meter.episodes += 1
            out[i] = EpisodeResult(index=i, success=r.success, failing_phase=r.failing_phase, steps=r.steps,
                                   wall_s=r.wall_s, cpu_s=r.cpu_s, path=None, error=r.error)
        return out

    return run_batch


def verify(state: RoundState, deps: Deps) -> dict[str, Any]:
    """A verdict for every diagnosis of the round that has none yet."""
    from memory.types import Diagnosis

    tick = deps.reporter.progress("verify: diagnoses", len(state.get("diagnoses", [])))
    failures = list(state.get("critic_failures", []))
    for rel in state.get("diagnoses", []):
        path = deps.run.abs(rel)
        rec = read_json(path)
        if rec.get("verdict") is None and not rec.get("verify_error"):
            dx = Diagnosis.model_validate(rec["diagnosis"])
            if not deps.config.method_config.verify:  # the link ablated: accepted as it is, no batches
                rec["verdict"] = accepted_unverified(dx).model_dump(mode="json")
                write_json(path, rec)
                tick(None)
                continue
            rng = np.random.default_rng(stable_seed(deps.config.seed, state["round"], dx.id))
            run_batch = make_run_batch(deps, state, dx.id)
            try:
                # on the family's base distribution (the run's background: the seed's, or domain
                # randomization's), not the arm's program: a difficulty mode is a departure from that
                # distribution, and an arm that already holds the hard condition (a variant, a mode)
                # fails its control batch too (FINDINGS #2)
                verdict = deps.agents.verify(dx, arm_base(deps, rec["family"]), run_batch,
                                             n=deps.config.verify_n, alpha=deps.config.verify_alpha, rng=rng)
                rec["verdict"] = verdict.model_dump(mode="json")
                rec["verified_on"] = deps.config.background
                if verdict.context_dropped:  # what stands is the factor alone: the writer recreates that
                    rec["diagnosed_edit"] = rec["diagnosis"]["edit"]
                    rec["diagnosis"] = dx.without_context().model_dump(mode="json")
            except (ValueError, KeyError) as e:  # e.g. no factor left for a control edit
                rec["verify_error"] = f"{type(e).__name__}: {e}"
                failures.append(f"{rec['episode']}: verification failed: {rec['verify_error'][:300]}")
            write_json(path, rec)
        tick(None)
    return {"critic_failures": failures}


def accepted_unverified(dx: Any) -> Any:
    """The verdict of a diagnosis when verification is ablated (`MethodConfig.verify` off): validated, with
    no episode behind it (n = 0) and a reason that says so."""
    from memory.types import Verdict

    return Verdict(diagnosis_id=dx.id, status="validated", targeted_failure_rate=0.0,
                   control_failure_rate=0.0, statistic=0.0, p_value=1.0, n=0, test="none",
                   reason="verification ablated: every diagnosis is accepted unverified")


def verdict_counts(deps: Deps, files: Sequence[str]) -> dict[str, int]:
    """validated / refuted / inconclusive / unverified among diagnosis files."""
    out = {"validated": 0, "refuted": 0, "inconclusive": 0, "unverified": 0}
    for rel in files:
        v = read_json(deps.run.abs(rel)).get("verdict")
        out[v["status"] if v else "unverified"] += 1
    return out


def summary_diagnose(update: Mapping[str, Any]) -> str:
    n, f = len(update.get("diagnoses", [])), len(update.get("critic_failures", []))
    return f"{n} diagnoses" + (f", {f} critic failures" if f else "")


def summary_verify(update: Mapping[str, Any]) -> str:
    return f"{len(update.get('critic_failures', []))} critic/verify failures so far"
