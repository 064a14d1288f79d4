"""The knob study: each cell is the core table's cell of one method with only one RunConfig knob changed;
the table's own cells can be reused for the table's value; the table pairs each value with the first by
seed; bad input is refused before any work. The measurement itself (a three-round loop per cell) is
`python -m studies.knob_dev`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from studies import knob_dev as study


def test_a_value_changes_only_its_knob_of_the_core_cell() -> None:
    lp, both = study.knob_config("coda", "allocation.score", "lp", 1), \
        study.knob_config("coda", "allocation.score", "lp+learnability", 1)
    assert lp.method == "coda" and lp.seed == 1 and lp.rounds == 3 and lp.allocation.score == "lp"
    assert both.allocation.score == "lp+learnability"
    assert dataclasses.replace(both, allocation=lp.allocation) == lp
    wide = study.knob_config("uniform", "variant_factors", "14", 0)
    assert wide.method == "uniform" and wide.variant_factors == 14
    assert dataclasses.replace(wide, variant_factors=3) == \
        study.knob_config("uniform", "variant_factors", "3", 0)
    assert study.knob_config("coda", "verify.at_ceiling", "without_context", 0).verify.at_ceiling == \
        "without_context"


@pytest.mark.parametrize("knob, value, message", [
    ("variant_factor", "3", "no field 'variant_factor' in RunConfig"),
    ("variant_factors", "three", "not a int"),
    ("variant_factors", "0", "variant_factors >= 1"),
    ("allocation.score", "regret", "regret"),
    ("learn.policy", "x", "not a number, flag or word")])
def test_a_knob_or_value_that_does_not_fit_is_refused(knob, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        study.knob_config("coda", knob, value, 0)


def test_the_table_s_own_cells_can_be_reused_for_its_value(tmp_path: Path) -> None:
    (tmp_path / "core" / "coda_seed2").mkdir(parents=True)
    assert study.table_value("coda", "allocation.score") == "lp"
    assert study.run_dir("coda", "allocation.score", "lp", 2, tmp_path / "out", tmp_path / "core") == \
        tmp_path / "core" / "coda_seed2"
    other = study.run_dir("coda", "allocation.score", "lp+learnability", 2, tmp_path / "out",
                          tmp_path / "core")
    assert other == tmp_path / "out" / "coda__allocation.score" / "lp_learnability_seed2"
    with pytest.raises(FileNotFoundError, match="no run coda_seed3 there"):
        study.run_dir("coda", "allocation.score", "lp", 3, tmp_path / "out", tmp_path / "core")


def test_the_table_pairs_each_value_with_the_reference_by_seed() -> None:
    def cell(value: str, seed: int, ood: float) -> dict:
        return {"method": "uniform", "knob": "variant_factors", "value": value, "reference": "3",
                "command": "cmd", "seed": seed, "id": {"a": 80.0, "b": 90.0},
                "ood": {"a": ood, "b": ood + 10}}

    md = study.markdown([cell("14", 0, 14), cell("14", 1, 22), cell("3", 0, 10), cell("3", 1, 20)])
    assert "**`uniform`, `variant_factors`**" in md and "Command: `cmd`" in md
    lines = md.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("| `"))
    assert lines[first] == "| `3` | 85.0 ± 0.0 | 20.0 ± 5.0 | – | – | [0, 1] |"  # the reference first
    assert lines[first + 1] == "| `14` | 85.0 ± 0.0 | 23.0 ± 4.0 | +3.0 ± 1.0 (2 seeds) | – | [0, 1] |"


def test_a_critic_s_verdicts_are_summed_over_its_rounds_and_seeds(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"round": 0}, {"round": 1, "critic": {"diagnoses": 8, "verdicts": {"validated": 2, "refuted": 3,
                                                                               "inconclusive": 3}}},
            {"round": 2, "critic": {"diagnoses": 6, "verdicts": {"validated": 1, "inconclusive": 5}}}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = study.run_verdicts(run)
    assert got == {"diagnoses": 14, "validated": 3, "refuted": 3, "inconclusive": 8}
    cell = {"method": "coda", "knob": "background", "value": "dr", "reference": "dr", "command": "cmd",
            "id": {"a": 80.0}, "ood": {"a": 10.0}}
    md = study.markdown([{**cell, "seed": 0, "verdicts": got}, {**cell, "seed": 1, "verdicts": got}])
    assert "| 6 / 6 / 16 / 28 | [0, 1] |" in md
    assert "| – | [0, 1] |" in study.markdown([{**cell, "seed": 0, "verdicts": got}, {**cell, "seed": 1}])


@pytest.mark.parametrize("argv, message", [
    (["--knob", "variant_factors=3"], "at least two values"),
    (["--knob", "variant_factors=3,x"], "not a int"),
    (["--knob", "variant_factors=3,6", "--per-split", "0"], "--per-split must be at least 1"),
    (["--knob", "variant_factors=3,6", "--reuse", "/nonexistent"], "no such folder")])
def test_bad_input_is_refused_before_any_work(argv, message, capsys) -> None:
    assert study.main(argv) == 2 and message in capsys.readouterr().err


def test_recorded_cells_of_different_methods_pair_by_seed(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    def record(method: str, knob: str, value: str, seed: int, ood: float) -> None:
        folder = tmp_path / "knob_dev" / f"{method}__{knob}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{value}_seed{seed}.json").write_text(json.dumps(
            {"method": method, "knob": knob, "value": value, "seed": seed, "ood": {"a": ood, "b": ood}}))

    for seed, (a, b) in enumerate([(24.0, 31.0), (23.0, 24.0), (30.0, 20.0)]):
        record("coda", "background", "dr", seed, a)
        record("uniform", "background", "dr", seed, b)
    args = ["--pair", "coda:background=dr,uniform:background=dr", "--results", str(tmp_path)]
    assert study.main(args) == 0
    page = (tmp_path / "knob_dev_pairs.md").read_text()
    row = "| `uniform:background=dr` | 0: 31.0, 1: 24.0, 2: 20.0 | +0.7 ± 5.0 (3 seeds) | [-20.7, +22.1] |"
    assert row in page
    assert study.main(args) == 0  # the same pair again replaces its section
    assert (tmp_path / "knob_dev_pairs.md").read_text().count("against the others") == 1
    missing = ["--pair", "coda:background=dr,uniform:background=seed", "--results", str(tmp_path)]
    assert study.main(missing) == 2
    assert "no record" in capsys.readouterr().err
