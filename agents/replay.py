"""Inspect a run from its checkpoints (runs/NAME/trace.sqlite), and replay or fork it.

    python -m agents.replay runs/NAME                      # every checkpoint: step, round, node, cost, next
    python -m agents.replay runs/NAME --show 12 [--full]    # one step: what changed, LLM prompts and answers
    python -m agents.replay runs/NAME --fork 24 --out runs/NAME_fork [--rounds N] [--method M] [--llm L]
                            [--set FIELD=VALUE ...] [--run]

A fork copies the run directory, rolls memory (Chroma + ledger), metrics and every per-round file back to
the chosen round boundary (a `report` checkpoint), and makes that checkpoint the head of the copy's
thread; `--run` then replays the following rounds there (the same as `python -m agents.run --out COPY
--resume`). The original run is never touched. Everything here reads the copy's own branch (`history`),
not the parent's checkpoints after the fork point, which its trace keeps.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from agents.config import RunConfig
from agents.graph.rundir import RunDir, read_metrics
from common.cli import UsageError, command_parser, run_cli
from common.cli import console as cli_console

PER_ROUND = ("programs", "scenes", "episodes", "validity", "diagnoses", "snapshots")


@contextmanager
def open_app(run: RunDir) -> Iterator[Any]:
    """The run's compiled graph over its checkpoints, for reading (no simulator or model is started)."""
    from agents.graph.build import build_graph, open_checkpointer
    from agents.graph.deps import Deps
    from agents.run_checks import check_trace_db, read_config_file

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
    """The checkpoints the run's head descends from, oldest first. Not every checkpoint of the thread: a
    fork's copy still holds its parent's checkpoints after the fork point (the branch it left), whose
    round numbers and steps repeat the fork's own and whose files the fork has replaced."""
    from agents.graph.build import thread_config

    snaps = list(app.get_state_history(thread_config()))  # every branch, newest first: [0] is the head
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in snaps}
    line, snap = [], snaps[0] if snaps else None
    while snap is not None:
        line.append(snap)
        parent = snap.parent_config
        snap = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
    return line[::-1]


def node_states(app: Any, node: str) -> dict[int, dict[str, Any]]:
    """round → the graph state `node` of that round was given (the first checkpoint before it on the run's
    line), for every round that reached it."""
    states: dict[int, dict[str, Any]] = {}
    for snap in history(app):
        if snap.next == (node,) and "round" in snap.values:
            states.setdefault(snap.values["round"], dict(snap.values))
    return states


def node_inputs(run: Path, round_no: int, node: str = "train") -> tuple[RunConfig, dict[str, Any]]:
    """(the run's config, the graph state `node` of round `round_no` was given), from the checkpoints:
    what a diagnostic needs to redo that step of a finished run."""
    from agents.run_checks import read_config_file

    rd = RunDir(run)
    with open_app(rd) as app:
        state = node_states(app, node).get(round_no)
    if state is None:
        raise ValueError(f"{run}: no checkpoint before round {round_no}'s {node} node (did the run reach "
                         "it?)")
    return read_config_file(rd.config, "config.json"), state


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


def state_diff(before: dict[str, Any], after: dict[str, Any], limit: int = 6) -> list[str]:
    """What a node changed in the state, one line per key: scalars old → new, lists by the items added
    and removed (at most `limit` shown), dicts by the keys added, removed or changed."""
    def short(x: Any, n: int = 90) -> str:
        text = json.dumps(x, default=str)
        return text if len(text) <= n else text[: n - 1] + "…"

    lines = []
    for k in sorted(set(before) | set(after)):
        old, new = before.get(k), after.get(k)
        if old == new:
            continue
        if isinstance(old, list) and isinstance(new, list):
            seen = [json.dumps(x, sort_keys=True, default=str) for x in old]
            now = [json.dumps(x, sort_keys=True, default=str) for x in new]
            added = [x for x, j in zip(new, now, strict=True) if j not in seen]
            removed = [x for x, j in zip(old, seen, strict=True) if j not in now]
            parts = [f"+{len(added)}"] + ([f"-{len(removed)}"] if removed else [])
            shown = "; ".join(short(x, 70) for x in added[:limit]) + (" …" if len(added) > limit else "")
            head = f"{k}: {len(old)} → {len(new)} items ({' '.join(parts)})"
            lines.append(head + (f": {shown}" if shown else ""))
        elif isinstance(old, dict) and isinstance(new, dict):
            changed = sorted(x for x in set(old) | set(new) if old.get(x) != new.get(x))
            more = " …" if len(changed) > limit else ""
            lines.append(f"{k}: keys changed {', '.join(changed[:limit])}{more}")
        else:
            lines.append(f"{k}: {short(old)} → {short(new)}")
    return lines


