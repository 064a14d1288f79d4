"""LIBERO-Goal: one kitchen scene, seven goals (six pick-place, one drawer to open), in LIBERO's own world."""

from sim.families.libero_goal.family import LiberoGoal

__all__ = ["LiberoGoal"]
