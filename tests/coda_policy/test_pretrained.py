"""The committed checkpoints (`checkpoints/`): the manifest's hashes match the files, every file is a
checkpoint that loads without unpickling, and each converted policy acts exactly as its old pickled `.pt`
did — the actions in `fixtures/pretrained_actions.json` were recorded from the `.pt` files with the old
loader before they left the repository (its "made_by" says how)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from coda_policy import pretrained
from coda_policy.checkpoint import SUFFIX, OldCheckpointError, load_checkpoint, read_meta
from coda_policy.registry import load_policy

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "pretrained_actions.json").read_text())
ENTRIES = pretrained.manifest()


def _batch(inp: dict) -> dict[str, torch.Tensor]:
    return {k: torch.tensor(v["values"], dtype=getattr(torch, v["dtype"])).reshape(v["shape"])
            for k, v in inp["batch"].items()}


def test_the_manifest_lists_every_committed_checkpoint_with_its_sha256():
    files = sorted(p.relative_to(pretrained.ROOT).as_posix() for p in pretrained.ROOT.rglob(f"*{SUFFIX}"))
    assert files and files == sorted(e["file"] for e in ENTRIES)
    for e in ENTRIES:
        path = pretrained.ROOT / e["file"]
        assert pretrained.sha256(path) == e["sha256"], e["file"]
        assert path.stat().st_size == e["bytes"] and e["made_by"]
        assert read_meta(path)["config"]["type"] == e["policy"]
    assert not list(Path(pretrained.ROOT).parent.glob("docs/results/**/*.pt"))  # none left behind


def test_a_recorded_pt_hash_maps_to_its_converted_file():
    for e in ENTRIES:  # the core table's bootstraps were kept as safetensors: converted from nothing
        if "converted_from" in e:
            assert pretrained.canonical_sha256(e["converted_from"]["sha256"]) == e["sha256"]
        assert pretrained.canonical_sha256(e["sha256"]) == e["sha256"]
    assert pretrained.canonical_sha256("ab" * 32) == "ab" * 32 and pretrained.canonical_sha256(None) is None
    assert pretrained.SEED_SFT_4FAM.is_file() and pretrained.table_bootstrap("table1", 2).is_file()


@pytest.mark.parametrize("file", sorted(FIXTURE["checkpoints"]))
def test_the_converted_policy_acts_as_the_pickled_one_did(file: str):
    want = FIXTURE["checkpoints"][file]
    entry = next(e for e in ENTRIES if e["file"] == file)
    assert entry["converted_from"]["sha256"] == want["old_sha256"]  # recorded from the file it came from
    policy = load_policy(pretrained.ROOT / file)
    for inp, actions in zip(FIXTURE["inputs"], want["actions"], strict=True):
        gen = torch.Generator().manual_seed(policy.config.seed)  # what select_action uses after reset()
        got = policy.sample_actions(_batch(inp), generator=gen)[0]
        # 1e-5: the actions were recorded on another machine, and CPU kernels round differently from one
        # instruction set to another (up to 1.5e-6 measured); a conversion that changed a weight moves them
        # by orders of magnitude more
        torch.testing.assert_close(got, torch.tensor(actions), rtol=0, atol=1e-5)


def test_an_old_pickled_checkpoint_is_refused_with_the_command_that_converts_it(tmp_path):
    ckpt = load_checkpoint(pretrained.SEED_SFT_4FAM)
    torch.save(ckpt, tmp_path / "old.pt")  # what the project wrote before
    with pytest.raises(OldCheckpointError, match=r"python -m coda_policy\.convert .*old\.pt"):
        load_policy(tmp_path / "old.pt")
    from coda_policy.convert import main

    assert main([str(tmp_path / "old.pt")]) == 0
    again = load_policy(tmp_path / "old.safetensors")
    reference = load_policy(pretrained.SEED_SFT_4FAM)
    for k, v in reference.state_dict().items():
        assert torch.equal(v, again.state_dict()[k]), k
    assert pretrained.sha256(tmp_path / "old.safetensors") == pretrained.sha256(pretrained.SEED_SFT_4FAM)
