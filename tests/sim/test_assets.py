"""LIBERO's textures as scenes use them: downsampled once and kept on disk for the next process, the same
bytes either way; a kept file cut short is redone, not read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from sim import assets


def test_a_texture_is_downsampled_once_and_read_back_the_same(tmp_path: Path, monkeypatch) -> None:
    big = tmp_path / "scan.png"
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (600, 600, 3), dtype=np.uint8)).save(big)
    monkeypatch.setattr(assets, "TEXTURE_CACHE", tmp_path / "cache")
    assets.small_texture.cache_clear()
    data, w, h = assets.small_texture(big)
    want = Image.open(big).convert("RGB").resize((256, 256), Image.Resampling.BILINEAR)
    assert (w, h) == (256, 256) and data == want.tobytes()
    (kept,) = (tmp_path / "cache").glob("*.rgb")
    assets.small_texture.cache_clear()  # as a new process would: read from the disk
    assert assets.small_texture(big) == (data, w, h)
    kept.write_bytes(kept.read_bytes()[:100])  # cut short (a full disk, a killed writer): decoded again
    assets.small_texture.cache_clear()
    assert assets.small_texture(big) == (data, w, h) and len(kept.read_bytes()) == 8 + 3 * 256 * 256
    assets.small_texture.cache_clear()


def test_a_texture_that_cannot_be_kept_is_still_returned_and_leaves_no_part_file(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    big = tmp_path / "scan.png"
    Image.fromarray(np.full((300, 300, 3), 7, dtype=np.uint8)).save(big)
    monkeypatch.setattr(assets, "TEXTURE_CACHE", tmp_path / "cache")

    def no_room(src: str, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(assets.os, "replace", no_room)
    assets.small_texture.cache_clear()
    data, w, h = assets.small_texture(big)
    assert (w, h) == (256, 256) and data == bytes([7]) * 3 * 256 * 256
    assert list((tmp_path / "cache").iterdir()) == []  # neither the kept file nor its half-written part
    assets.small_texture.cache_clear()
