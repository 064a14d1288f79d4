"""Table 1's paired power analysis on synthetic cells (`experiments.table.table_power`)."""

from __future__ import annotations

import json

import pytest

from experiments.table.table_power import load_cells, main, paired


def _cell(tmp_path, method: str, seed: int, ood: float) -> None:
    fams = ("pick_place", "articulated", "put_inside", "stack_insert")
    (tmp_path / f"{method}_seed{seed}.json").write_text(
        json.dumps({"method": method, "seed": seed, "ood": dict.fromkeys(fams, ood)}))


def test_paired_differences_interval_and_seeds_needed(tmp_path):
    for seed, (c, s) in enumerate([(20.0, 10.0), (15.0, 10.0), (10.0, 10.0)]):
        _cell(tmp_path, "coda", seed, c)
        _cell(tmp_path, "scalar", seed, s)
    r = paired(load_cells(tmp_path), "scalar", margin=5.0, per_split=10)
    assert r["diffs"] == [10.0, 5.0, 0.0] and r["mean"] == 5.0
    assert r["se"] == pytest.approx(5 / 3**0.5, abs=0.01)  # sd 5 over 3 seeds
    assert r["ci95"] == [pytest.approx(5 - 4.30 * 2.887, abs=0.1), pytest.approx(5 + 4.30 * 2.887, abs=0.1)]
    assert r["seeds_for_margin"] == 8  # ((1.96 + 0.84) * 5 / 5)^2 = 7.84
    assert r["binomial_se"] == pytest.approx(100 * (0.1 * 0.9 / 40) ** 0.5, abs=0.01)
    assert paired(load_cells(tmp_path), "uniform") is None  # no cells: no row


def test_no_coda_cells_is_a_clear_error(tmp_path, capsys):
    _cell(tmp_path, "scalar", 0, 10.0)
    with pytest.raises(SystemExit):
        main(["--cells", str(tmp_path)])
    assert "no coda cells" in capsys.readouterr().err


def test_a_table_whose_rows_average_different_seeds_says_so():
    from experiments.table.stats import uneven_seeds

    assert uneven_seeds({"methods": {"sft": {"seeds": [0, 1, 2]}, "coda": {"seeds": [0, 1, 2]}}}) == []
    (line,) = uneven_seeds({"methods": {"sft": {"seeds": [0, 1, 2]}, "coda": {"seeds": [0, 1, 2, 3]}}})
    assert "coda [0, 1, 2, 3]" in line and "table_power" in line


def test_another_base_row_is_paired_against_every_other_row(tmp_path, capsys):
    for seed, (c, v, s) in enumerate([(20.0, 25.0, 10.0), (15.0, 15.0, 10.0)]):
        _cell(tmp_path, "coda", seed, c)
        _cell(tmp_path, "coda_no_seed_arm", seed, v)
        _cell(tmp_path, "scalar", seed, s)
    assert main(["--cells", str(tmp_path), "--base", "coda_no_seed_arm"]) == 0
    out = capsys.readouterr().out
    assert "| `coda_no_seed_arm` − method |" in out
    assert "| scalar | +15.0, +5.0 |" in out and "| coda | +5.0, +0.0 |" in out
    main(["--cells", str(tmp_path)])  # CoDA's table now lists the variant as a row too
    assert "| coda_no_seed_arm | -5.0, +0.0 |" in capsys.readouterr().out


def test_rows_of_tables_that_share_bootstraps_pair_and_a_foreign_bootstrap_is_refused(tmp_path, capsys):
    t1, ab = tmp_path / "table1", tmp_path / "ablations"
    t1.mkdir(), ab.mkdir()
    for seed in (0, 1):
        for folder, method, ood in ((t1, "coda", 10.0), (t1, "uniform", 20.0), (ab, "coda_unit", 15.0)):
            _cell(folder, method, seed, ood + seed)
            cell = json.loads((folder / f"{method}_seed{seed}.json").read_text())
            cell.update(bootstrap_sha256=f"boot{seed}", bootstrap_shared=True)
            (folder / f"{method}_seed{seed}.json").write_text(json.dumps(cell))
    assert main(["--cells", f"{t1},{ab}", "--base", "uniform"]) == 0
    out = capsys.readouterr().out
    assert "| coda_unit | +5.0, +5.0 |" in out and f"--cells {t1},{ab}" in out
    cell = json.loads((ab / "coda_unit_seed1.json").read_text())
    (ab / "coda_unit_seed1.json").write_text(json.dumps({**cell, "bootstrap_sha256": "other"}))
    with pytest.raises(SystemExit):
        main(["--cells", f"{t1},{ab}", "--base", "uniform"])
    assert "different bootstrap policies" in capsys.readouterr().err


def test_cells_pair_after_an_earlier_round_of_their_curves(tmp_path, capsys):
    fams = ("pick_place", "articulated", "put_inside", "stack_insert")
    for seed, (c2, c3, u2, u3) in enumerate([(10.0, 20.0, 15.0, 15.0), (5.0, 15.0, 10.0, 5.0)]):
        for method, r2, r3 in (("coda", c2, c3), ("uniform", u2, u3)):
            curve = {"round_02": dict.fromkeys(fams, {"ood": r2}),
                     "round_03": dict.fromkeys(fams, {"ood": r3})}
            (tmp_path / f"{method}_seed{seed}.json").write_text(json.dumps(
                {"method": method, "seed": seed, "ood": dict.fromkeys(fams, r3), "curve": curve}))
    assert main(["--cells", str(tmp_path), "--round", "2"]) == 0
    assert "| uniform | -5.0, -5.0 |" in capsys.readouterr().out  # after round 2
    assert main(["--cells", str(tmp_path)]) == 0
    assert "| uniform | +5.0, +10.0 |" in capsys.readouterr().out  # after the last
    with pytest.raises(SystemExit):
        main(["--cells", str(tmp_path), "--round", "4"])
    assert "--round 4: no such round in the curve of coda seed 0" in capsys.readouterr().err


def test_the_written_command_reproduces_the_table(tmp_path, capsys):
    """Every argument that changes the table is in the command the table names (`--per-split` changes the
    binomial column; it was left out)."""
    for seed, (c, s) in enumerate([(20.0, 10.0), (15.0, 10.0)]):
        _cell(tmp_path, "coda", seed, c)
        _cell(tmp_path, "sft", seed, s)
    out = tmp_path / "power.md"
    assert main(["--cells", str(tmp_path), "--per-split", "50", "--margin", "3", "--out", str(out)]) == 0
    text = out.read_text()
    cmd = text.split("Command: `python -m experiments.table.table_power ")[1].split("`")[0]
    again = tmp_path / "again.md"
    assert main([*cmd.replace(str(out), str(again)).split()]) == 0
    assert again.read_text().replace(str(again), str(out)) == text
    assert "--per-split 50" in cmd and "--margin 3" in cmd
