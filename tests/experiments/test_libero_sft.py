"""Our policy on real LIBERO: expert demonstrations → object-token features and action chunks → SFT → the
protocol's evaluator runs the checkpoint (a few steps of training: the plumbing, not the numbers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from experiments.liberopro import evaluate as liberopro
from experiments.liberopro import sft as libero_sft


@pytest.fixture(scope="module")
def one_demo():
    demos, refused = libero_sft.collect("libero_spatial", 1, 1, 0, log=lambda _: None)
    assert refused == []
    return demos


@pytest.mark.slow  # covered by `python -m experiments.liberopro.sft` (README: our policy on LIBERO)
def test_demonstrations_become_feature_and_chunk_tensors(one_demo):
    from coda_policy.object_token.features import OBJ_DIM, ROBOT_DIM

    # from LIBERO's own sample for seed 0, at least a millimetre from every start the protocol evaluates
    assert len(one_demo) == 1 and one_demo[0]["start_seed"] == 0 and one_demo[0]["eval_margin_m"] > 1e-3
    ep = one_demo[0]
    assert len(ep["features"]) == len(ep["actions"]) and ep["actions"].shape[1] == 7
    assert np.all(np.abs(ep["actions"]) <= 1.0)
    data = libero_sft.chunks(one_demo, chunk=8)
    n = len(ep["actions"])
    assert tuple(data["actions"].shape) == (n, 8, 7) and tuple(data["robot"].shape) == (n, ROBOT_DIM)
    assert data["objects"].shape[-1] == OBJ_DIM and bool(data["object_mask"][0].all())
    last = data["actions"][-1].numpy()
    assert np.allclose(last, ep["actions"][-1])  # a chunk past the end repeats the last action


@pytest.mark.slow  # covered by `experiments.liberopro.sft` then `experiments.liberopro --policy CHECKPOINT`
def test_a_trained_checkpoint_runs_under_the_protocol(one_demo, tmp_path: Path):
    path, speed = libero_sft.train(one_demo, steps=3, seed=0, out=tmp_path)
    assert path.is_file() and speed["chunks"] == len(one_demo[0]["actions"])
    task = liberopro.tasks("libero_spatial")[0]
    res = liberopro.run_task("libero_spatial", "none", task.name, episodes=1, policy=str(path), seed=0,
                             first_state=49)  # the file's last start: one episode, not the first
    assert task.n_init == 50
    assert res.skipped is None and res.episodes == 1 and len(res.steps) == 1
    assert res.successes == 1 or res.failed_phases[0] in ("grasp", "place")


def test_a_policy_that_is_neither_expert_nor_a_file_is_refused(capsys):
    from experiments.liberopro.__main__ import main

    with pytest.raises(SystemExit):
        main(["--suite", "libero_spatial", "--policy", "nowhere.pt"])
    assert "give 'expert' or a saved policy file" in capsys.readouterr().err
