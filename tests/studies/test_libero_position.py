"""`studies.libero_position` without LIBERO episodes: what it refuses, the clear error for a directory that is
not a run, and where the added demonstrations go in the round's update."""

from __future__ import annotations

from pathlib import Path

import pytest

from studies import libero_position


@pytest.mark.parametrize("args", [["--demos", "0"], ["--steps", "60,0"], ["--per-task", "0"],
                                  ["--round", "0"]])
def test_bad_arguments_are_clear_errors(tmp_path, capsys, args):
    with pytest.raises(SystemExit):
        libero_position.main(["--run", str(tmp_path), "--out", str(tmp_path / "o"), *args])
    assert "must be >= 1" in capsys.readouterr().err


def test_a_directory_that_is_not_a_run(tmp_path, capsys):
    assert libero_position.main(["--run", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "is not a run directory" in capsys.readouterr().err


def test_the_new_demonstrations_join_the_seed_programs_group_as_a_rounds_own_do():
    seed, other = "seed-program", "compiled-program"
    old = [(other, [Path("r1.npz")]), (seed, [Path("d1.npz"), Path("d2.npz")])]
    new = [Path("s1.npz"), Path("s2.npz")]
    got = libero_position.with_swaps(old, seed, new, share=0.0, replayed=2)
    assert got == [(other, [Path("r1.npz")]), (seed, [Path("d1.npz"), Path("d2.npz"), *new])]
    assert old[1][1] == [Path("d1.npz"), Path("d2.npz")]  # the run's groups are not changed in place
    # at a round share of one half beside 6 replayed, each of 2 new demonstrations goes in 3 times
    assert libero_position.with_swaps(old, seed, new, share=0.5, replayed=6)[1][1][2:] == new * 3
    # a round whose slots all had compiled programs: the seed program's group is made
    assert libero_position.with_swaps(old[:1], seed, new, share=0.0, replayed=2)[1] == (seed, new)
