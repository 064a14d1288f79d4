"""LIBERO-Spatial: put the black bowl the words pick out on the plate, in LIBERO's own world
(`scene.py`). Episodes and validity run in LIBERO (`sim.libero.episode`); the expert is LIBERO's scripted
pick-place over privileged state (`sim.libero.expert.PickPlaceExpert`), played by the LIBERO episode
runner; phases and seed scenes are every LIBERO pick-place family's (`sim.libero.family`)."""

from __future__ import annotations

from sim.families.libero_spatial import scene
from sim.libero.family import LiberoPickPlaceFamily


class LiberoSpatial(LiberoPickPlaceFamily, name="libero_spatial"):
    builder = scene
