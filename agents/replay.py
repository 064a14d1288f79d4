"""Inspect a run from its checkpoints (runs/NAME/trace.sqlite), and replay or fork it.

    python -m agents.replay runs/NAME                      # every checkpoint: step, round, node, cost, next
    python -m agents.replay runs/NAME --show 12            # one step: its state, LLM calls, programs written
    python -m agents.replay runs/NAME --fork 24 --out runs/NAME_fork [--rounds N] [--run]

A fork copies the run directory, rolls memory (Chroma + ledger), metrics and every per-round file back to
the chosen round boundary (a `report` checkpoint), and makes that checkpoint the head of the copy's
thread; `--run` then replays the following rounds there (the same as `python -m agents.run --out COPY
--resume`). The original run is never touched.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from agents.config import RunConfig
from agents.graph.rundir import RunDir, read_metrics
from common.cli import UsageError, run_cli

PER_ROUND = ("programs", "scenes", "episodes", "validity", "diagnoses", "snapshots")


@contextmanager
def open_app(run: RunDir) -> Iterator[Any]:
    """The run's compiled graph over its checkpoints, for reading (no simulator or model is started)."""
    from agents.graph.build import build_graph, open_checkpointer
    from agents.graph.deps import Deps
    from agents.run import check_trace_db, read_config_file

    if not run.root.is_dir():
        raise UsageError(f"{run.root} is not a run directory")
    check_trace_db(run)
    try:
        cfg = read_config_file(run.config, "config.json")
    except ValueError as e:
        raise UsageError(str(e)) from None
    deps = Deps(config=cfg, run=run, sandbox=None, episodes=None, trainer=None)  # type: ignore[arg-type]
    with open_checkpointer(run.root) as saver:
        yield build_graph(deps).compile(checkpointer=saver)


def history(app: Any) -> list[Any]:
    """Every checkpoint of the run's thread, oldest first."""
    from agents.graph.build import thread_config

    return list(reversed(list(app.get_state_history(thread_config()))))


def _find(snaps: list[Any], key: str) -> tuple[Any, Any | None]:
    """(snapshot, its parent) by step number or checkpoint-id prefix."""
    for i, s in enumerate(snaps):
        cid = s.config["configurable"]["checkpoint_id"]
        if key == str(s.metadata.get("step")) or (len(key) > 4 and cid.startswith(key)):
            return s, snaps[i - 1] if i else None
    raise UsageError(f"no checkpoint {key!r}; list them with `python -m agents.replay RUN`")


def list_steps(app: Any, console: Any) -> None:
    from rich import box
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD, title="checkpoints (state after each node)")
    for col in ("step", "round", "node", "s", "llm", "steps", "next", "time", "checkpoint"):
        t.add_column(col, no_wrap=True)
    for s in history(app):
        v = s.values
        node = v.get("node") or s.metadata.get("source", "")
        cost = v.get("cost", {}).get(node, {})
        t.add_row(str(s.metadata.get("step")), str(v.get("round", "")), node, f"{cost.get('wall_s', 0):.1f}",
                  str(cost.get("llm_calls", "")), str(cost.get("sim_steps", "")), ",".join(s.next) or "END",
                  _time(s.created_at), s.config["configurable"]["checkpoint_id"][-12:])
    console.print(t)


def _time(iso: str | None) -> str:
    return datetime.fromisoformat(iso).strftime("%H:%M:%S") if iso else ""


def _llm_calls(run: RunDir, start: str | None, end: str | None) -> list[dict[str, Any]]:
    """Call-log rows written between two checkpoints."""
    if not run.llm_calls.exists() or end is None:
        return []
    t0 = datetime.fromisoformat(start).timestamp() if start else 0.0
    t1 = datetime.fromisoformat(end).timestamp()
    rows = [json.loads(line) for line in run.llm_calls.read_text().splitlines() if line.strip()]
    return [r for r in rows if t0 < r.get("time", 0) <= t1]


