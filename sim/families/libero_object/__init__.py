"""LIBERO-Object: put one grocery item into the basket, in LIBERO's own world."""

from sim.families.libero_object.family import LiberoObject

__all__ = ["LiberoObject"]
