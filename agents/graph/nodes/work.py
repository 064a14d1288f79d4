"""The simulator work nodes hand out: scene generation in the sandbox, validity checks (with the expert's
demonstration) and policy episodes on the episode pool. Results are files named by content, and a file
that already exists is reused — which is what makes a re-run node (after `--resume`) cheap and lossless.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.graph.deps import Deps
from agents.graph.rundir import file_digest, read_json, write_json


def stable_seed(*parts: Any) -> int:
    """A 31-bit seed from any parts (stable across processes, unlike `hash`)."""
    digest = hashlib.sha256(json.dumps(parts, default=str).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def error_text(e: Exception) -> str:
    """An exception as the text fed back to an agent: an LLM output error's own feedback, else its message."""
    fb = getattr(e, "feedback", None)
    return f"{type(e).__name__}: {fb() if callable(fb) else e}"


@contextlib.contextmanager
def raised_in(where: str) -> Iterator[None]:
    """Any exception raised inside gets `where` (a slot, an episode, a node) as a note on its traceback and
    propagates unchanged: the run stops, saying what it was working on."""
    try:
        yield
    except Exception as e:
        e.add_note(f"raised in {where}")
        raise


def retry_feedback(errors: Sequence[str]) -> str | None:
    """What the next attempt of an agent is told: the last error — and, when the attempts before it failed
    the same way, that they did, so the retry's prompt is not the previous one again (a deterministic model,
    or a prompt cache, would give the same answer to it)."""
    if not errors:
        return None
    same = sum(e == errors[-1] for e in errors)
    if same == 1:
        return errors[-1]
    return (f"{errors[-1]}\n(The last {same} answers all had this problem. "
            f"This is attempt {len(errors) + 1}: answer differently.)")


def agent_failures() -> tuple[type[Exception], ...]:
    """What a critic or writer call is expected to raise, which its node retries (with the error fed back)
    and then reports or back-fills: unusable LLM output (`LLMOutputError`: `AnswerError`, `WriterError`,
    parse and truncation errors), a rules agent without an answer (`ProgramRejected`), and a written
    program that fails its checks (`ProgramCheckError`, `ExprError`, or `PotentialError` when its
    expressions fail on a demonstration). Anything else — a backend that cannot answer, a bug — propagates
    and stops the run."""
    from agents.llm.base import LLMOutputError
    from programs.checks import ProgramCheckError
    from programs.errors import ProgramRejected
    from programs.expr import ExprError
    from programs.potential import PotentialError

    return (LLMOutputError, ProgramRejected, ProgramCheckError, ExprError, PotentialError)


@dataclass(frozen=True)
class Generated:
    """Scenes a program produced (relative paths) and the sandbox errors it raised."""

    scenes: list[str]
    errors: list[str]


def generate_scenes(deps: Deps, program: Any, count: int, *, round_no: int, tag: str, attempt: int,
                    ood: bool = False) -> Generated:
    """Run `program` `count` times in the sandbox with factors drawn from its schema; save the scenes."""
    from sandbox import SandboxTask

    seeds = [stable_seed(deps.config.seed, round_no, program.family, tag, attempt, i) for i in range(count)]
    tasks, factors = [], []
    for s in seeds:
        f = program.sample_factors(np.random.default_rng(s), ood)
        factors.append(f)
        tasks.append(SandboxTask(source=program.source, factors=f, seed=s))
    results = deps.sandbox.run_many(tasks)
    deps.meter.sandbox_runs += len(tasks)
    out_dir, scenes, errors = deps.run.round_dir("scenes", round_no), [], []
    for res, f in zip(results, factors, strict=True):
        if not res.ok:
            errors.append(str(res.error))
            continue
        scene = res.scenes[0]
        if scene.family != program.family:  # a program says which family it builds; its scenes must agree
            errors.append(f"invalid_output: generate() returned a scene of family {scene.family!r}, but the "
                          f"program is for {program.family!r}")
            continue
        if not any(scene.factors.values()):  # a written program may not record its factors; the caller knows
            scene = scene.model_copy(update={"factors": program.grouped(f)})
        path = out_dir / f"{program.family}_{tag}_{scene.scene_id}.json"
        if not path.exists():
            path.write_text(scene.to_json())
        scenes.append(deps.run.rel(path))
    return Generated(scenes, errors)


