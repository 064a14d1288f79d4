"""`allocate`: start a round — choose each family's arms (difficulty modes or variants, with the program
that serves each) and split the family's generation budget over them.

Every method gives each family exactly `budget` training scenes (DESIGN §6); what differs is the arms:
- seed: the seed program; domain_randomization: the seed program with widened ranges;
- uniform: random variants (`variant_factors` factors past their training ranges), budget split evenly;
- scalar: variants kept or dropped by their measured success rate alone (nearest 50 % first);
- learnability: the variants measured most learnable, p(1 − p) (p: the arm's success on its measurement
  scenes after the last round), kept, one fresh random variant a round beside them, and the budget split
  by p(1 − p) (`memory.ledger`, score "learnability") — "No Regrets"' sampling for learnability;
- critic: the previous round's validated diagnoses, nothing older; memory (CoDA): difficulty modes from
  memory (including other families' modes on a factor this family has) led by their composite (every
  mode's edits in one program, `RunConfig.compose`), budget by learning progress.
Diagnosis-driven methods (critic, memory) keep an arm on the seed distribution (unless
`MethodConfig.seed_arm` is off) and fill the arms they have no mode for with exploration variants
(random variants, as `uniform` draws them): failures there are what the critic diagnoses, so
a policy that solves its training distribution still meets its next difficulty.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from agents.graph.deps import Deps
from agents.graph.nodes.arms import (
    arm_base,
    composite_program,
    editable_factors,
    load_program,
    mode_edits,
    save_program,
    seed_programs,
    variant_id,
    variant_program,
)
from agents.graph.nodes.work import stable_seed
from agents.graph.state import RoundState, Slot, new_slot
from programs.factor_space import variant_sides
from programs.seeds import background_program, seed_generation

ArmPrograms = dict[str, str]  # mode_id, program, train_program, template


def split_budget(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Integer shares of `total` proportional to `weights` (largest remainder, ties to earlier keys)."""
    keys = list(weights)
    wsum = sum(weights.values())
    quotas = {k: total * (weights[k] / wsum if wsum > 0 else 1 / len(keys)) for k in keys}
    out = {k: math.floor(q + 1e-9) for k, q in quotas.items()}
    for k in sorted(keys, key=lambda k: (-(quotas[k] - out[k]), keys.index(k)))[: total - sum(out.values())]:
        out[k] += 1
    return out


def _seed_arm(deps: Deps, family: str) -> ArmPrograms:
    gen, train = seed_programs(deps, family)
    return {"mode_id": "seed", "program": gen, "train_program": train, "template": ""}


def _dr_arm(deps: Deps, family: str) -> ArmPrograms:
    """Domain randomization's arm: the seed arm with every range widened (`dr_program`)."""
    prog = save_program(deps, background_program(family, "dr", deps.config.dr_widen), 0)
    return {**_seed_arm(deps, family), "mode_id": "dr", "program": prog}


def _base_arms(deps: Deps, family: str) -> list[ArmPrograms]:
    """What a diagnosis-driven family's arms start from: the seed arm (domain randomization's with
    `RunConfig.base_arm` "dr", or on a "dr" `RunConfig.background`: the base arm is the background itself),
    or nothing with `MethodConfig.seed_arm` off (modes and exploration variants then take the whole
    budget)."""
    cfg = deps.config
    if not cfg.method_config.seed_arm:
        return []
    return [_dr_arm(deps, family) if "dr" in (cfg.base_arm, cfg.background) else _seed_arm(deps, family)]


