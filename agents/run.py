"""Run CoDA's co-evolution loop (or a baseline) and write the run directory of DESIGN §7.

    python -m agents.run --preset smoke --llm rules --out runs/smoke
    python -m agents.run --preset default --method scalar --rounds 5 --out runs/scalar
    python -m agents.run --out runs/smoke --resume            # continue from the last checkpoint
    python -m agents.run --out runs/smoke --resume --rounds 4 # ... and run two more rounds

LLM backends: rules (no model), local (embedded llama.cpp), openai (--base-url/--model, key from
$OPENAI_API_KEY), replay (--replay-file; --record records unseen prompts through --record-backend).
Every node checkpoints to runs/NAME/trace.sqlite before the next starts; `--resume` re-runs only the node
that was interrupted, which finds its finished work on disk.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from agents.config import METHODS, PRESETS, RunConfig
from agents.graph.rundir import RunDir, read_metrics

BACKENDS = ("rules", "local", "openai", "replay")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m agents.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="default", help=f"one of {', '.join(PRESETS.names())}")
    p.add_argument("--config", type=Path, help="start from this RunConfig JSON (a run's config.json, or one "
                   "written by experiments.table1) instead of --preset; the flags below still override it")
    p.add_argument("--method", help=f"one of {', '.join(METHODS.names())} (default coda)")
    p.add_argument("--rounds", type=int, help="rounds after the bootstrap")
    p.add_argument("--llm", choices=BACKENDS, help="LLM backend of the critic and writer (default: the "
                   "preset's — local for default/demo, rules for smoke)")
    p.add_argument("--model", help="local model key or endpoint model name")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (--llm openai)")
    p.add_argument("--replay-file", type=Path, help="recordings for --llm replay")
    p.add_argument("--record", action="store_true", help="replay: record unseen prompts")
    p.add_argument("--record-backend", default="local", choices=("local", "openai"))
    p.add_argument("--out", type=Path, help="run directory (default runs/<preset>_<method>)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--families", help="comma-separated task families")
    p.add_argument("--budget", type=int, help="accepted training scenes per family per round")
    p.add_argument("--workers", type=int, help="episode-pool worker processes")
    p.add_argument("--seed", type=int)
    p.add_argument("--init-policy", type=Path, help="start from this policy checkpoint (e.g. pretrained)")
    p.add_argument("--quiet", action="store_true", help="no live progress (the tables still print)")
    return p.parse_args(argv)


def make_config(a: argparse.Namespace) -> RunConfig:
    """Preset (or --config file) + flags (a fresh run)."""
    cfg = _config_file(a.config) if a.config else PRESETS.get(a.preset)
    over: dict[str, Any] = {k: v for k, v in (("method", a.method), ("rounds", a.rounds), ("llm", a.llm),
                                              ("llm_model", a.model), ("llm_base_url", a.base_url),
                                              ("budget", a.budget), ("workers", a.workers), ("seed", a.seed))
                            if v is not None}
    if a.families:
        over["families"] = tuple(f.strip() for f in a.families.split(","))
    if a.init_policy:
        if not a.init_policy.exists():
            raise SystemExit(f"error: no policy checkpoint at {a.init_policy}")
        over["learn"] = dataclasses.replace(cfg.learn, init_policy=str(a.init_policy.resolve()))
    cfg = dataclasses.replace(cfg, **over)
    from sim.families import get_family

    for f in cfg.families:
        get_family(f)  # a typo fails now, with "did you mean"
    return cfg


def _config_file(path: Path) -> RunConfig:
    """A RunConfig from JSON; ValueError with what to fix when it cannot be one."""
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise ValueError(f"cannot read --config {path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"--config {path} is not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"--config {path} must hold a JSON object of RunConfig fields, not a "
                         f"{type(data).__name__}")
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(RunConfig)})
    if unknown:
        raise ValueError(f"--config {path}: unknown RunConfig fields {unknown}")
    try:
        return RunConfig.from_json(json.dumps(data))
    except (TypeError, AttributeError) as e:
        raise ValueError(f"--config {path} is not a valid RunConfig ({e})") from None


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

    local = LocalConfig(model=cfg.llm_model) if cfg.llm_model else LocalConfig()
    if cfg.llm == "replay":
        path = a.replay_file or run.root / "llm_replay.json"
        inner = openai() if a.record_backend == "openai" else local
        conf: Any = ReplayConfig(path=path, mode="record" if a.record else "replay",
                                 record_backend=a.record_backend, record_config=inner if a.record else None)
    else:
        conf = local if cfg.llm == "local" else openai()
    return build(cfg.llm, conf, cache=cache, call_log=log), log


def _resume_config(a: argparse.Namespace, run: RunDir) -> RunConfig:
    if not run.config.exists():
        raise SystemExit(f"error: --resume needs {run.config}; start the run without --resume")
    cfg = RunConfig.from_json(run.config.read_text())
    if a.rounds is not None and a.rounds != cfg.rounds:
        cfg = dataclasses.replace(cfg, rounds=a.rounds)
        run.config.write_text(cfg.to_json())
    return cfg


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
            reporter.log(f"resuming round {snap.values.get('round', 0)} at {', '.join(snap.next)}")
            return app.invoke(None, conf, durability="sync")
    finally:
        if llm is not None:
            llm.close()


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    try:
        cfg = None if a.resume else make_config(a)
    except (KeyError, ValueError) as e:  # unknown preset/method/family ("did you mean"), bad values
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = a.out or Path("runs") / f"{a.preset}_{(cfg.method if cfg else a.method) or 'coda'}"
    run = RunDir(out)
    if a.resume:
        cfg = _resume_config(a, run)
    else:
        if run.trace.exists():
            print(f"error: {out} already holds a run; pass --resume to continue it or choose another --out",
                  file=sys.stderr)
            return 2
        run.root.mkdir(parents=True, exist_ok=True)
        run.config.write_text(cfg.to_json())
    assert cfg is not None
    from rich.console import Console

    from agents.graph.deps import QuietReporter
    from agents.graph.display import RichReporter, cost_table, summary_table

    console = Console()
    console.print(f"[bold]CoDA[/] {cfg.method} · preset {cfg.preset} · llm {cfg.llm} · {cfg.rounds} rounds · "
                  f"families {', '.join(cfg.families)} · budget {cfg.budget}/family/round → {run.root}")
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
