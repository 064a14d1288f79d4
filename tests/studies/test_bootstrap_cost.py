"""`python -m studies.bootstrap_cost` (FINDINGS #34): a table's bootstrap trained again from nothing and
timed beside the kept one; a seed with no kept bootstrap is refused before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.table import stats
from studies import bootstrap_cost

pytestmark = pytest.mark.integration  # ordered first in the suite (tests/conftest.py): long tests


def test_a_seed_without_a_kept_bootstrap_is_refused_before_any_work(tmp_path: Path, capsys) -> None:
    assert bootstrap_cost.main(["--preset", "smoke", "--seeds", "0,", "--results", str(tmp_path)]) == 2
    assert "no kept bootstrap for seed 0" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert bootstrap_cost.main(["--preset", "smoke", "--seeds", "0,", "--commit"]) == 2  # --commit: name it
    assert "--results" in capsys.readouterr().err


def test_a_bootstrap_trained_again_is_timed_beside_the_kept_one(smoke_table: tuple[Path, Path, dict],
                                                                 tmp_path: Path):
    from sim.pool import make_pool

    _, results, _ = smoke_table
    kept = json.loads((results / "table1_smoke" / "bootstrap" / "seed0.json").read_text())
    lines: list[str] = []
    with make_pool("local", 1) as pool:
        path = bootstrap_cost.measure("smoke", 0, workers=1, out=tmp_path, results=results, pool=pool,
                                      log=lines.append)
        rec = json.loads(path.read_text())
        assert path.parent.name == stats.BOOTSTRAP_COST and rec["seed"] == 0
        assert rec["wall_s"] > 0 and 0 < rec["run_cpu_s"] <= 2 * rec["wall_s"] + 5 and rec["eval_s"] > 0
        assert rec["kept_sha256"] == kept["bootstrap_sha256"]
        assert rec["same_policy"] == (rec["bootstrap_sha256"] == kept["bootstrap_sha256"])
        assert 0.0 <= rec["avg_ood"] <= 100.0
        assert stats.load_bootstrap_costs(results, "table1_smoke") == {0: rec}
        bootstrap_cost.measure("smoke", 0, workers=1, out=tmp_path, results=results, pool=pool,
                               log=lines.append)
    assert lines[-1] == "bootstrap seed 0: recorded, skipped"
    path.unlink()  # the session's smoke results stay as the table wrote them
    with pytest.raises(FileNotFoundError, match="no kept bootstrap for seed 7"):
        bootstrap_cost.measure("smoke", 7, workers=1, out=tmp_path, results=results, pool=None)