def _random_variants(deps: Deps, family: str, round_no: int, k: int, tag: str) -> list[ArmPrograms]:
    """`k` distinct variants of the seed program, each moving `variant_factors` distinct factors (fewer
    when the family has fewer), factors and sides drawn uniformly, laid on the run's background
    (`arms.arm_base`: the rest of the factors as the seed or domain randomization draws them)."""
    seed, base = seed_generation(family), arm_base(deps, family)
    rng = np.random.default_rng(stable_seed(deps.config.seed, round_no, family, tag))
    factors = [f for f in editable_factors(seed) if variant_sides(f)]  # `variant_pins` off: never drawn
    moved = min(deps.config.variant_factors, len(factors))
    arms: dict[str, ArmPrograms] = {}
    for _ in range(20 * k):
        if len(arms) >= k or not factors:
            break
        if moved == 1:  # the single-factor draw as before variant_factors: earlier runs draw the same arms
            picked = [factors[int(rng.integers(len(factors)))]]
        else:
            picked = [factors[int(i)] for i in sorted(rng.choice(len(factors), size=moved, replace=False))]
        moves = []
        for f in picked:
            sides = variant_sides(f)
            moves.append((f.name, sides[int(rng.integers(len(sides)))]))
        mode = variant_id(moves)
        if mode not in arms:
            program = variant_program(base, moves, round_no, ranges=seed)
            _, train = seed_programs(deps, family)
            arms[mode] = {"mode_id": mode, "program": save_program(deps, program, round_no),
                          "train_program": train, "template": ""}
    return list(arms.values())


def _scalar_arms(deps: Deps, state: RoundState, family: str,
                 round_no: int) -> tuple[list[ArmPrograms], dict[str, float]]:
    """Known variants of this family plus new proposals, ranked by |success − 0.5| (unmeasured: 0.5)."""
    known = [_known_arm(state, key) for key in state.get("mode_programs", {}) if key.endswith(f"|{family}")]
    variants = _random_variants(deps, family, round_no, deps.config.variants, "scalar")
    arms = {a["mode_id"]: a for a in [_seed_arm(deps, family), *known, *variants]}
    score = {}
    for mode in arms:
        hist = deps.ledger.history(mode, family) if deps.ledger is not None else []
        p = hist[-1].success if hist else 0.5
        score[mode] = 1.0 - abs(p - 0.5) * 2 + 0.05  # the learnable zone first; never zero
    keep = sorted(arms, key=lambda m: (-score[m], m))[: deps.config.max_arms]
    return [arms[m] for m in keep], {m: score[m] for m in keep}


def _learnability_arms(deps: Deps, state: RoundState, family: str,
                       round_no: int) -> tuple[list[ArmPrograms], dict[str, int]]:
    """The family's measured variants with the highest learnability p(1 − p) (none at p = 0 or 1), at most
    `max_arms` − 1 of them, then fresh random variants (as `uniform` draws them) in the arms left; the
    budget by learnability through the same allocation CoDA's modes get (`memory.ledger.allocate_family`),
    so a variant never measured counts as promising."""
    from memory.ledger import allocate_family

    cfg = deps.config
    rule = dataclasses.replace(cfg.allocation, score="learnability")
    known = {}
    for key in state.get("mode_programs", {}):
        mode, fam = key.split("|")
        value = deps.ledger.learnability(mode, family) if fam == family else None
        if value:  # measured and neither always solved nor never
            known[mode] = (value, _known_arm(state, key))
    keep = sorted(known, key=lambda m: (-known[m][0], m))[: max(cfg.max_arms - 1, 0)]
    arms = [known[m][1] for m in keep]
    free = cfg.max_arms - len(arms)
    have = {a["mode_id"] for a in arms}
    fresh = [a for a in _random_variants(deps, family, round_no, free + len(have), "learnability")
             if a["mode_id"] not in have]
    arms += fresh[:free]
    counts = allocate_family(deps.ledger, family, [a["mode_id"] for a in arms], cfg.budget, rule)
    return arms, counts


def _known_arm(state: RoundState, key: str) -> ArmPrograms:
    gen, train = state["mode_programs"][key]
    return {"mode_id": key.split("|")[0], "program": gen, "train_program": train, "template": ""}


