"""studies.update_dev: every update it compares is a valid trainer configuration named against the
earlier weighted update, its table reads the records, and bad input is refused before any work. (Running it
trains and evaluates policies for minutes per update: its figures are in docs/results/findings/.)"""

from __future__ import annotations

import dataclasses

import pytest

from agents.config import WEIGHTED_UPDATE_BEFORE, LearnConfig
from studies import update_dev


def test_every_update_is_the_earlier_one_with_its_own_changes() -> None:
    assert update_dev.UPDATES["sft"][0] == "sft"
    before = dataclasses.replace(LearnConfig(), **WEIGHTED_UPDATE_BEFORE)
    assert update_dev.UPDATES["aw"][1] == before  # whatever LearnConfig's defaults are now
    tau3 = update_dev.UPDATES["aw_demo_sched_tau3"][1]
    assert (tau3.awr_tau, tau3.awr_demo_fraction, tau3.awr_schedule, tau3.awr_self_normalize) == \
        (3.0, 1.0, "cosine", True)
    defaults = LearnConfig()  # the chosen update is the default now (FINDINGS #11)
    assert {f: getattr(defaults, f) for f in WEIGHTED_UPDATE_BEFORE} == \
        {f: getattr(tau3, f) for f in WEIGHTED_UPDATE_BEFORE}


def _cell(update: str, ood: float) -> dict:
    fams = ("pick_place", "articulated")
    return {"update": update, "seed": 0, "rounds": 2, "budget": 6, "per_split": 10,
            "bootstrap_sha256": "ab" * 32, "code_commit": "c0ffee",
            "success": {f: {"id": 80.0, "ood": ood} for f in fams},
            "train": [{"w_ess": 0.5}, {"w_ess": 0.7}] if update != "sft" else [{}]}


def test_markdown_reads_the_records() -> None:
    md = update_dev.markdown([_cell("sft", 20.0), _cell("aw_demo_sched_tau3", 40.0)], "cmd")
    rows = [line for line in md.splitlines() if line.startswith("| `")]
    assert rows[0].startswith("| `sft` |") and "| 80.0 ± 0.0 | 20.0 ± 0.0 | – |" in rows[0]
    assert "| 80.0 ± 0.0 | 40.0 ± 0.0 | 0.60 |" in rows[1] and "abababababab" in md


@pytest.mark.parametrize("argv", [["--seeds", "0"], ["--per-split", "0"]])
def test_bad_input_is_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert update_dev.main(argv) == 2 and "at least 1" in capsys.readouterr().err


def test_an_unknown_update_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        update_dev.main(["--updates", "sft,nope"])
    assert e.value.code == 2 and "nope" in capsys.readouterr().err
