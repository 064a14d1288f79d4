"""`bench.agents.demo_summary` on a committed demo record: counts from its files, a missing run refused."""

from __future__ import annotations

from pathlib import Path

from bench.agents import demo_summary

SEED2 = Path(__file__).resolve().parents[2] / "docs/results/demo/seeds_c3d0bed/seed2"


def test_a_demo_record_is_summarised_from_its_files(capsys, tmp_path: Path) -> None:
    s = demo_summary.summary(SEED2)
    assert s["validated"] >= 1 and s["pairs"] == s["pairs_llm_training"] == 1
    assert 0 < s["llm_s"] < s["nodes_s"]
    assert demo_summary.main([str(tmp_path)]) == 2 and "no metrics.jsonl" in capsys.readouterr().err
