"""The frozen evaluation suites: unchanged (hashes), complete, drawn as documented, read by no loop code."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from experiments.table import suites

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("set_name", list(suites.SETS))
def test_every_suite_set_matches_its_manifest(set_name):
    s = suites.suite_set(set_name)
    assert suites.check(set_name) == []
    m = suites.manifest(set_name)
    assert m["families"] == list(suites.FAMILIES) and m["splits"] == list(suites.SPLITS)
    assert m["n"] == s.n and m["seed"] == s.seed
    for family in m["families"]:
        for split in m["splits"]:
            got = suites.suite([family], [split], set_name=set_name)
            assert len(got) == m["n"] and {x.suite_set for x in got} == {set_name}


def test_the_sets_draw_different_scenes():
    seeds = {name: {x.load().seed for x in suites.suite(["pick_place"], ["ood"], set_name=name)}
             for name in suites.SETS}
    names = list(seeds)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not seeds[a] & seeds[b], (a, b)


def test_a_bad_set_or_size_is_refused():
    with pytest.raises(KeyError, match="no suite set 'frozen5'; the sets are frozen10, frozen50, recheck50"):
        suites.suite(set_name="frozen5")
    with pytest.raises(ValueError, match="suite set frozen10 holds 10 scenes per family and split, not 50"):
        suites.suite(per_split=50)


def test_a_changed_scene_file_is_detected(tmp_path, monkeypatch):
    import shutil

    copy = tmp_path / "suites50"
    shutil.copytree(suites.folder("frozen50"), copy)
    monkeypatch.setattr(suites, "HERE", tmp_path)
    victim = next(copy.glob("pick_place/ood/*.json"))
    victim.write_text(victim.read_text().replace('"seed"', '"seed" ', 1))
    assert suites.check("frozen50") == [f"changed: {victim.relative_to(copy)}"]
    with pytest.raises(RuntimeError, match="the frozen suites of frozen50 do not match their manifest"):
        suites.suite(set_name="frozen50")


def test_no_code_outside_experiments_reads_the_suites():
    pattern = re.compile(r"experiments[./]table[./](suites|recheck)|experiments\.table import suites")
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
        for s in [*suites.suite([family]), *suites.suite([family], set_name="frozen50"),
                  *suites.suite([family], set_name="extended50b")]:
            spec = s.load()
            space = suites.suite_set(s.suite_set).space
            flat = fam.flat(spec.factors)
            assert fam.space_of(spec.factors) == space, s.path
            outside = [f.name for f in fam.schema(space) if not f.contains(flat[f.name], ood=False)]
            if s.split in ("id", "instruction"):
                assert outside == [], (s.path, outside)
            elif s.split == "ood_single":
                assert len(outside) == 1, s.path
                assert fam.factor(outside[0]).group in ("spatial", "attribute") or \
                    outside[0].endswith("_count") and space == "extended", s.path
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