def show(app: Any, run: RunDir, key: str, console: Any, full: bool = False, chars: int = 1200) -> None:
    """One step: what its node changed in the state (the whole state with `full`), the LLM calls it made
    with their prompts and answers, the programs it wrote and the verdicts it gave."""
    from agents.llm.store import CallLog

    snap, parent = _find(history(app), key)
    v = snap.values
    console.rule(f"step {snap.metadata.get('step')} · round {v.get('round')} · node {v.get('node') or '-'} "
                 f"→ next {', '.join(snap.next) or 'END'}")
    if full:
        console.print_json(json.dumps(v, default=str))
    else:
        changes = state_diff(parent.values if parent else {}, v)
        console.print("\n".join(changes) or "(no state change)", markup=False, highlight=False)
        console.print("[dim](--full prints the whole state)[/]")
    calls = _llm_calls(run, parent.created_at if parent else None, snap.created_at)
    console.rule(f"{len(calls)} LLM calls by this node")
    log = CallLog(run.llm_calls)
    for c in calls:
        status = "ok" if c.get("ok") else f"ERROR {c.get('error')}"
        console.print(f"{c['prompt_name']:<22} {c['backend']}/{c['model']} hash {c['prompt_hash']} "
                      f"tokens {c.get('tokens_in')}/{c.get('tokens_out')} {c['latency_s']} s "
                      f"{'cache hit ' if c.get('cache_hit') else ''}{status}", markup=False, highlight=False)
        for what, sha in c.get("texts", {}).items():
            text = log.text(sha)
            if text is None:
                console.print(f"  {what}: (not stored: {run.llm_calls.parent / 'llm_texts' / sha}.txt)")
                continue
            cut = text if full or len(text) <= chars else text[:chars] + f"\n… ({len(text)} chars; --full)"
            console.print(f"  [bold]{what}[/] ({sha}):")
            console.print("    " + cut.replace("\n", "\n    "), markup=False, highlight=False)
    before = set(parent.values.get("programs", [])) if parent else set()
    new = [p for p in v.get("programs", []) if p not in before]
    console.rule(f"{len(new)} programs written by this node")
    for p in new:
        console.print(str(run.abs(p).with_suffix(".py")))
    _verdicts(run, parent.values if parent else {}, v, console)


def _verdicts(run: RunDir, before: dict[str, Any], after: dict[str, Any], console: Any) -> None:
    """Verdicts on the step's diagnoses that this node gave (the `verify` node)."""
    from agents.graph.rundir import read_json

    if after.get("node") != "verify":
        return
    console.rule("verdicts")
    for rel in after.get("diagnoses", []):
        rec = read_json(run.abs(rel))
        dx, vd = rec.get("diagnosis", {}), rec.get("verdict") or {}
        console.print(f"{rec.get('family')}: {dx.get('factor')} in {dx.get('phase')} → {vd.get('status')} "
                      f"({vd.get('reason', '')})  {rel}", markup=False, highlight=False)


def _prune(copy: RunDir, round_no: int) -> None:
    """Remove the copy's files of rounds after `round` and restore memory as it was at that round's end."""
    for kind in PER_ROUND:
        for d in (copy.root / kind).glob("round_*"):
            if int(d.name.split("_")[1]) > round_no:
                shutil.rmtree(d)
    for kind in ("policy", "train"):
        for f in (copy.root / kind).glob("round_*"):  # round_02.safetensors, round_02.weights.npz, ...
            if int(f.name.split("_")[1].split(".")[0]) > round_no:
                f.unlink()
    snap = copy.root / "snapshots" / f"round_{round_no:02d}" / "memory"
    if snap.exists():
        shutil.rmtree(copy.memory, ignore_errors=True)
        shutil.copytree(snap, copy.memory)
    rows = [r for r in read_metrics(copy.metrics) if r.get("round", 0) <= round_no]
    copy.metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))


