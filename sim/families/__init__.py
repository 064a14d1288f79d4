"""Built-in task families: every sub-folder of this package is one family (see `base.py`); importing the
package imports each folder, which registers its family in `FAMILIES`. Look a family up here
(`get_family`), not in `base.py`: only this package knows every folder has been imported."""

import importlib
import pkgutil

from sim.families.base import FAMILIES, FactorDef, FactorValues, TaskFamily
from sim.families.phases import Phase

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.ispkg:
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["FAMILIES", "FactorDef", "FactorValues", "Phase", "TaskFamily", "get_family", "our_families"]


def our_families() -> list[str]:
    """The registered families whose scenes are our MuJoCo world."""
    return [n for n in FAMILIES.names() if FAMILIES.get(n).world == "mujoco"]


def get_family(name: str) -> type[TaskFamily]:
    """The registered family `name` ("did you mean" on a typo)."""
    return FAMILIES.get(name)