def show(app: Any, run: RunDir, key: str, console: Any) -> None:
    snap, parent = _find(history(app), key)
    v = snap.values
    console.rule(f"step {snap.metadata.get('step')} · round {v.get('round')} · node {v.get('node') or '-'} "
                 f"→ next {', '.join(snap.next) or 'END'}")
    console.print_json(json.dumps(v, default=str))
    calls = _llm_calls(run, parent.created_at if parent else None, snap.created_at)
    console.rule(f"{len(calls)} LLM calls by this node")
    for c in calls:
        status = "ok" if c.get("ok") else f"ERROR {c.get('error')}"
        console.print(f"{c['prompt_name']:<22} {c['backend']}/{c['model']} hash {c['prompt_hash']} "
                      f"tokens {c.get('tokens_in')}/{c.get('tokens_out')} {c['latency_s']} s "
                      f"{'cache hit ' if c.get('cache_hit') else ''}{status}")
    before = set(parent.values.get("programs", [])) if parent else set()
    new = [p for p in v.get("programs", []) if p not in before]
    console.rule(f"{len(new)} programs written by this node")
    for p in new:
        console.print(str(run.abs(p).with_suffix(".py")))


def _prune(copy: RunDir, round_no: int) -> None:
    """Remove the copy's files of rounds after `round` and restore memory as it was at that round's end."""
    for kind in PER_ROUND:
        for d in (copy.root / kind).glob("round_*"):
            if int(d.name.split("_")[1]) > round_no:
                shutil.rmtree(d)
    for kind in ("policy", "train"):
        for f in (copy.root / kind).glob("round_*"):
            if int(f.stem.split("_")[1]) > round_no:
                f.unlink()
    snap = copy.root / "snapshots" / f"round_{round_no:02d}" / "memory"
    if snap.exists():
        shutil.rmtree(copy.memory, ignore_errors=True)
        shutil.copytree(snap, copy.memory)
    rows = [r for r in read_metrics(copy.metrics) if r.get("round", 0) <= round_no]
    copy.metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))


def fork(app: Any, run: RunDir, key: str, out: Path, rounds: int | None, console: Any) -> RunDir:
    """Copy the run to `out` and make checkpoint `key` (a round boundary) the head of the copy."""
    snaps = history(app)
    snap, _ = _find(snaps, key)
    if snap.values.get("node") != "report":
        ok = [str(s.metadata.get("step")) for s in snaps if s.values.get("node") == "report"]
        raise UsageError(f"fork at a round boundary (a `report` checkpoint): steps {', '.join(ok)}")
    if out.exists():
        raise UsageError(f"{out} exists")
    shutil.copytree(run.root, out)
    copy = RunDir(out)
    r = int(snap.values.get("round", 0))
    _prune(copy, r)
    cfg = RunConfig.from_json(copy.config.read_text())
    if rounds is not None:
        cfg = RunConfig.from_json(json.dumps({**json.loads(cfg.to_json()), "rounds": rounds}))
        copy.config.write_text(cfg.to_json())
    with open_app(copy) as forked:
        forked.update_state(snap.config, {"rounds": cfg.rounds}, as_node="report")
        head = forked.get_state({"configurable": {"thread_id": snap.config["configurable"]["thread_id"]}})
    console.print(f"forked {run.root} at step {snap.metadata.get('step')} (end of round {r}) → {out}; "
                  f"next: {', '.join(head.next) or 'END'} (rounds {cfg.rounds})")
    return copy


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m agents.replay", description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", type=Path, help="run directory")
    p.add_argument("--show", metavar="STEP", help="show one checkpoint (step number or checkpoint id)")
    p.add_argument("--fork", metavar="STEP", help="fork at a round boundary into --out")
    p.add_argument("--out", type=Path, help="directory of the fork")
    p.add_argument("--rounds", type=int, help="rounds of the fork (default: the run's)")
    p.add_argument("--run", dest="replay", action="store_true", help="replay the fork's remaining rounds now")
    a = p.parse_args(argv)
    return run_cli(lambda: _main(a), log_dir=lambda: None)


def _main(a: argparse.Namespace) -> int:
    from rich.console import Console

    console, run = Console(), RunDir(a.run_dir)
    with open_app(run) as app:
        if a.show:
            show(app, run, a.show, console)
        elif a.fork:
            copy = fork(app, run, a.fork, a.out or Path(f"{run.root}_fork{a.fork}"), a.rounds, console)
        else:
            list_steps(app, console)
    if a.fork and a.replay:
        from agents.run import main as run_main

        return run_main(["--out", str(copy.root), "--resume"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
