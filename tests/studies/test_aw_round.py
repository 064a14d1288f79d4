"""`python -m studies.aw_round`: one advantage-weighted round in isolation — its small pure parts (which
scenes a round keeps, its config from the command line, the summary over seeds)."""

from __future__ import annotations

import numpy as np
import pytest

from coda_policy.shaping import SHAPING_MODES


def test_select_scenes_keeps_failures_and_some_solved() -> None:
    from studies.aw_round import select_scenes

    success = [True, False, True, True, False, True, False, True]
    kept = select_scenes(success, 0.5, np.random.default_rng(0))
    assert [i for i in kept if not success[i]] == [1, 4, 6]
    assert sum(success[i] for i in kept) == 2 and len(set(kept)) == len(kept)
    assert select_scenes([True, True], 0.5, np.random.default_rng(0)) in ([0], [1])  # at least one solved
    assert select_scenes([False, False], 0.5, np.random.default_rng(0)) == [0, 1]


def test_round_config_and_summary() -> None:
    from common.registry import UnknownNameError
    from studies.aw_round import config_from_args, summarise

    cfg = config_from_args(["--preset", "smoke", "--mode", "sparse,frozen_actor", "--seeds", "0,1",
                            "--awr-steps", "7", "--beta", "0.5"])
    assert cfg.modes == ("sparse", "frozen_actor") and cfg.seeds == (0, 1)
    assert cfg.awr.steps == 7 and cfg.shaping.beta == 0.5
    assert config_from_args(["--preset", "smoke", "--mode", "all"]).modes == SHAPING_MODES
    with pytest.raises(ValueError, match="unknown mode"):
        config_from_args(["--preset", "smoke", "--mode", "sparce"])
    with pytest.raises(UnknownNameError):
        config_from_args(["--preset", "smok"])
    per_seed = {0: {"before": 0.5, "before_other": 1.0,
                    "modes": {"sparse": {"after": 0.6, "after_other": 0.9},
                              "frozen_actor": {"after": 0.5, "after_other": 1.0}}},
                1: {"before": 0.7, "before_other": 0.8,
                    "modes": {"sparse": {"after": 0.6, "after_other": 0.7},
                              "frozen_actor": {"after": 0.8, "after_other": 1.0}}}}
    s = summarise(cfg, per_seed)
    assert s["before"]["mean"] == pytest.approx(0.6) and s["sparse"]["delta_mean"] == pytest.approx(0.0)
    assert s["frozen_actor"]["per_seed"] == [0.5, 0.8]
    assert s["before"]["other"]["mean"] == pytest.approx(0.9)
    assert s["sparse"]["other"]["mean"] == pytest.approx(0.8)
