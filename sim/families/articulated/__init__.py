"""Articulated: open or close one drawer of a two-drawer cabinet, or a hinged cabinet door."""

from sim.families.articulated.family import Articulated, hinge_xy

__all__ = ["Articulated", "hinge_xy"]
