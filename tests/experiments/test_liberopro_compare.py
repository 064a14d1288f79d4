"""`experiments.liberopro.compare`: two evaluations of one suite, the difference and its intervals over
episodes and over tasks, the verdict on a target, and clear refusals of files that do not compare."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from experiments.liberopro import compare as cmp


def _file(path: Path, successes: list[int], suite: str = "libero_object_swap", n: int = 50) -> Path:
    tasks = [{"name": f"task_{i}", "episodes": n, "successes": s, "skipped": None}
             for i, s in enumerate(successes)]
    path.write_text(json.dumps({"suite": suite, "episodes_per_task": n, "tasks_run": tasks}))
    return path


def test_the_difference_and_both_intervals_are_computed_from_the_per_task_counts(tmp_path: Path) -> None:
    before, after = [20, 0, 2, 0, 0, 23, 29, 21, 0, 0], [25, 14, 17, 23, 8, 16, 27, 23, 15, 6]
    base, other = _file(tmp_path / "a.json", before), _file(tmp_path / "b.json", after)  # 95 and 174 of 500
    r = cmp.compare(cmp.read(base), cmp.read(other))
    assert (r["base_successes"], r["other_successes"], r["episodes"]) == (95, 174, 500)
    assert r["diff_pp"] == pytest.approx(15.8)
    se = 100 * math.sqrt(0.19 * 0.81 / 500 + 0.348 * 0.652 / 500)
    assert r["over_episodes"]["se_pp"] == pytest.approx(se, abs=0.01)
    assert r["over_episodes"]["interval_pp"] == pytest.approx([15.8 - 1.96 * se, 15.8 + 1.96 * se], abs=0.02)
    d = [2 * (o - b) for b, o in zip(before, after, strict=True)]
    mean = sum(d) / 10
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 9)
    assert r["over_tasks"]["se_pp"] == pytest.approx(sd / math.sqrt(10), abs=0.01)
    lo, hi = r["over_tasks"]["interval_pp"]
    assert (hi - lo) / 2 == pytest.approx(2.262 * sd / math.sqrt(10), abs=0.02)
    # FINDINGS #58's figures: ± 2.8 [+10.4, +21.2] over episodes, ± 5.7 [+2.9, +28.7] over tasks
    text = cmp.markdown(r, ("bootstrap", "oracle"), 20)
    assert "+15.8 pp: ± 2.8 over episodes (95 % interval [+10.4, +21.2]), ± 5.7 over the 10 tasks" in text
    assert "(t interval [+2.9, +28.7])" in text and "At least +20 pp: not shown." in text
    assert "| task_1 | 0 | 14 | +14 |" in text and "| task_5 | 23 | 16 | −7 |" in text


def test_the_verdict_needs_both_intervals_on_one_side_of_the_target(tmp_path: Path) -> None:
    base = cmp.read(_file(tmp_path / "a.json", [10] * 10))
    far = cmp.compare(base, cmp.read(_file(tmp_path / "b.json", [30, 31, 29, 30, 32, 28, 30, 31, 29, 30])))
    assert cmp.verdict(far, 20) == "shown" and cmp.verdict(far, 60) == "measured not to hold"
    near = cmp.compare(base, cmp.read(_file(tmp_path / "c.json", [10, 30, 12, 25, 9, 14, 11, 20, 10, 12])))
    assert cmp.verdict(near, 20) == "not shown"  # the task interval holds +20, the episode one does not
    assert cmp.verdict(near, -5) == "shown"


def test_files_that_do_not_compare_are_refused_with_the_reason(tmp_path: Path, capsys) -> None:
    a = _file(tmp_path / "a.json", [10] * 10)
    b = _file(tmp_path / "b.json", [10] * 10, suite="libero_object_lan")
    assert cmp.main([str(a), str(b)]) == 2
    assert "differ in suite: libero_object_swap against libero_object_lan" in capsys.readouterr().err
    c = _file(tmp_path / "c.json", [10] * 9)
    assert cmp.main([str(a), str(c)]) == 2
    assert "different tasks: only in the first ['task_9']" in capsys.readouterr().err
    (tmp_path / "unfinished.json").write_text(json.dumps({"suite": "libero_object_swap"}))
    assert cmp.main([str(a), str(tmp_path / "unfinished.json")]) == 2
    assert "not a finished LIBERO-Pro evaluation" in capsys.readouterr().err
    assert cmp.main([str(a), str(tmp_path / "gone.json")]) == 2
    assert "gone.json: no such file" in capsys.readouterr().err


def test_the_comparison_is_written_as_json_beside_the_printed_table(tmp_path: Path, capsys) -> None:
    a, b = _file(tmp_path / "a.json", [10] * 10), _file(tmp_path / "b.json", [12] * 10)
    out = tmp_path / "cmp" / "c.json"
    assert cmp.main([str(a), str(b), "--names", "x,y", "--at-least", "-5", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["names"] == ["x", "y"] and got["verdict"] == "shown" and got["diff_pp"] == pytest.approx(4.0)
    assert "**libero_object_swap, 50 episodes per task: y against x**" in capsys.readouterr().out
