"""A LIBERO scene as data: what a BDDL problem file says, read with LIBERO's own parser and written back.

`LiberoScene` holds the problem's regions (placement rectangles on a fixture, or a fixture's named part),
fixtures, objects, initial placements, goal and instruction. `from_bddl` reads a file, `to_bddl` writes
one that LIBERO parses to the same problem (`tests/sim/test_libero.py` checks the round trip on every task
of the four suites' original files), and the edits a generation program makes return new scenes:

- `moved(region, dx, dy)` shifts a placement rectangle on the table, `swapped(a, b)` exchanges two
  objects' starting regions (LIBERO-Pro's position perturbation moves where objects start);
- `reworded(text)` gives the instruction other words (the instruction perturbation);
- `replaced(name, category)` swaps an object for another of LIBERO's object categories (the object one).

LIBERO samples each object's start inside its region on reset, so a scene is a distribution of starts, as
our `SceneSpec` programs are; a scene is valid when LIBERO builds the environment from the written file
and the scripted expert solves its starts (`sim.validity` for the family's scenes). Our own `SceneSpec`
describes our MuJoCo world (our objects, our fixtures), which LIBERO's meshes are not part of: the two
meet at the generation program, which writes one kind of scene or the other, not through a conversion.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

_LANGUAGE = re.compile(r"\(:language\s+(.*?)\)\s*$", re.MULTILINE)
_PROBLEM = re.compile(r"\(define\s+\(problem\s+([^\s)]+)\)")


@dataclass(frozen=True)
class Region:
    """A named region: a placement rectangle (x0, y0, x1, y1) on its target, or a part of a fixture (no
    ranges: a drawer's inside, a stove's cook region)."""

    name: str  # as the BDDL writes it, without the target's prefix
    target: str
    ranges: tuple[tuple[float, float, float, float], ...] = ()
    yaw: tuple[float, float] = (0.0, 0.0)

    @property
    def full_name(self) -> str:
        """The name predicates use: `<target>_<name>`."""
        return f"{self.target}_{self.name}"


@dataclass(frozen=True)
class LiberoScene:
    """One BDDL problem."""

    problem: str
    language: str
    regions: tuple[Region, ...]
    fixtures: dict[str, tuple[str, ...]]  # category → instance names
    objects: dict[str, tuple[str, ...]]
    init: tuple[tuple[str, ...], ...]  # atoms, e.g. ("on", "plate_1", "main_table_plate_region")
    goal: tuple[tuple[str, ...], ...]
    obj_of_interest: tuple[str, ...] = ()
    edits: tuple[str, ...] = field(default=(), compare=False)  # what was changed, in words

    # ---- reading and writing --------------------------------------------------------------------------
    @classmethod
    def from_bddl(cls, path: str | Path) -> LiberoScene:
        from sim.libero.env import quiet_robosuite

        quiet_robosuite()
        from libero.libero.envs.bddl_utils import robosuite_parse_problem

        text = Path(path).read_text(encoding="utf-8")
        d = robosuite_parse_problem(str(path))
        if d.get("scene_properties"):
            raise ValueError(f"{path}: scene properties ({sorted(d['scene_properties'])}) are not supported")
        regions = []
        for full, r in d["regions"].items():
            target = r["target"]
            name = full[len(target) + 1:] if full.startswith(target + "_") else full
            ranges = tuple(tuple(float(v) for v in rect) for rect in r.get("ranges") or ())
            yaw = tuple(float(v) for v in (r.get("yaw_rotation") or (0.0, 0.0)))
            regions.append(Region(name=name, target=target, ranges=ranges, yaw=(yaw[0], yaw[1])))  # type: ignore[arg-type]
        lang = _LANGUAGE.search(text)
        prob = _PROBLEM.search(text)
        return cls(problem=prob.group(1) if prob else d["problem_name"],
                   language=lang.group(1).strip() if lang else " ".join(d["language_instruction"]),
                   regions=tuple(regions),
                   fixtures={k: tuple(v) for k, v in d["fixtures"].items()},
                   objects={k: tuple(v) for k, v in d["objects"].items()},
                   init=tuple(tuple(a) for a in d["initial_state"]),
                   goal=tuple(tuple(a) for a in d["goal_state"]),
                   obj_of_interest=tuple(d.get("obj_of_interest") or ()))

    def to_bddl(self) -> str:
        def atom(a: tuple[str, ...]) -> str:
            return "(" + " ".join([a[0].capitalize(), *a[1:]]) + ")"

        lines = [f"(define (problem {self.problem})", "  (:domain robosuite)",
                 f"  (:language {self.language})", "    (:regions"]
        for r in self.regions:
            lines += [f"      ({r.name}", f"          (:target {r.target})"]
            if r.ranges:
                lines += ["          (:ranges ("]
                lines += [f"              ({' '.join(repr(float(v)) for v in rect)})" for rect in r.ranges]
                lines += ["            )", "          )"]
            if any(r.yaw):
                lines += ["          (:yaw_rotation (", f"              ({r.yaw[0]!r} {r.yaw[1]!r})",
                          "            )", "          )"]
            lines += ["      )"]
        lines += ["    )", "", "  (:fixtures"]
        lines += [f"    {' '.join(names)} - {cat}" for cat, names in self.fixtures.items()]
        lines += ["  )", "", "  (:objects"]
        lines += [f"    {' '.join(names)} - {cat}" for cat, names in self.objects.items()]
        lines += ["  )", ""]
        if self.obj_of_interest:
            lines += ["  (:obj_of_interest", *[f"    {o}" for o in self.obj_of_interest], "  )", ""]
        lines += ["  (:init", *[f"    {atom(a)}" for a in self.init], "  )", ""]
        lines += ["  (:goal", f"    (And {' '.join(atom(a) for a in self.goal)})", "  )", "", ")", ""]
        return "\n".join(lines)

    def write(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(self.to_bddl(), encoding="utf-8")
        return p

    # ---- edits -------------------------------------------------------------------------------------------
    def region(self, full_name: str) -> Region:
        for r in self.regions:
            if r.full_name == full_name or r.name == full_name:
                return r
        raise KeyError(f"no region {full_name!r}; regions: {', '.join(r.full_name for r in self.regions)}")

    def start_region(self, obj: str) -> Region:
        """The region `obj` starts in (its init atom `(On obj region)`)."""
        for a in self.init:
            if a[0] == "on" and a[1] == obj:
                return self.region(a[2])
        raise KeyError(f"{obj!r} has no (On {obj} region) in the scene's init")

    def moved(self, region: str, dx: float, dy: float) -> LiberoScene:
        """The scene with placement rectangle `region` shifted by (dx, dy) m on its target."""
        r = self.region(region)
        if not r.ranges:
            raise ValueError(f"region {r.full_name} is a fixture part, not a placement rectangle")
        shifted = tuple((x0 + dx, y0 + dy, x1 + dx, y1 + dy) for x0, y0, x1, y1 in r.ranges)
        regions = tuple(dataclasses.replace(x, ranges=shifted) if x == r else x for x in self.regions)
        return dataclasses.replace(self, regions=regions,
                                   edits=(*self.edits, f"moved {r.full_name} by ({dx:+.3f}, {dy:+.3f}) m"))

    def swapped(self, a: str, b: str) -> LiberoScene:
        """`a` starts in `b`'s region and `b` in `a`'s (the kind of position change LIBERO-Pro's `_swap`
        suites make)."""
        ra, rb = self.start_region(a).full_name, self.start_region(b).full_name
        if ra == rb:
            raise ValueError(f"{a} and {b} start in the same region {ra}: nothing to swap")

        def atom(x: tuple[str, ...]) -> tuple[str, ...]:
            if x[0] == "on" and x[1] == a:
                return ("on", a, rb)
            return ("on", b, ra) if x[0] == "on" and x[1] == b else x

        return dataclasses.replace(self, init=tuple(atom(x) for x in self.init),
                                   edits=(*self.edits, f"swapped {a} ({ra}) and {b} ({rb})"))

    def reworded(self, text: str) -> LiberoScene:
        if not text.strip() or "(" in text or ")" in text:
            raise ValueError(f"an instruction must be non-empty words without parentheses, got {text!r}")
        return dataclasses.replace(self, language=text.strip(),
                                   edits=(*self.edits, f"instruction: {text.strip()!r}"))

    def replaced(self, name: str, category: str) -> LiberoScene:
        """`name` becomes an object of `category` (same name, so the init and goal still refer to it)."""
        from sim.libero.env import quiet_robosuite

        quiet_robosuite()
        from libero.libero.envs.objects import OBJECTS_DICT

        if category not in OBJECTS_DICT:
            known = ", ".join(sorted(OBJECTS_DICT)[:8])
            raise KeyError(f"LIBERO has no object category {category!r}; e.g. {known}")
        objects: dict[str, tuple[str, ...]] = {}
        for cat, names in self.objects.items():
            rest = tuple(n for n in names if n != name)
            if rest:
                objects[cat] = rest
        if not any(name in names for names in self.objects.values()):
            raise KeyError(f"no object {name!r} in the scene")
        objects[category] = (*objects.get(category, ()), name)
        return dataclasses.replace(self, objects=objects, edits=(*self.edits, f"{name} is now a {category}"))
