"""The batched-evaluation benchmark: its scenes are its own (the four families, in and out of distribution,
none a frozen suite's), and bad input is refused before any work. The comparison itself is `python -m
bench.eval_batch`; that a batch gives each episode the outcome it has alone is
tests/sim/test_batch_episodes.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import eval_batch


def test_its_scenes_are_its_own_in_and_out_of_distribution() -> None:
    got = eval_batch.scenes(2)
    assert [s.family for s in got] == [f for f in eval_batch.FAMILIES for _ in range(4)]
    assert len({s.seed for s in got}) == 16 and min(s.seed for s in got) >= eval_batch.SEED


@pytest.mark.parametrize("args", [["--per-split", "0"], ["--batch", "0"], ["--policy", "no.safetensors"]])
def test_bad_input_is_refused_before_any_work(args: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        eval_batch.main([*args, "--json", str(tmp_path / "out.json")])
    assert exit_.value.code == 2 and not (tmp_path / "out.json").exists()
    assert args[0] in capsys.readouterr().err
