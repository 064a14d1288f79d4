"""`studies.libero_approach` without LIBERO episodes: what it refuses, and which scenes it uses."""

from __future__ import annotations

import pytest

from studies import libero_approach, libero_loop_sft


def test_bad_arguments_are_clear_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        libero_approach.main(["--policy", str(tmp_path / "p.pt"), "--scenes", "0"])
    assert "--scenes and --workers must be >= 1" in capsys.readouterr().err
    assert libero_approach.main(["--policy", str(tmp_path / "p.pt")]) == 2
    assert "no policy file" in capsys.readouterr().err


def test_it_looks_at_the_same_development_scenes_as_the_sft_variants():
    assert libero_approach.DEV_SEED0 == libero_loop_sft.DEV_SEED0
