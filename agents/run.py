"""Run CoDA's co-evolution loop (or a baseline) and write the run directory of DESIGN §7.

    python -m agents.run --preset smoke --llm rules --out runs/smoke
    python -m agents.run --preset default --method scalar --rounds 5 --out runs/scalar
    python -m agents.run --out runs/smoke --resume            # continue from the last checkpoint
    python -m agents.run --out runs/smoke --resume --rounds 4 # ... and run two more rounds
    python -m agents.run --preset smoke --executor ray        # simulation work on a local Ray instance
    python -m agents.run --out runs/x --resume --ray-address auto  # ... or resumed on a Ray cluster

LLM backends: rules (no model), local (embedded llama.cpp), openai (--base-url/--model, key from
$OPENAI_API_KEY), replay (--replay-file; --record records unseen prompts through --record-backend).
Every node checkpoints to runs/NAME/trace.sqlite before the next starts; `--resume` re-runs only the node
that was interrupted, which finds its finished work on disk.

Every input is checked before anything is written (exit code 2, one line saying what to do): the preset,
config file, method, families, LLM backend settings, the run directory, and on --resume its config.json,
trace.sqlite and the files its last checkpoint needs. A run that then fails exits 1 with one line; the
traceback goes to <run>/error.log.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from agents.config import METHODS, PRESETS, RunConfig
from agents.config.run_config import room_for_space
from agents.graph.rundir import RunDir, read_metrics
from agents.run_checks import (
    check_backend,
    check_devices,
    check_executor,
    check_out,
    check_trace,
    lock_run,
    read_config_file,
)
from common.cli import UsageError, command_parser, run_cli
from common.cli import console as cli_console
from sim.pool import EXECUTORS

BACKENDS = ("rules", "local", "openai", "replay")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = command_parser("agents.run", __doc__)
    p.add_argument("--preset", default="default", help=f"one of {', '.join(PRESETS.names())}")
    p.add_argument("--config", type=Path, help="start from this RunConfig JSON (a run's config.json, or one "
                   "written by experiments.table) instead of --preset; the flags below still override it")
    p.add_argument("--method", help=f"one of {', '.join(METHODS.names())} (default coda)")
    p.add_argument("--rounds", type=int, help="rounds after the bootstrap")
    p.add_argument("--llm", choices=BACKENDS, help="LLM backend of the critic and writer (default: the "
                   "preset's — local for default/demo, rules for smoke)")
    p.add_argument("--llm-critic", action="store_true", default=None,
                   help="the LLM decides the critic's diagnoses too (default: the rules critic decides and "
                   "the LLM writes the programs; the embedded model's judgement measured not to help)")
    p.add_argument("--model", help="local model key or endpoint model name")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (--llm openai)")
    p.add_argument("--replay-file", type=Path, help="recordings for --llm replay")
    p.add_argument("--record", action="store_true", help="replay: record unseen prompts")
    p.add_argument("--record-backend", default="local", choices=("local", "openai"))
    p.add_argument("--out", type=Path, help="run directory (default runs/<preset>_<method>)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--families", help="comma-separated task families")
    p.add_argument("--space", choices=("core", "extended"), help="the factor space every generator draws "
                   "from: each family's own (core, the default) or with sim.extension's (extended)")
    p.add_argument("--background", choices=("seed", "dr"), help="what every generated arm draws the factors "
                   "it does not edit from: domain randomization's widened program (dr; the default preset's) "
                   "or the seed program's ranges (seed; the recorded tables' and the other presets')")
    p.add_argument("--budget", type=int, help="accepted training scenes per family per round")
    p.add_argument("--workers", type=int, help="episode-pool worker processes (with --executor ray and no "
                   "--ray-address: the local Ray instance's CPUs)")
    p.add_argument("--executor", help=f"where simulation work runs, one of {', '.join(EXECUTORS)}: local "
                   "(this machine's process pool, the default) or ray")
    p.add_argument("--ray-address", help="with --executor ray: local (start one here, the default), auto "
                   "(the cluster `ray start --head` made) or HOST:PORT")
    p.add_argument("--device", help="where training runs (bootstrap SFT, round updates, chunk critics): cpu "
                   "(default), cuda, cuda:N or auto (a GPU when torch sees one)")
    p.add_argument("--rollout-device", help="where the policy acts in episodes (each pool worker holds a "
                   "copy): cpu (default), cuda, cuda:N or auto")
    p.add_argument("--seed", type=int, help="the run's seed (scenes, sampling, training)")
    p.add_argument("--init-policy", type=Path, help="start from this policy checkpoint (e.g. pretrained)")
    p.add_argument("--policy", help="a named policy configuration instead of the preset's: object_token "
                   "(its defaults) or pi05_tiny (lerobot's PI05, tiny, CPU; needs .venv-pi05 from "
                   "`make setup-pi05`)")
    p.add_argument("--quiet", action="store_true", help="no live progress (the tables still print)")
    return p.parse_args(argv)


def make_config(a: argparse.Namespace) -> RunConfig:
    """Preset (or --config file) + flags (a fresh run)."""
    cfg = read_config_file(a.config) if a.config else PRESETS.get(a.preset)
    over: dict[str, Any] = {k: v for k, v in (("method", a.method), ("rounds", a.rounds), ("llm", a.llm),
                                              ("llm_model", a.model), ("llm_base_url", a.base_url),
                                              ("llm_critic", a.llm_critic),
                                              ("budget", a.budget), ("workers", a.workers), ("seed", a.seed),
                                              ("executor", a.executor), ("ray_address", a.ray_address),
                                              ("space", a.space), ("background", a.background))
                            if v is not None}
    if a.ray_address and not a.executor:
        over["executor"] = "ray"
    if a.families:
        over["families"] = tuple(f.strip() for f in a.families.split(","))
    if a.policy:
        over["learn"] = dataclasses.replace(cfg.learn, policy=_named_policy(a.policy))
    if (a.space or cfg.space) == "extended":  # room for the extension's objects (`room_for_space`)
        learn = over.get("learn", cfg.learn)
        over["learn"] = dataclasses.replace(learn, policy=room_for_space(learn.policy, "extended"))
    if a.init_policy:
        if not a.init_policy.is_file():
            raise UsageError(f"no policy checkpoint at {a.init_policy}")
        from coda_policy.checkpoint import CheckpointError, read_meta

        try:
            read_meta(a.init_policy)
        except CheckpointError as e:  # an old pickled .pt (the line says how to convert it), or no checkpoint
            raise UsageError(str(e)) from None
        learn = over.get("learn", cfg.learn)
        over["learn"] = dataclasses.replace(learn, init_policy=str(a.init_policy.resolve()))
    cfg = with_devices(dataclasses.replace(cfg, **over), a)
    _room_in_init_policy(cfg)
    from sim.families import get_family

    for f in cfg.families:
        get_family(f)  # a typo fails now, with "did you mean"
    return cfg


def _room_in_init_policy(cfg: RunConfig) -> None:
    """An extended run that starts from a policy checkpoint needs the checkpoint to have room for every
    object token the space's scenes hold (`room_for_space` gives a fresh policy that room; a checkpoint keeps
    the bound it was saved with, so a scene over it would stop the run mid-round): refused now, saying what
    to start from instead."""
    if cfg.space != "extended" or not cfg.learn.init_policy:
        return
    from coda_policy.checkpoint import CheckpointError, read_meta
    from sim.extension import EXTENDED_MAX_OBJECTS

    try:
        limit = read_meta(cfg.learn.init_policy)["config"].get("max_objects")
    except CheckpointError as e:
        raise UsageError(str(e)) from None
    if limit is not None and limit < EXTENDED_MAX_OBJECTS:
        raise UsageError(
            f"the policy to start from ({cfg.learn.init_policy}) has room for {limit} object tokens, and "
            f"a scene of the extended space can hold {EXTENDED_MAX_OBJECTS}: raise its bound (the same "
            f"weights) with `python -m coda_policy.convert {cfg.learn.init_policy} --max-objects "
            f"{EXTENDED_MAX_OBJECTS} --out ROOMY.safetensors` and start from that, or from scratch with a "
            "preset that trains its bootstrap (--preset default)")


def _named_policy(name: str) -> Any:
    """The named policy configuration; a backend whose packages are not installed here is a usage error."""
    import importlib.util

    from coda_policy.registry import named_config

    try:
        pc = named_config(name)
    except KeyError as e:
        raise UsageError(str(e).strip('"')) from None
    if pc.type == "pi05" and importlib.util.find_spec("lerobot") is None:
        raise UsageError(f"--policy {name} runs lerobot's PI05, which is not installed in this environment: "
                         "`make setup-pi05`, then run with .venv-pi05/bin/python -m agents.run ...")
    return pc


def with_devices(cfg: RunConfig, a: argparse.Namespace) -> RunConfig:
    """`cfg` with --device / --rollout-device applied (ValueError on a malformed name)."""
    devices = {k: v for k, v in (("device", a.device), ("rollout_device", a.rollout_device)) if v is not None}
    return dataclasses.replace(cfg, learn=dataclasses.replace(cfg.learn, **devices)) if devices else cfg


def make_llm(cfg: RunConfig, run: RunDir, a: argparse.Namespace) -> tuple[Any, Any]:
    """(LLM or None for rules, its call log). Keys come from the environment only."""
    if cfg.llm == "rules":
        return None, None
    from agents.llm import CallLog, LocalConfig, OpenAIConfig, ReplayConfig, ResponseCache
    from agents.llm import make_llm as build

    log, cache = CallLog(run.llm_calls), ResponseCache(run.llm_cache)

    def openai() -> OpenAIConfig:
        url = cfg.llm_base_url or os.environ.get("OPENAI_BASE_URL", "")
        model = cfg.llm_model or os.environ.get("OPENAI_MODEL", "")
        return OpenAIConfig(base_url=url, model=model, api_key=os.environ.get("OPENAI_API_KEY", "unused"))

    def local() -> LocalConfig:  # built only for the local backend: a model name may be an endpoint's
        return LocalConfig(model=cfg.llm_model) if cfg.llm_model else LocalConfig()

    if cfg.llm == "replay":
        path = a.replay_file or run.root / "llm_replay.json"
        inner = openai() if a.record_backend == "openai" else local()
        conf: Any = ReplayConfig(path=path, mode="record" if a.record else "replay",
                                 record_backend=a.record_backend, record_config=inner if a.record else None)
    else:
        conf = local() if cfg.llm == "local" else openai()
    return build(cfg.llm, conf, cache=cache, call_log=log), log


def _resume_config(a: argparse.Namespace, run: RunDir) -> RunConfig:
    """The run's own config (validated like --config), with --rounds applied; checks trace.sqlite and the
    files the last checkpoint needs first, and writes config.json only when everything is readable."""
    check_out(run.root, resume=True)
    if not run.config.is_file():
        raise UsageError(f"--resume needs {run.config}; start the run without --resume")
    try:
        cfg = read_config_file(run.config, "config.json")
    except ValueError as e:
        raise UsageError(f"cannot resume: {e}. The run directory was not changed") from None
    _same_as_run(a, cfg)
    check_backend(cfg, a, run.root)
    missing = check_trace(run)
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise UsageError(f"cannot resume {run.root}: its last checkpoint needs files that are gone "
                         f"({shown}). Restore them, or fork an earlier round with python -m agents.replay "
                         f"{run.root} --fork STEP --out NEW")
    if a.rounds is not None and a.rounds != cfg.rounds:
        if a.rounds < 0:
            raise UsageError("--rounds must be >= 0")
        cfg = dataclasses.replace(cfg, rounds=a.rounds)
        run.config.write_text(cfg.to_json())
    if a.executor or a.ray_address:  # where the work runs may change: the results do not depend on it
        try:
            cfg = dataclasses.replace(cfg, executor=a.executor or ("ray" if a.ray_address else "local"),
                                      ray_address=a.ray_address)
        except ValueError as e:
            raise UsageError(str(e)) from None
        check_executor(cfg)
        run.config.write_text(cfg.to_json())
    if a.device or a.rollout_device:  # so may the devices (results move by float rounding only)
        try:
            cfg = with_devices(cfg, a)
        except ValueError as e:
            raise UsageError(str(e)) from None
        check_devices(cfg)
        run.config.write_text(cfg.to_json())
    return cfg


def _same_as_run(a: argparse.Namespace, cfg: RunConfig) -> None:
    """On --resume only --rounds (and where the work runs: --executor, --ray-address, --device,
    --rollout-device) may change; a flag
    that repeats the run's own value is fine."""
    flags = {"method": cfg.method, "llm": cfg.llm, "model": cfg.llm_model, "base_url": cfg.llm_base_url,
             "budget": cfg.budget, "workers": cfg.workers, "seed": cfg.seed,
             "families": ",".join(cfg.families), "config": None, "init_policy": None, "space": cfg.space,
             "background": cfg.background}
    given = {k: str(getattr(a, k)).replace(" ", "") for k in flags if getattr(a, k) is not None}
    changed = [f"--{k.replace('_', '-')}" for k, v in given.items() if flags[k] is None or v != str(flags[k])]
    if a.preset != "default" and a.preset != cfg.preset.split("+")[0]:
        changed.append("--preset")
    if changed:
        raise UsageError(f"--resume continues the run as configured: only --rounds (and where the work "
                         f"runs: --executor, --ray-address, --device, --rollout-device) may change, not "
                         f"{', '.join(changed)}. For a what-if, fork it: python -m agents.replay "
                         f"{a.out} --fork STEP --out NEW")


