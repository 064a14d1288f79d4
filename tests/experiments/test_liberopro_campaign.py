"""`experiments.liberopro.campaign`: each run's steps in order, marked done from what exists on disk (the run
directory's metrics, the committed evaluation files), a killed bootstrap resumed rather than restarted, a
fork made by `agents.replay`; a failed step ends its run's steps and the campaign goes on to the next."""

from __future__ import annotations

import json

import pytest

from experiments.liberopro import campaign
from experiments.liberopro.run import evaluation_file


def _metrics(run, rounds):
    run.mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text("{}")
    (run / "metrics.jsonl").write_text("".join(json.dumps({"round": r}) + "\n" for r in rounds))


def test_a_new_run_has_every_step_to_do(tmp_path):
    item = campaign.Run("r", preset="libero_spatial")
    s = list(campaign.steps(item, tmp_path / "runs", tmp_path / "out", workers=2, commit=True))
    assert [x.done for x in s] == [False] * len(s)
    assert s[0].argv[:3] == ("agents.run", "--preset", "libero_spatial") and s[0].record == 0
    assert [x.what for x in s[1:]] == ["r: round(s) 0 under position, none",
                                       *(f"r: round {k}" for k in range(1, 6)),
                                       "r: round(s) 5 under position, none",
                                       "r: round(s) 0, 5 under instruction, task"]
    assert s[1].argv[-1] == "--commit" and [x.record for x in s[2:7]] == [1, 2, 3, 4, 5]


def test_steps_are_done_from_what_exists(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    _metrics(runs / "r", [0, 1])
    for p in ("position", "none"):
        path = evaluation_file(out / "r", 0, p, campaign.PROTOCOL)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    s = list(campaign.steps(campaign.Run("r", preset="libero_goal"), runs, out, workers=1, commit=False))
    assert [x.done for x in s] == [True, True, True, False, False, False, False, False, False]
    assert "--commit" not in s[1].argv


def test_a_killed_bootstrap_resumes_and_a_fork_is_made_by_replay(tmp_path):
    runs = tmp_path / "runs"
    _metrics(runs / "r", [])  # started, no round finished
    boot = next(campaign.steps(campaign.Run("r", preset="libero_goal"), runs, tmp_path, 2, False))
    assert boot.argv[:2] == ("agents.run", "--resume") and not boot.done
    fork = next(campaign.steps(campaign.Run("c", fork=("r", "sft"), at_zero=(), both=()), runs, tmp_path, 2,
                               False))
    assert fork.argv[:4] == ("agents.replay", str(runs / "r"), "--fork", str(campaign.FORK_STEP))
    assert fork.argv[fork.argv.index("--method"):][:2] == ("--method", "sft")


def test_a_failed_step_ends_its_run_not_the_campaign(tmp_path, monkeypatch, capsys):
    plan = (campaign.Evaluation("a", 0, ("none",)), campaign.Evaluation("b", 0, ("none",)))
    said = {"a": [("json.tool", str(tmp_path / "missing.json")), ("json.tool", "--help")],
            "b": [("json.tool", "--help")]}
    monkeypatch.setattr(campaign, "PLAN", plan)
    monkeypatch.setattr(campaign.os, "nice", lambda n: 0)
    never = lambda: False  # noqa: E731
    monkeypatch.setattr(campaign, "steps", lambda item, *a: (campaign.Step(f"{item.name} {k}", argv, never)
                                                            for k, argv in enumerate(said[item.name])))
    assert campaign.main(["--runs", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "# a 0:" in out and "# a 1:" not in out and "# b 0:" in out
    assert "a 0: failed" in err and "failed: a" in err


def test_an_unknown_run_is_refused():
    with pytest.raises(SystemExit) as end:
        campaign.main(["--only", "libero_nope", "--dry-run"])
    assert end.value.code == 2


def test_no_workers_is_refused(capsys):
    with pytest.raises(SystemExit) as end:
        campaign.main(["--workers", "0", "--dry-run"])
    assert end.value.code == 2
    assert "--workers must be >= 1" in capsys.readouterr().err


def test_a_step_waits_while_another_run_writes_the_directory(tmp_path):
    import fcntl
    import os
    import threading
    import time

    campaign.wait_free(tmp_path / "absent")  # nothing to wait for
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as agents.run holds it
    threading.Timer(0.3, os.close, (fd,)).start()
    t0 = time.perf_counter()
    campaign.wait_free(tmp_path)
    assert time.perf_counter() - t0 >= 0.25


def test_a_study_runs_once_its_output_is_missing(tmp_path):
    out = tmp_path / "audit.json"
    item = campaign.Study("r", "studies.libero_layout_audit", (), out)
    (step,) = campaign.steps(item, tmp_path / "runs", tmp_path, 2, True)
    run = str(tmp_path / "runs" / "r")
    assert step.argv == ("studies.libero_layout_audit", "--run", run, "--out", str(out))
    assert not step.done and step.output == out
    out.write_text("{}")
    assert step.done


def test_ctrl_c_stops_in_one_line_that_says_how_to_go_on(monkeypatch, capsys):
    def interrupted(item, a):
        raise KeyboardInterrupt

    monkeypatch.setattr(campaign.os, "nice", lambda n: 0)
    monkeypatch.setattr(campaign, "run_item", interrupted)
    assert campaign.main([]) == 130
    assert "rerun the same command to go on" in capsys.readouterr().err
