"""`python -m studies.libero_speed` (the speed comparison of docs/libero.md): our side of the comparison runs
on the shared action sequence, and bad sizes are refused."""

from __future__ import annotations

import numpy as np
import pytest

from studies import libero_speed


def test_our_backend_steps_the_shared_actions() -> None:
    acts = libero_speed.actions(5)
    assert acts.shape == (5, 7) and np.all(acts[:, 6] == -1.0)  # gripper open throughout
    reset, run, close = libero_speed.ours(steps=5, size=32, cameras=False)
    reset()
    run()
    close()


def test_bad_sizes_are_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        libero_speed.main(["--steps", "0"])
    assert "must be >= 1" in capsys.readouterr().err
