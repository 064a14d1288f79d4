"""`coda_policy.checkpoint`: a checkpoint dict ↔ one .safetensors file (tensors + JSON header), bytes that
do not depend on when it was written, and clear refusals of what is not a checkpoint."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from coda_policy.checkpoint import (
    META,
    CheckpointError,
    OldCheckpointError,
    load_checkpoint,
    read_meta,
    save_checkpoint,
)
from coda_policy.pretrained import sha256


def _ckpt() -> dict:
    return {"format": 1, "config": {"type": "object_token", "cameras": ["front"], "lr": 1e-3, "flag": None},
            "state_dict": {"a.weight": torch.randn(3, 4), "a.bias": torch.zeros(3, dtype=torch.float64),
                           "t": torch.randn(4, 3).t()},  # a transposed view: saved contiguous
            "q_select": {"critic": {"config": {"hidden": 8}, "state_dict": {"q.0.weight": torch.ones(2, 2)}},
                         "k": 3},
            "empty": {}}


def test_a_nested_checkpoint_round_trips_exactly(tmp_path):
    ckpt = _ckpt()
    path = save_checkpoint(ckpt, tmp_path / "c.safetensors")
    back = load_checkpoint(path)
    assert back.keys() == ckpt.keys() and back["config"] == ckpt["config"] and back["empty"] == {}
    for k, v in ckpt["state_dict"].items():
        assert back["state_dict"][k].dtype == v.dtype and torch.equal(back["state_dict"][k], v), k
    sel = back["q_select"]
    assert sel["k"] == 3 and sel["critic"]["config"] == {"hidden": 8}
    assert torch.equal(sel["critic"]["state_dict"]["q.0.weight"], torch.ones(2, 2))
    assert read_meta(path)["config"]["type"] == "object_token"
    with safe_open(str(path), framework="pt") as f:  # the JSON is the header's one metadata entry
        names = set(f.keys())
        assert set(f.metadata()) == {META} and "state_dict/a.weight" in names
        assert json.loads(f.metadata()[META])["q_select"]["critic"]["state_dict"] == {}  # tensors not in JSON


def test_the_same_checkpoint_gives_the_same_bytes(tmp_path):
    ckpt = _ckpt()
    a = save_checkpoint(ckpt, tmp_path / "a.safetensors")
    b = save_checkpoint(dict(reversed(list(ckpt.items()))), tmp_path / "b.safetensors")
    assert sha256(a) == sha256(b)  # table records compare policies by hash
    assert not list(tmp_path.glob("*.tmp"))


def test_what_is_not_a_checkpoint_is_refused_clearly(tmp_path):
    with pytest.raises(ValueError, match=r"\.safetensors file"):
        save_checkpoint(_ckpt(), tmp_path / "c.pt")
    with pytest.raises(ValueError, match="contains '/'"):
        save_checkpoint({"a/b": torch.zeros(1)}, tmp_path / "c.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(bytes(range(64)))
    with pytest.raises(CheckpointError, match="is not a .safetensors checkpoint"):
        load_checkpoint(tmp_path / "junk.safetensors")
    torch.save({"x": torch.zeros(1)}, tmp_path / "old.pt")
    with pytest.raises(OldCheckpointError, match="python -m coda_policy.convert"):
        read_meta(tmp_path / "old.pt")
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.safetensors")


def test_a_checkpoint_file_gets_the_mode_of_any_new_file(tmp_path):
    (tmp_path / "plain").write_text("")  # what the umask gives an ordinary file
    path = save_checkpoint(_ckpt(), tmp_path / "c.safetensors")
    assert path.stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.safetensors", "plain"]  # no probe left


def test_raising_the_object_bound_keeps_every_tensor_and_refuses_what_it_cannot(tmp_path, capsys):
    from coda_policy import convert

    ckpt = _ckpt()
    ckpt["config"]["max_objects"] = 16
    src = save_checkpoint(ckpt, tmp_path / "c.safetensors")
    dst = convert.with_room(src, tmp_path / "roomy.safetensors", 20)
    back = load_checkpoint(dst)
    assert back["config"] == {**ckpt["config"], "max_objects": 20}
    assert all(torch.equal(back["state_dict"][k], v) for k, v in ckpt["state_dict"].items())
    assert read_meta(src)["config"]["max_objects"] == 16  # the source is left alone
    with pytest.raises(ValueError, match="lowering the bound"):
        convert.with_room(dst, tmp_path / "small.safetensors", 8)
    assert convert.main([str(tmp_path / "none.safetensors"), "--max-objects", "20", "--out",
                         str(tmp_path / "x.safetensors")]) == 2
    no_bound = save_checkpoint(_ckpt(), tmp_path / "pi.safetensors")
    assert convert.main([str(no_bound), "--max-objects", "20", "--out", str(tmp_path / "y.safetensors")]) == 2
    assert "not an object-token policy" in capsys.readouterr().err
