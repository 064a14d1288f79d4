"""Built-in task families: every sub-folder of this package is one family (see `base.py`); importing the
package imports each folder, which registers its family in `FAMILIES`."""

import importlib
import pkgutil

from sim.families.base import FAMILIES, FactorDef, FactorValues, TaskFamily, get_family, our_families
from sim.families.phases import Phase

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.ispkg:
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["FAMILIES", "FactorDef", "FactorValues", "Phase", "TaskFamily", "get_family", "our_families"]
