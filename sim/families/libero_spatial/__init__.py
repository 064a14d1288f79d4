"""LIBERO-Spatial: put the black bowl the words pick out on the plate, in LIBERO's own world."""

from sim.families.libero_spatial.family import LiberoSpatial

__all__ = ["LiberoSpatial"]
