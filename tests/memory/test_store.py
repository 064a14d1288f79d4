"""Memory: persistence across reopen (and processes), join vs found, cross-family retrieval and reuse,
idempotent upserts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory.store import Memory
from memory.types import Verdict
from tests.memory.helpers import FAR, YAW_B, diag, record, validated

UNRELATED = "Rendering the scene took too long, so the evaluation job ran out of wall-clock time."


def _validate(mem: Memory, d, family: str = "pick_place", round_no: int = 1):
    mem.add_episode(record(d.episode_id, family), d)
    return mem.add_validated(d, validated(d), family, round_no=round_no)


def _snapshot(mem: Memory) -> dict:
    return {"modes": mem.modes(), "counts": mem.counts(), "dx": mem.diagnoses(),
            "episode": mem.episode("e1"), "reuse": mem.reuse_stats(), "ledger": mem.ledger.arms()}


def _fill(mem: Memory) -> None:
    m = _validate(mem, diag("e1"))
    _validate(mem, diag("e2", YAW_B, edit={"obj_yaw": 1.3}), family="put_inside", round_no=2)
    e = mem.add_programs(m.id, "g1", "t1", "pick_place", ("programs/round_01/g.py", "programs/round_01/t.py"))
    mem.record_use(e, "put_inside", 2)
    mem.ledger.record(m.id, "pick_place", 1, 0.2, n=10)
    mem.ledger.record(m.id, "pick_place", 2, 0.5, n=10)


def test_reopen_gives_same_content(tmp_path: Path) -> None:
    with Memory(tmp_path / "memory") as mem:
        _fill(mem)
        before = _snapshot(mem)
    with Memory(tmp_path / "memory") as mem:
        assert _snapshot(mem) == before
        assert mem.modes()[0].learning_progress[-1].alp == pytest.approx(0.3)
        (hit, _), = mem.search_modes("the block is turned and slips out of the fingers", 1)
        assert hit.id == "obj_yaw_grasp_high"
        assert mem.search_episodes("rotated cube", 1)[0][0].episode_id in {"e1", "e2"}


def test_content_survives_a_process_restart(tmp_path: Path) -> None:
    with Memory(tmp_path / "memory") as mem:
        _fill(mem)
        want = {"modes": [m.model_dump(mode="json") for m in mem.modes()], "counts": mem.counts()}
    # a fresh interpreter reads it back (reading embeds nothing, so the child never loads the model)
    script = textwrap.dedent(f"""
        import json
        from memory.store import Memory
        with Memory({str(tmp_path / "memory")!r}) as mem:
            print(json.dumps({{"modes": [m.model_dump(mode="json") for m in mem.modes()],
                              "counts": mem.counts()}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                         cwd=Path(__file__).parents[2], timeout=120).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got == want and got["counts"]["cross_family_reuse"] == 1
    (mode,) = got["modes"]
    assert mode["families"] == ["pick_place", "put_inside"] and len(mode["programs"]) == 1


def test_similar_explanation_joins_across_families(mem: Memory) -> None:
    a = _validate(mem, diag("e1"))
    b = _validate(mem, diag("e2", YAW_B), family="put_inside")
    assert a.id == b.id == "obj_yaw_grasp_high"
    assert b.families == ("pick_place", "put_inside") and b.evidence_ids == ("e1", "e2")


@pytest.mark.parametrize("change", [
    {"side": "low", "edit": {"obj_yaw": (-1.5, -1.0)}},  # other side of the range
    {"phase": "lift"},  # other phase
    {"factor": "obj_x", "edit": {"obj_x": 0.2}},  # other factor
    {"explanation": UNRELATED},  # same factor/phase/side but an unrelated mechanism
])
def test_different_claims_found_new_modes(mem: Memory, change: dict) -> None:
    a = _validate(mem, diag("e1"))
    b = _validate(mem, diag("e2", **change))
    assert a.id != b.id and len(mem.modes()) == 2


def test_same_stem_gets_a_suffix(mem: Memory) -> None:
    _validate(mem, diag("e1"))
    assert _validate(mem, diag("e2", UNRELATED)).id == "obj_yaw_grasp_high_2"


def test_choice_values_must_intersect(mem: Memory) -> None:
    kw = dict(factor_group="attribute", factor="shape", phase="grasp", side="values")
    a = _validate(mem, diag("e1", "The cylinder rolls away when the fingers touch it.",
                            edit={"shape": "cylinder"}, **kw))
    b = _validate(mem, diag("e2", "The round cylinder rolls out of the gripper as it closes.",
                            edit={"shape": ("cylinder", "sphere")}, **kw))
    c = _validate(mem, diag("e3", "The cylinder rolls away when the fingers touch it.",
                            edit={"shape": "cube"}, **kw))
    assert a.id == b.id != c.id
    assert mem.mode(a.id).values == ('"cylinder"', '"sphere"')


def test_unknown_side_joins(mem: Memory) -> None:
    a = _validate(mem, diag("e1"))
    assert _validate(mem, diag("e2", YAW_B, side=None)).id == a.id


def test_cross_family_programs_and_reuse_count(mem: Memory) -> None:
    m = _validate(mem, diag("e1"))
    _validate(mem, diag("e2", YAW_B), family="put_inside")
    own = mem.add_programs(m.id, "g_pp", "t_pp", "pick_place", ("gen_pp.py", "train_pp.py"), round_no=1)
    assert mem.programs_for(m.id, family="put_inside") == [own]  # put_inside has none yet: pick_place's
    assert mem.record_use(own, "put_inside", 2) is True
    assert mem.record_use(own, "pick_place", 2) is False
    adapted = mem.add_programs(m.id, "g_pi", "t_pi", "put_inside", ("gen_pi.py", "train_pi.py"), round_no=2)
    assert mem.programs_for(m.id, family="put_inside") == [adapted, own]
    assert mem.programs_for(m.id, family="pick_place") == [own, adapted]
    assert mem.reuse_stats() == {"uses": 2, "cross_family": 1, "by_pair": {"pick_place->put_inside": 1}}
    assert [x.id for x in mem.modes_for_family("stack_insert", factors=["obj_yaw", "size"])] == [m.id]
    assert mem.modes_for_family("articulated", factors=["fix_yaw"]) == []


def test_upserts_are_idempotent(mem: Memory) -> None:
    d = diag("e1")
    mode_id = _validate(mem, d).id
    e1 = mem.add_programs(mode_id, "g", "t", "pick_place", ("a.py", "b.py"), round_no=1)
    mem.record_use(e1, "put_inside", 2)
    m1 = mem.mode(mode_id)
    before = _snapshot(mem)
    for _ in range(2):  # a resumed run repeats rollout, diagnose, remember and generate
        mem.add_episode(record("e1"), d)
        assert mem.add_validated(d, validated(d), "pick_place", round_no=3) == m1
        assert mem.add_programs(mode_id, "g", "t", "pick_place", ("a.py", "b.py"), round_no=4) == e1
        mem.record_use(e1, "put_inside", 2)
    assert _snapshot(mem) == before
    assert mem.diagnoses(mode_id, status="validated") == [d]  # re-adding the episode kept the verdict


def test_verdicts_other_than_validated(mem: Memory) -> None:
    d = diag("e1")
    refuted = Verdict(diagnosis_id=d.id, status="refuted", targeted_failure_rate=0.3,
                      control_failure_rate=0.3, statistic=0.0, p_value=1.0, n=20)
    with pytest.raises(ValueError, match="validated verdict"):
        mem.add_validated(d, refuted, "pick_place")
    with pytest.raises(ValueError, match="not for diagnosis"):
        mem.add_validated(diag("e2"), validated(d), "pick_place")
    assert mem.add_verdict(d, refuted, "pick_place") is None
    assert mem.diagnoses(status="refuted") == [d] and mem.modes() == []


def test_search_and_lookup(mem: Memory) -> None:
    yaw = _validate(mem, diag("e1"))
    far = _validate(mem, diag("e2", FAR, factor="obj_x", phase="approach", edit={"obj_x": 0.2}),
                    family="put_inside")
    mem.add_episode(record("e3", success=True, failing_phase=None))
    assert mem.search_modes("object out of reach", 1)[0][0].id == far.id
    assert [m.id for m, _ in mem.search_modes("object out of reach", 2, family="pick_place")] == [yaw.id]
    hits = mem.search_episodes("rotated cube slips", 5)
    ids = [r.episode_id for r, _, _ in hits]
    assert ids[0] == "e1" and set(ids) == {"e1", "e2"}  # only failures, nearest first
    assert mem.episode("e3").success and mem.episode("nope") is None
    with pytest.raises(KeyError, match="Did you mean"):
        mem.mode("obj_yaw_grasp_hgh")
    with pytest.raises(KeyError):
        mem.add_programs("no_such_mode", "g", "t", "pick_place")