def overridden(cfg: RunConfig, sets: Sequence[str]) -> tuple[RunConfig, list[str]]:
    """`cfg` with `FIELD=VALUE` overrides (dots reach nested fields: `learn.awr_steps=100`; VALUE is JSON,
    or a plain string), checked like any config; and the changes as "field: old → new" lines."""
    data = json.loads(cfg.to_json())
    changes = []
    for item in sets:
        name, eq, raw = item.partition("=")
        if not eq or not name:
            raise UsageError(f"--set takes FIELD=VALUE, got {item!r}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        *path, last = name.split(".")
        node = data
        for part in path:
            if not isinstance(node.get(part), dict):
                raise UsageError(f"--set {item!r}: {part!r} is not a group of RunConfig fields")
            node = node[part]
        if last not in node:
            known = ", ".join(sorted(node))
            raise UsageError(f"--set {item!r}: no field {last!r} (fields here: {known})")
        changes.append(f"{name}: {json.dumps(node[last])} → {json.dumps(value)}")
        node[last] = value
    try:
        new = RunConfig.from_json(json.dumps(data))
    except (TypeError, ValueError, KeyError) as e:
        raise UsageError(f"the overrides make an invalid config: {e}") from None
    return new, changes


def fork(app: Any, run: RunDir, key: str, out: Path, rounds: int | None, console: Any,
         sets: Sequence[str] = ()) -> RunDir:
    """Copy the run to `out` and make checkpoint `key` (a round boundary) the head of the copy, with the
    config overrides `sets` (and `rounds`); says exactly what a resume of the copy will run."""
    snaps = history(app)
    snap, _ = _find(snaps, key)
    if snap.values.get("node") != "report":
        ok = [str(s.metadata.get("step")) for s in snaps if s.values.get("node") == "report"]
        raise UsageError(f"fork at a round boundary (a `report` checkpoint): steps {', '.join(ok)}")
    if out.exists():
        raise UsageError(f"{out} exists")
    r = int(snap.values.get("round", 0))
    cfg, changes = overridden(RunConfig.from_json(run.config.read_text()),
                              [*sets, *([f"rounds={rounds}"] if rounds is not None else [])])
    if cfg.rounds <= r:
        raise UsageError(f"the fork starts after round {r}: it needs rounds > {r} (it has {cfg.rounds}); "
                         f"pass --rounds N")
    shutil.copytree(run.root, out)
    copy = RunDir(out)
    _prune(copy, r)
    copy.config.write_text(cfg.to_json())
    with open_app(copy) as forked:
        forked.update_state(snap.config, {"rounds": cfg.rounds}, as_node="report")
        head = forked.get_state({"configurable": {"thread_id": snap.config["configurable"]["thread_id"]}})
    console.print(f"forked {run.root} at step {snap.metadata.get('step')} (end of round {r}) → {out}",
                  markup=False, highlight=False)
    console.print("config changes: " + ("; ".join(changes) if changes else "none"), markup=False,
                  highlight=False)
    console.print(f"a resume runs rounds {r + 1}–{cfg.rounds} (method {cfg.method}, llm {cfg.llm}), starting "
                  f"at {', '.join(head.next) or 'END'}: python -m agents.run --out {out} --resume",
                  markup=False, highlight=False)
    return copy


def main(argv: list[str] | None = None) -> int:
    p = command_parser("agents.replay", __doc__)
    p.add_argument("run_dir", type=Path, help="run directory")
    p.add_argument("--show", metavar="STEP", help="show one checkpoint (step number or checkpoint id)")
    p.add_argument("--fork", metavar="STEP", help="fork at a round boundary into --out")
    p.add_argument("--out", type=Path, help="directory of the fork")
    p.add_argument("--full", action="store_true", help="with --show: the whole state and every text uncut")
    p.add_argument("--rounds", type=int, help="rounds of the fork (default: the run's)")
    p.add_argument("--method", help="with --fork: run the fork's rounds with another method")
    p.add_argument("--llm", help="with --fork: another LLM backend for the fork's rounds")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="FIELD=VALUE",
                   help="with --fork: override any RunConfig field (dots for nested: learn.awr_steps=100); "
                        "repeatable")
    p.add_argument("--run", dest="replay", action="store_true", help="replay the fork's remaining rounds now")
    a = p.parse_args(argv)
    return run_cli(lambda: _main(a), log_dir=lambda: None)


def _main(a: argparse.Namespace) -> int:

    console, run = cli_console(), RunDir(a.run_dir)
    with open_app(run) as app:
        if a.show:
            show(app, run, a.show, console, full=a.full)
        elif a.fork:
            sets = ([f"method={a.method}"] if a.method else []) + ([f"llm={a.llm}"] if a.llm else []) + a.sets
            copy = fork(app, run, a.fork, a.out or Path(f"{run.root}_fork{a.fork}"), a.rounds, console, sets)
        else:
            list_steps(app, console)
    if a.fork and a.replay:
        from agents.run import main as run_main

        return run_main(["--out", str(copy.root), "--resume"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
