"""bench.agents.llama_speed: the build's prompt and answer speed on the critic's recorded prompt (where the
embedded LLM is installed), and a one-line answer where it is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.agents import llama_speed


def test_the_recorded_prompt_is_the_hybrid_critics() -> None:
    assert "You are the critic" in (llama_speed.FIXTURES / "critic_hybrid_system.txt").read_text()
    assert "Candidates, best first" in (llama_speed.FIXTURES / "critic_hybrid_user.txt").read_text()


def test_speed_of_the_installed_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        code = llama_speed.main(["--label", "x", "--out", str(tmp_path / "s.json")])
        assert code == 2 and "setup.sh --llm" in capsys.readouterr().err
        return
    from agents.llm import LLMBackendError
    from agents.llm.gguf import MODELS, locate_parts

    try:
        locate_parts(MODELS["qwen2.5-coder-0.5b"])
    except LLMBackendError:
        pytest.skip("the 0.5B model's wheels are not installed")
    out = tmp_path / "s.json"
    args = ["--model", "qwen2.5-coder-0.5b", "--answer", "4", "--repeats", "1"]
    assert llama_speed.main(["--label", "x", *args, "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["label"] == "x" and 300 < got["prompt_tokens"] < 600 and "AVX" in got["system_info"]
    assert got["runs"][0]["prompt_tok_s"] > 0 and got["runs"][0]["answer_tok_s"] > 0