def _critic_arms(deps: Deps, state: RoundState, family: str, round_no: int) -> list[ArmPrograms]:
    """The base arms (`_base_arms`), the modes validated in the last round for this family (their programs
    if compiled), then exploration variants in the arms left."""
    arms = _base_arms(deps, family)
    for key in state.get("modes", []):
        mode, fam = key.split("|")
        if fam != family or len(arms) >= deps.config.max_arms:
            continue
        gen, train = state.get("mode_programs", {}).get(key, ["", ""])
        arms.append({"mode_id": mode, "program": gen, "train_program": train, "template": ""})
    return _explore(deps, family, round_no, arms)


def _explore(deps: Deps, family: str, round_no: int, arms: list[ArmPrograms]) -> list[ArmPrograms]:
    """`arms` plus random single-factor variants up to `max_arms` (none that repeats an arm's mode)."""
    free = deps.config.max_arms - len(arms)
    if free <= 0:
        return arms
    have = {a["mode_id"] for a in arms}
    extra = [a for a in _random_variants(deps, family, round_no, free + len(have), "explore")
             if a["mode_id"] not in have]
    return arms + extra[:free]


def _carries(mode: Any, base: Any, allow_ood: bool = True) -> bool:
    """A mode founded in another family reaches `base`'s family when its factor maps onto one of base's by
    meaning (same kind, same suffix: pick-place `obj_x` is stack/insert `piece_x`) — and, for a choice,
    when one of the mode's values is a value that factor can take (put-inside's `container` = drawer is no
    value of stack/insert's `task`: offered, its writer could only fail)."""
    import json

    from programs.errors import ProgramRejected
    from programs.factor_space import allowed_choices, reference, resolve_factor

    try:
        name = resolve_factor(mode.factor, base, mode.families[0] if mode.families else None)
    except ProgramRejected:
        return False
    ref = reference(base, name)
    if ref.type != "choice" or (name == mode.factor and not mode.values):
        return True

    def parsed(v: Any) -> Any:
        try:
            return json.loads(v) if isinstance(v, str) else v
        except ValueError:
            return v

    allowed = allowed_choices(ref, allow_ood)
    return any(parsed(v) in allowed for v in mode.values or ())


def _memory_arms(deps: Deps, family: str, round_no: int) -> tuple[list[ArmPrograms], dict[str, int] | None]:
    """CoDA: modes seen in this family or on one of its factors elsewhere — led, once two of them have
    programs, by their composite (every mode's difficulty in one scene) — then exploration variants in the
    arms left; the budget by learning progress (unmeasured arms count as promising)."""
    from memory.ledger import allocate_family, arm_scores

    cfg, mem = deps.config, deps.memory
    base = arm_base(deps, family)
    modes = [m.id for m in mem.modes_for_family(family, maps=lambda m: _carries(m, base,
                                                                                 cfg.writer.allow_ood))]
    scores = arm_scores(deps.ledger, family, modes, cfg.allocation)
    mode_arms, parts = [], []
    for mode in modes:
        entries = mem.programs_for(mode, family)
        own = [e for e in entries if e.family == family]
        if own:
            arm = {"mode_id": mode, "program": _sidecar(own[0].generation_path),
                   "train_program": _sidecar(own[0].training_path), "template": ""}
        else:
            arm = {"mode_id": mode, "program": "", "train_program": "",
                   "template": entries[0].id if entries else ""}
        mode_arms.append(arm)
        if entries:
            parts.append((mode, entries[0], arm))
    rank = {m: i for i, m in enumerate(sorted(modes, key=lambda m: (-scores[m], m)))}  # strongest first
    arms = _base_arms(deps, family)
    if cfg.compose and cfg.method_config.compose:  # the stronger mode's edit wins where two edit one factor
        mix = _composite_arm(deps, family, base, sorted(parts, key=lambda p: rank[p[0]]), round_no)
        if mix is not None:
            arms.append(mix)
    room = max(cfg.max_arms - len(arms), 0)
    if len(mode_arms) > room:
        mode_arms = sorted(mode_arms, key=lambda a: rank[a["mode_id"]])[:room]
    arms += mode_arms
    arms = _explore(deps, family, round_no, arms)
    rule = cfg.allocation if cfg.method_config.allocation == "progress" else dataclasses.replace(
        cfg.allocation, epsilon=1.0)  # the allocation ablated: every arm the same share
    counts = allocate_family(deps.ledger, family, [a["mode_id"] for a in arms], cfg.budget, rule)
    return arms, counts