def validate_one(scene_path: str, result_path: str, demo_path: str, thumb: bool) -> dict[str, Any]:
    """Validity checks + expert demonstration of one scene (runs in a pool worker)."""
    from sim.scene import SceneSpec
    from sim.validity import check_scene

    spec = SceneSpec.from_json(Path(scene_path).read_text())
    try:
        report = check_scene(spec, solve=True)
        row: dict[str, Any] = {"ok": report.ok, "reason": report.reason, "message": report.message}
        ep = report.attempt
        row["steps"] = ep.steps if ep is not None else 0
        if report.ok and report.demo is not None:
            report.demo.save(demo_path)
            row["demo"] = True
    except Exception as e:  # noqa: BLE001 - a crash in the simulator is this scene's verdict
        row = {"ok": False, "reason": "crashed", "message": f"{type(e).__name__}: {e}", "steps": 0}
    if thumb and row["ok"]:
        try:
            from sim.render import thumbnail

            thumbnail(spec, Path(scene_path).with_suffix(".png"))
        except Exception as e:  # noqa: BLE001 - no GL stack must not lose the scene
            row["thumbnail_error"] = f"{type(e).__name__}: {e}"
    write_json(result_path, row)
    return row


def validate_scenes(deps: Deps, scenes: Sequence[str], *, round_no: int,
                    tick: Callable[[Any], None] | None = None) -> list[dict[str, Any]]:
    """Validate scenes (reusing earlier verdicts on disk); each row gets `scene` and, if ok, `demo`."""
    run = deps.run
    vdir, edir = run.round_dir("validity", round_no), run.round_dir("episodes", round_no)
    jobs, rows = [], {}
    for s in scenes:
        sid = Path(s).stem.rsplit("_", 1)[-1]
        res, demo = vdir / f"{sid}.json", edir / f"demo_{sid}"
        if res.exists():
            rows[s] = read_json(res)
            if tick:
                tick(None)
        else:
            jobs.append((s, (str(run.abs(s)), str(res), str(demo), deps.config.thumbnails)))
    done = _map(deps, validate_one, [j[1] for j in jobs], tick)
    for s, row in zip([j[0] for j in jobs], done, strict=True):
        rows[s] = row
        deps.meter.sim_steps += int(row.get("steps", 0))
        deps.meter.episodes += 1
    out = []
    for s in scenes:
        row = dict(rows[s], scene=s)
        sid = Path(s).stem.rsplit("_", 1)[-1]
        if row.get("ok"):
            row["demo"] = run.rel(edir / f"demo_{sid}.npz")
        out.append(row)
    return out


def _map(deps: Deps, fn: Callable[..., dict[str, Any]], args: list[tuple],
         tick: Callable[[Any], None] | None) -> list[dict[str, Any]]:
    """`fn(*a)` for each `a`, on the episode pool's workers (in this process when it has none)."""
    out: list[dict[str, Any]] = []
    if not args:
        return out
    if getattr(deps.episodes, "workers", 0) == 0:
        for a in args:
            out.append(fn(*a))
            if tick:
                tick(None)
        return out
    futures = [deps.episodes.executor.submit(fn, *a) for a in args]
    for f in futures:
        try:
            out.append(f.result())
        except Exception as e:  # noqa: BLE001 - a dead worker fails this job only
            out.append({"ok": False, "reason": "crashed", "message": f"{type(e).__name__}: {e}", "steps": 0})
        if tick:
            tick(None)
    return out


@dataclass(frozen=True)
class Ran:
    """One policy episode: where it was saved (relative; None if it errored) and how it went."""

    scene: str
    path: str | None
    success: bool
    failing_phase: str | None
    error: str | None = None


def run_policy(deps: Deps, scenes: Sequence[str], policy: str, *, round_no: int, prefix: str, seed: int,
               record_every: int = 1, tick: Callable[[Any], None] | None = None) -> list[Ran]:
    """The policy checkpoint `policy` on each scene (closed loop); saved episodes are named by scene and
    policy digest, and reused when present."""
    from sim.pool import EpisodeJob
    from sim.scene import SceneSpec

    run = deps.run
    pdig = file_digest(run.abs(policy))
    factory = deps.trainer.factory(run.abs(policy), seed)
    edir = run.round_dir("episodes", round_no)
    jobs, idx, out = [], [], [None] * len(scenes)
    for i, s in enumerate(scenes):
        sid = Path(s).stem.rsplit("_", 1)[-1]
        target = edir / f"{prefix}_{sid}_{pdig}"
        if target.with_suffix(".json").exists():  # written after the .npz: the episode is complete
            meta = json.loads(target.with_suffix(".json").read_text())
            out[i] = Ran(s, run.rel(target.with_suffix(".npz")), meta["success"], meta["failing_phase"])
            if tick:
                tick(None)
            continue
        spec = SceneSpec.from_json(run.abs(s).read_text())
        jobs.append(EpisodeJob(scene=spec, policy=factory, out=target, record_every=record_every,
                               max_steps=deps.config.rollout_max_steps))
        idx.append(i)
    for i, r in zip(idx, deps.episodes.run(jobs, tick), strict=True):
        deps.meter.sim_steps += r.steps
        deps.meter.episodes += 1
        path = run.rel(r.path) if r.path is not None else None
        out[i] = Ran(scenes[i], path, r.success, r.failing_phase, r.error)
    return out  # type: ignore[return-value]
