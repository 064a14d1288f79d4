"""`python -m agents.run --config FILE` (how experiments.table starts its cells): a RunConfig JSON is the
run's configuration, flags still override it, and a missing or malformed file is a one-line error."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agents.config import get_preset
from agents.run import main, make_config, parse_args


def test_a_config_file_is_the_run_config_and_flags_override_it(tmp_path: Path):
    cfg = dataclasses.replace(get_preset("smoke"), budget=3, eval_ood=0, seed=4)
    path = tmp_path / "c.json"
    path.write_text(cfg.to_json())
    assert make_config(parse_args(["--config", str(path)])) == cfg
    assert make_config(parse_args(["--config", str(path), "--seed", "7"])).seed == 7


@pytest.mark.parametrize("content", [None, "[1, 2, 3]", "{not json", "{\"budgett\": 3}"])
def test_a_bad_config_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], content):
    path = tmp_path / "c.json"
    if content is not None:
        path.write_text(content)
    assert main(["--config", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--config" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_workers_beyond_the_machine_are_refused_in_one_line_before_anything_is_written(tmp_path, capsys):
    """`--workers 100000` used to spawn workers until the machine stalled; now the executor's preflight
    refuses it (exit 2, one line) before the run directory exists."""
    out = tmp_path / "run"
    assert main(["--preset", "smoke", "--workers", "100000", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --workers 100000: this machine runs at most"), err
    assert not out.exists()


def test_the_llm_writes_and_the_rules_critic_decides_unless_asked() -> None:
    """With a model, the writers are the LLM's; the critic's decision is the rules critic's unless
    `llm_critic` (`--llm-critic`; the table's LLM rows set it) — and a config.json written before the field
    existed keeps the LLM critic it ran with."""
    import dataclasses
    import json

    from agents.config import PRESETS, RunConfig
    from agents.run import make_config, parse_args
    from experiments.table import cells, presets

    demo = PRESETS.get("demo")
    assert demo.llm == "local" and not demo.llm_critic and demo.critic_kind == "rules"
    assert dataclasses.replace(demo, llm_critic=True).critic_kind == "llm"
    assert dataclasses.replace(demo, llm="rules", llm_critic=True).critic_kind == "rules"
    assert make_config(parse_args(["--preset", "demo", "--llm-critic"])).critic_kind == "llm"
    assert make_config(parse_args(["--preset", "demo"])).critic_kind == "rules"
    older = json.loads(demo.to_json())
    del older["llm_critic"]
    assert RunConfig.from_json(json.dumps(older)).critic_kind == "llm"
    row = cells.cell_config(presets.TABLES.get("core"), "coda", 2, "local", 1)
    assert row.llm == "local" and row.critic_kind == "llm"