def _composite_arm(deps: Deps, family: str, base: Any, parts: Sequence[tuple[str, Any, ArmPrograms]],
                   round_no: int) -> ArmPrograms | None:
    """One arm whose program applies every stored mode's edits at once (`arms.composite_program`), trained
    with the strongest mode's training program (the family's seed one when that mode has none here yet);
    None when fewer than two modes have an edit that carries over to `family`."""
    from programs.errors import ProgramRejected

    edits = []
    for mode, entry, _ in parts:
        source = load_program(deps, _sidecar(entry.generation_path))
        try:
            edits.append((mode, mode_edits(source, arm_base(deps, entry.family), base,
                                            deps.config.writer.allow_ood)))
        except ProgramRejected:
            continue
    program = composite_program(base, edits, round_no)
    if program is None:
        return None
    lead = next(arm for mode, _, arm in parts if mode == edits[0][0])
    _, seed_train = seed_programs(deps, family)
    return {"mode_id": program.mode_id, "program": save_program(deps, program, round_no),
            "train_program": lead["train_program"] or seed_train, "template": ""}


def _sidecar(path: str) -> str:
    return str(path)[:-3] + ".json" if str(path).endswith(".py") else str(path)


def _family_slots(deps: Deps, state: RoundState, family: str, round_no: int) -> list[Slot]:
    cfg, gen = deps.config, deps.config.method_config.generator
    counts: dict[str, int] | None = None
    weights: dict[str, float] | None = None
    if gen == "seed":
        arms = [_seed_arm(deps, family)]
    elif gen == "domain_randomization":
        arms = [_dr_arm(deps, family)]
    elif gen == "uniform":
        arms = _random_variants(deps, family, round_no, max(1, min(cfg.variants, cfg.max_arms)), "uniform")
    elif gen == "scalar":
        arms, weights = _scalar_arms(deps, state, family, round_no)
    elif gen == "learnability":
        arms, counts = _learnability_arms(deps, state, family, round_no)
    elif gen == "critic":
        arms = _critic_arms(deps, state, family, round_no)
    else:
        arms, counts = _memory_arms(deps, family, round_no)
    if counts is None:
        counts = split_budget(cfg.budget, weights or {a["mode_id"]: 1.0 for a in arms})
    return [new_slot(family, a["mode_id"], counts[a["mode_id"]], cfg.held, program=a["program"],
                     train_program=a["train_program"], template=a["template"])
            for a in arms if counts.get(a["mode_id"], 0) > 0]


def allocate(state: RoundState, deps: Deps) -> dict[str, Any]:
    """Next round's slots; per-round keys are reset."""
    round_no = state.get("round", 0) + 1
    slots: list[Slot] = []
    for family in deps.config.families:
        slots += _family_slots(deps, state, family, round_no)
    mode_programs = dict(state.get("mode_programs", {}))
    for s in slots:
        if s["program"] and s["mode_id"] != "seed":
            mode_programs[f"{s['mode_id']}|{s['family']}"] = [s["program"], s["train_program"]]
    fresh = {"rollouts": [], "rollout_failures": 0, "diagnoses": [], "critic_failures": [],
             "unusable_answers": {}, "modes": [], "programs": [], "compiled": [], "train_metrics": {},
             "measured": {}, "cost": {}}
    return {"round": round_no, "slots": slots, "mode_programs": mode_programs, **fresh}


def summary(update: Mapping[str, Any]) -> str:
    """One line for the progress display."""
    slots: Sequence[Slot] = update.get("slots", [])
    return ", ".join(f"{s['family']}:{s['mode_id']}×{s['n']}" for s in slots)