def execute(cfg: RunConfig, run: RunDir, a: argparse.Namespace, reporter: Any) -> dict[str, Any]:
    """Build the dependencies and the graph, then start or continue the run; returns the final state."""
    from agents.graph.build import build_graph, open_checkpointer, thread_config
    from agents.graph.deps import open_deps
    from agents.graph.state import initial_state

    llm, log = make_llm(cfg, run, a)
    try:
        with open_deps(cfg, run.root, llm=llm, call_log=log, reporter=reporter) as deps, \
                open_checkpointer(run.root) as saver:
            app = build_graph(deps).compile(checkpointer=saver)
            conf = thread_config()
            if not a.resume:
                return app.invoke(initial_state(cfg.rounds), conf, durability="sync")
            snap = app.get_state(conf)
            if snap.values.get("rounds") != cfg.rounds:  # --rounds changed: a finished run can go on
                app.update_state(conf, {"rounds": cfg.rounds}, as_node=snap.values.get("node") or "report")
                snap = app.get_state(conf)
            if not snap.next:
                reporter.log(f"{run.root} has finished all {cfg.rounds} rounds; nothing to resume")
                return dict(snap.values)
            # at a round boundary (a `report` checkpoint) the next round starts
            at = int(snap.values.get("round", 0)) + (snap.values.get("node") == "report")
            reporter.log(f"resuming: round {at} at {', '.join(snap.next)}")
            return app.invoke(None, conf, durability="sync")
    finally:
        if llm is not None:
            llm.close()


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    where: list[Path] = []

    def hint() -> str:
        if not where or not (where[0] / "trace.sqlite").exists():
            return ""
        return (f"Every finished node is checkpointed; continue with: python -m agents.run --out {where[0]} "
                "--resume")

    with contextlib.ExitStack() as held:  # the run directory's lock, held until the run ends
        return run_cli(lambda: _main(a, where, held), log_dir=lambda: where[0] if where else None, hint=hint)


