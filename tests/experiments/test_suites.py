"""The frozen evaluation suites: unchanged (hashes), complete, drawn as documented, read by no loop code."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from experiments.table import suites

ROOT = Path(__file__).resolve().parents[2]


def test_suites_match_their_manifest():
    assert suites.check() == []
    m = suites.manifest()
    assert m["families"] == list(suites.FAMILIES) and m["splits"] == list(suites.SPLITS)
    for family in m["families"]:
        for split in m["splits"]:
            assert len(suites.suite([family], [split])) == m["n"]


def test_a_changed_scene_file_is_detected(tmp_path, monkeypatch):
    import shutil

    copy = tmp_path / "suites"
    shutil.copytree(suites.SUITE_DIR, copy)
    monkeypatch.setattr(suites, "SUITE_DIR", copy)
    monkeypatch.setattr(suites, "MANIFEST", copy / "manifest.json")
    victim = next(copy.glob("pick_place/ood/*.json"))
    victim.write_text(victim.read_text().replace('"seed"', '"seed" ', 1))
    assert suites.check() == [f"changed: {victim.relative_to(copy)}"]
    with pytest.raises(RuntimeError, match="do not match their manifest"):
        suites.suite()


def test_no_code_outside_experiments_reads_the_suites():
    pattern = re.compile(r"experiments[./]table[./]suites|SUITE_DIR|experiments\.table import suites")
    # the studies and benchmarks are measurement, not the loop: they may evaluate on the suites
    tops = [d for d in ROOT.iterdir() if d.is_dir() and not d.name.startswith(".")  # .venv*, .git
            and d.name not in ("experiments", "studies", "bench", "tests", "runs")]
    users = [str(p.relative_to(ROOT)) for top in tops for p in top.rglob("*.py")
             if pattern.search(p.read_text())]
    # the `coda` dispatcher names the module of `coda suites` and imports it only when that command runs
    assert users == ["common/entry.py"]
    assert "import experiments" not in (ROOT / "common" / "entry.py").read_text()


def test_splits_are_drawn_as_documented():
    from sim.families import get_family

    for family in suites.FAMILIES:
        fam = get_family(family)
        for s in suites.suite([family]):
            spec = s.load()
            flat = fam.flat(spec.factors)
            outside = [f.name for f in fam.factors if not f.contains(flat[f.name], ood=False)]
            if s.split in ("id", "instruction"):
                assert outside == [], (s.path, outside)
            elif s.split == "ood_single":
                assert len(outside) == 1 and fam.factor(outside[0]).group in ("spatial", "attribute"), s.path
            else:
                assert len(outside) >= 2, (s.path, outside)
            framed = any(re.fullmatch(re.escape(fr).replace(r"\{\}", ".+"), spec.instruction)
                         for fr in suites.FRAMES)
            assert framed == (s.split == "instruction"), (s.path, spec.instruction)


def test_drawing_is_deterministic():
    a = suites.draw("stack_insert", "ood_single", 3, 0)
    b = suites.draw("stack_insert", "ood_single", 3, 0)
    assert a == b and a != suites.draw("stack_insert", "ood_single", 3, 1)
    assert np.isfinite(a.objects[0].size).all()
