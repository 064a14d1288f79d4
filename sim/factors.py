"""Scene factors: the editable parameters of a task family, with in-distribution and wider
out-of-distribution ranges. Light (pydantic + numpy only), so programs and the sandbox can use it without
importing MuJoCo."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, model_serializer, model_validator

from sim.scene import FactorGroup

FactorValues = dict[FactorGroup, dict[str, Any]]
# an edit of one factor: a pinned value, a (lo, hi) range, or a tuple of choices
EditValue = float | int | bool | str | tuple[float, float] | tuple[Any, ...]

COLORS: dict[str, tuple[float, float, float, float]] = {
    "red": (0.85, 0.15, 0.12, 1),
    "green": (0.15, 0.7, 0.2, 1),
    "blue": (0.15, 0.3, 0.85, 1),
    "yellow": (0.95, 0.85, 0.1, 1),
    "purple": (0.55, 0.2, 0.7, 1),
    "orange": (0.95, 0.5, 0.1, 1),
    "white": (0.92, 0.92, 0.92, 1),
    "black": (0.1, 0.1, 0.1, 1),
}


class FactorDef(BaseModel):
    """One editable scene factor. Floats/ints have `range` (in distribution) and `ood_range` (the wider
    range; OOD samples come from the part of it outside `range`); choices have `choices` and
    `ood_choices` (unseen values)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    group: FactorGroup
    type: Literal["float", "int", "choice"]
    default: Any
    range: tuple[float, float] | None = None
    ood_range: tuple[float, float] | None = None
    choices: tuple[Any, ...] | None = None
    ood_choices: tuple[Any, ...] | None = None
    # what the factor moves, as the critic reasons about it ("subject_pos", "target_size", "mass", ...):
    # its table of which kinds break which phase and the cross-family factor mapping read this
    kind: str = "other"
    # the side of the range that makes the task harder (+1 high, −1 low); None: both sides (positions,
    # yaws, sizes that are hard either way)
    hard_side: Literal[-1, 1] | None = None
    # the phases in which `hard_side` holds (a thick peg is hard to insert, not to grasp); None: all
    hard_phases: tuple[str, ...] | None = None
    # whether an exploration variant may pin one of its seen choices when it has no unseen one (a choice
    # only). False for a factor whose every value an evaluation covers alike — which of a LIBERO suite's
    # tasks a scene is: a variant pinning it spends all its scenes on one task (FINDINGS #57)
    variant_pins: bool = True
    doc: str = ""

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        """Every field, `variant_pins` only when off: a program's content hash (its id and file name) stays
        what it was before the field existed for every factor that keeps the default."""
        data = handler(self)
        if self.variant_pins:
            data.pop("variant_pins", None)
        return data

    @model_validator(mode="after")
    def _check(self) -> FactorDef:
        if self.type == "choice":
            if not self.choices:
                raise ValueError(f"factor {self.name!r}: a choice factor needs `choices`")
        elif self.range is None or self.range[0] > self.range[1]:
            raise ValueError(f"factor {self.name!r}: needs a `range` with lo <= hi")
        wider = (
            self.ood_range is None
            or self.range is None
            or (self.ood_range[0] <= self.range[0] and self.ood_range[1] >= self.range[1])
        )
        if not wider:
            raise ValueError(f"factor {self.name!r}: ood_range must contain range")
        return self

    def hard_side_in(self, phase: str = "") -> int | None:
        """The hard side of the range in `phase` (None: both sides, or not hard in this phase)."""
        if self.hard_phases is not None and phase not in self.hard_phases:
            return None
        return self.hard_side

    @property
    def has_ood(self) -> bool:
        return bool(self.ood_choices) or (self.ood_range is not None and self.ood_range != self.range)

    def sample(self, rng: np.random.Generator, ood: bool = False) -> Any:
        if self.type == "choice":
            pool = self.ood_choices if ood and self.ood_choices else self.choices
            return pool[int(rng.integers(len(pool)))]
        lo, hi = self.range
        if ood and self.has_ood and self.type == "int":  # a whole number outside the range, each as likely
            (olo, ohi) = self.ood_range
            shell = [k for k in range(math.ceil(olo), math.floor(ohi) + 1) if not lo <= k <= hi]
            return shell[int(rng.integers(len(shell)))]
        if ood and self.has_ood:
            (olo, ohi) = self.ood_range
            left, right = lo - olo, ohi - hi  # the two shells outside the in-distribution range
            u = rng.uniform(0, left + right)
            x = olo + u if u < left else hi + (u - left)
        else:
            x = rng.uniform(lo, hi)
        return int(round(x)) if self.type == "int" else float(x)

    def position(self, value: float) -> float:
        """Where number `value` sits: −1 at the low end of the ID range, 0 at its centre, +1 at the high
        end, |p| > 1 outside. A point range (an extended factor whose seed distribution is its default)
        has no width to measure in: 0 at the point, else ±(1 + the distance over the OOD part on that
        side), so every value off the point reads as outside, as it is."""
        lo, hi = self.range or (value, value)
        if hi > lo:
            return (float(value) - (lo + hi) / 2) / ((hi - lo) / 2)
        d = float(value) - lo
        if d == 0:
            return 0.0
        olo, ohi = self.ood_range or (lo, hi)
        extent = (ohi - hi) if d > 0 else (lo - olo)
        return math.copysign(1.0 + abs(d) / (extent if extent > 0 else 1.0), d)

    def problem(self, value: Any) -> str | None:
        """Why `value` cannot be this factor's value (None when it can): a choice outside the in-distribution
        and unseen choices, or a number that is not a finite real (an int factor: not a whole number).
        Numbers outside the OOD range are allowed: the validity checks judge the scene they make."""
        if self.type == "choice":
            known = self.choices + (self.ood_choices or ())
            if value in known:
                return None
            ood = f"; unseen (OOD): {', '.join(map(repr, self.ood_choices))}" if self.ood_choices else ""
            return (f"{self.name} = {value!r} is not one of its values (in distribution: "
                    f"{', '.join(map(repr, self.choices))}{ood})")
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            return f"{self.name} = {value!r} must be a number ({self.type}), e.g. {self.default!r}"
        if not np.isfinite(value):
            return f"{self.name} = {value!r} must be finite"
        if self.type == "int" and float(value) != int(value):
            return f"{self.name} = {value!r} must be a whole number"
        return None

    def contains(self, value: Any, ood: bool = False) -> bool:
        if self.type == "choice":
            return value in (self.choices + (self.ood_choices or ()) if ood else self.choices)
        lo, hi = self.ood_range if ood and self.ood_range else self.range
        return lo - 1e-9 <= value <= hi + 1e-9
