"""LIBERO-Object: put one grocery item into the basket, in LIBERO's own world (`scene.py`). Episodes and
validity run in LIBERO (`sim.libero.episode`); the expert is LIBERO's scripted pick-place over privileged
state (`sim.libero.expert.PickPlaceExpert`), played by the LIBERO episode runner; phases and seed scenes
are every LIBERO pick-place family's (`sim.libero.family`)."""

from __future__ import annotations

from sim.families.libero_object import scene
from sim.libero.family import LiberoPickPlaceFamily


class LiberoObject(LiberoPickPlaceFamily, name="libero_object"):
    builder = scene
