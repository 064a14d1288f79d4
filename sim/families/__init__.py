"""Built-in task families; importing this package registers them in `FAMILIES`."""

from sim.families import articulated, pick_place, put_inside, stack_insert  # noqa: F401
from sim.families.base import FAMILIES, FactorDef, FactorValues, TaskFamily, get_family

__all__ = ["FAMILIES", "FactorDef", "FactorValues", "TaskFamily", "get_family"]