def _main(a: argparse.Namespace, where: list[Path], held: contextlib.ExitStack) -> int:
    try:
        cfg = None if a.resume else make_config(a)
    except (KeyError, ValueError) as e:  # unknown preset/method/family ("did you mean"), bad values
        raise UsageError(str(e).strip("'\"")) from None
    if a.resume and a.out is None:
        raise UsageError("--resume needs --out RUN_DIR (the run to continue)")

    out = a.out or Path("runs") / f"{a.preset}_{(cfg.method if cfg else a.method) or 'coda'}"
    run = RunDir(out)
    if a.resume:
        if out.is_dir():
            held.enter_context(lock_run(out))
        cfg = _resume_config(a, run)
    else:
        if run.trace.exists():
            raise UsageError(f"{out} already holds a run; pass --resume to continue it or choose another "
                             "--out")
        check_backend(cfg, a, run.root)
        check_executor(cfg)
        check_devices(cfg)
        check_out(out, resume=False)
        held.enter_context(lock_run(out))
        run.config.write_text(cfg.to_json())
    where.append(run.root)
    assert cfg is not None

    from agents.graph.deps import QuietReporter
    from agents.graph.display import RichReporter, cost_table, summary_table

    console = cli_console()
    console.print(f"[bold]CoDA[/] {cfg.method} · preset {cfg.preset} · llm {cfg.llm} · {cfg.rounds} rounds · "
                  f"families {', '.join(cfg.families)} · budget {cfg.budget}/family/round"
                  + (f" · device {cfg.learn.device}" if cfg.learn.device != "cpu" else "")
                  + (f" · rollouts on {cfg.learn.rollout_device}" if cfg.learn.rollout_device != "cpu"
                     else "")
                  + f" → {run.root}")
    t0 = time.perf_counter()
    from agents.llm import LLMError

    try:
        if a.quiet:
            execute(cfg, run, a, QuietReporter())
        else:
            with RichReporter(console) as reporter:
                execute(cfg, run, a, reporter)
    except (LLMError, KeyboardInterrupt) as e:  # a backend that cannot answer, or ^C: the state is safe
        why = "interrupted" if isinstance(e, KeyboardInterrupt) else f"{type(e).__name__}: {e}"
        console.print(f"[red]stopped[/] ({why[:2000]})\nEvery finished node is checkpointed in {run.trace}; "
                      f"continue with: python -m agents.run --out {run.root} --resume")
        return 130 if isinstance(e, KeyboardInterrupt) else 1
    rows = read_metrics(run.metrics)
    console.print(cost_table(rows))
    console.print(summary_table(rows, title=f"{cfg.method}: all rounds ({run.root})"))
    console.print(f"wall {time.perf_counter() - t0:.1f} s this invocation · metrics {run.metrics} · "
                  f"report {run.report}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
