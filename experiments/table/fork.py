"""A table that extends another with more rounds (`TablePreset.extends`): its cells start as forks of that
table's finished cells after their last round, so the shared rounds are computed once."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from agents.config import PRESETS, RunConfig
from experiments.table.presets import TABLES, TablePreset
from experiments.table.record import FORK_NOTE, metrics_rows


def _without_model_budgets(cfg: RunConfig) -> RunConfig:
    """`cfg` with the LLM answers' token budgets at their defaults when no LLM is asked (`llm` "rules"):
    they cannot change such a run, and a budget raised since a cell ran must not make it a different cell."""
    from agents.config import CriticConfig, WriterConfig

    if cfg.llm != "rules":
        return cfg
    tokens = {f.name: f.default for f in dataclasses.fields(WriterConfig) if f.name.startswith("max_tokens")}
    return dataclasses.replace(cfg, writer=dataclasses.replace(cfg.writer, **tokens),
                               critic=dataclasses.replace(cfg.critic, max_tokens=CriticConfig.max_tokens))


def extended_cell(preset: TablePreset, cfg: RunConfig, run: Path, base_run: Path, log: Any) -> bool:
    """Start the cell `run` of a table that extends another (`TablePreset.extends`: the same cells with more
    rounds) as a fork of `base_run`, that table's cell, at its last round (`agents.replay.fork`) — when the
    base run finished and its config is this cell's but for the rounds. False (and a log line) otherwise: the
    cell then runs from its bootstrap like any other."""
    from rich.console import Console

    from agents.graph.rundir import RunDir
    from agents.replay import fork, history, open_app

    base = TABLES.get(preset.extends)
    rounds = base.overrides.get("rounds", PRESETS.get(base.run_preset).rounds)
    if not (base_run / "config.json").is_file() or len(metrics_rows(base_run)) < rounds + 1:
        log(f"{run.name}: no finished cell of `{preset.extends}` in {base_run}; it runs from the bootstrap")
        return False
    have = RunConfig.from_json((base_run / "config.json").read_text())
    if _without_model_budgets(dataclasses.replace(have, rounds=cfg.rounds, workers=cfg.workers)) != \
            _without_model_budgets(cfg):
        log(f"{run.name}: {base_run} was run with another config; running it from the bootstrap")
        return False
    with open_app(RunDir(base_run)) as app:
        last = [s for s in history(app) if s.values.get("node") == "report"][-1]
        fork(app, RunDir(base_run), str(last.metadata.get("step")), run, cfg.rounds, Console(quiet=True))
    (run / "config.json").write_text(cfg.to_json())
    (run / FORK_NOTE).write_text(json.dumps({"run": str(base_run), "after_round": have.rounds}) + "\n")
    log(f"{run.name}: forked from {base_run} after round {have.rounds}")
    return True
