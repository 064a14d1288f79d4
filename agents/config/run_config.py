"""`RunConfig`: one run of the loop (families, budget, rounds, agents, evaluation, resources), its JSON codec
(`to_json` / `from_json`, the run's `config.json`) and the check that a resumed run's method still means
what it meant when the run started.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agents.config.methods import METHODS, MethodConfig
from agents.config.parts import CompileConfig, CriticConfig, LearnConfig, VerifyConfig, WriterConfig
from memory.ledger import AllocationConfig
from sim.extension import EXTENDED_MAX_OBJECTS, SPACES, Space
from sim.pool import EXECUTORS

RUN_ALPHA = 0.1  # a run's significance level of the verification test (every run so far has used it)


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """One run of the loop: families, budget, rounds, agents, evaluation, resources."""

    # preset this config came from (for the record)
    preset: str = "default"
    # method name (see METHODS); resolved with `method_config`
    method: str = "coda"
    # task families the data engine works on
    families: tuple[str, ...] = ("pick_place", "articulated", "put_inside", "stack_insert")
    # the factor space every generator draws from (seed programs, the writers, exploration variants, domain
    # randomization, the critic): each family's own schema ("core") or that plus `sim.extension`'s factors
    # ("extended", about three times as many); a config.json written before this field is "core"
    space: Space = "core"
    # rounds after the bootstrap (round 0)
    rounds: int = 5
    # accepted training scenes per family per round: the generation budget every method gets
    budget: int = 8
    # accepted measurement scenes per arm per round (before/after success, never trained on)
    held: int = 2
    # arms (difficulty modes incl. the seed distribution) per family per round, at most
    max_arms: int = 3
    # retries of every agent call, each fed the previous attempt's exact error (K): a failing slot's writer
    # rewrites before it is reported failed, the critic's answers per failed episode, the writer's answers
    # per compiled program — at most 1 + K LLM calls per slot, episode or program (the agents' own
    # `critic.retries` and `writer.retries` stay 0, so this is the only retry loop)
    max_retries: int = 2
    # candidate scenes generated per needed scene on each attempt (validation rejects some)
    oversample: float = 1.5
    # expert demonstrations per family for the bootstrap SFT
    seed_demos: int = 20
    # failed rollouts the critic diagnoses per round, at most
    diagnose_max: int = 4
    # episodes per batch (targeted and control) when verifying a diagnosis
    verify_n: int = 12
    # the verification test: significance level (0.1 in a run), smallest countable batch, control factor
    # and its groups, which failures count (its `critic` is the run's `critic` below, set by the loop)
    verify: VerifyConfig = field(default_factory=lambda: VerifyConfig(alpha=RUN_ALPHA))
    # the critic: edit bounds and band of its diagnoses, keyframes, token budget (retries must stay 0).
    # Its edits may reach OOD values, where the exploration variants of every method (uniform, scalar,
    # CoDA's own) and domain randomization already take training scenes: clamped into the ID range, a
    # failure found on such a scene is diagnosed where the difficulty does not exist, and verification
    # refutes it (FINDINGS #2). The frozen evaluation suites are other scenes either way.
    critic: CriticConfig = field(default_factory=lambda: CriticConfig(retries=0, allow_ood=True))
    # the writers: edit bounds, band of side-only modes, new sources allowed, emphasis, token budgets
    # (retries must stay 0); OOD edits allowed with the critic's, so a mode's program recreates its value
    writer: WriterConfig = field(default_factory=lambda: WriterConfig(allow_ood=True))
    # compile: the training program's agreement threshold and the demonstrations it is checked on
    compile: CompileConfig = field(default_factory=CompileConfig)
    # LLM backend of the critic and writer (agents.llm registry: local, openai, replay, rules); "rules"
    # uses the rule-based critic over privileged state and template program edits (no model)
    llm: str = "local"
    # whether the critic's decision is the LLM's (with an LLM backend); off, the rules critic diagnoses and
    # the LLM writes the programs. Off by default: the embedded 1.5B's judgement over the rules critic's
    # candidates cost accuracy on both case sets it was measured on, 22 vs 28 and 20 vs 31 of 40, the second
    # never read before (docs/benchmarks.md, "The critic re-checked on cases never read"); `--llm-critic` or
    # an endpoint you trust turns it on. A config.json written before this field existed meant it on.
    llm_critic: bool = False
    # model of the LLM backend: a local GGUF key, or the endpoint's model name ("" = the backend's default)
    llm_model: str = ""
    # OpenAI-compatible endpoint root for llm="openai" (the key comes from $OPENAI_API_KEY, never from here)
    llm_base_url: str = ""
    # domain randomization: widen each numeric in-distribution range by this fraction of its width per side
    dr_widen: float = 0.5
    # what the diagnosis-driven methods' base arm draws from (`MethodConfig.seed_arm`): "seed", the seed
    # distribution, or "dr", domain randomization's widened program — its modes and variants then add to
    # the strongest simple baseline's scenes instead of the seed distribution's
    base_arm: Literal["seed", "dr"] = "seed"
    # what every generated arm (exploration variants, difficulty modes, their composites; every method
    # that makes them) draws the factors it does not edit from: "seed", the seed program's ranges, or
    # "dr", domain randomization's widened ones — so a targeted difficulty arrives among scenes that move
    # everything else, as the OOD a policy meets does (FINDINGS #48: how many factors a training scene
    # moves together is what lifts OOD success at this budget). On "dr" the base arm is the background
    # itself (domain randomization's arm, whatever `base_arm` says): CoDA is then DR plus its targeting
    background: Literal["seed", "dr"] = "seed"
    # uniform/scalar variants: new variants proposed per family per round
    variants: int = 2
    # factors every variant moves past its training range at once (uniform, scalar, and the exploration
    # arms of the diagnosis-driven methods draw them alike). 1 is DESIGN §5's single-factor variant; the
    # OOD a policy meets moves many factors together, and a policy trained on one moved factor at a time
    # does not reach it (FINDINGS #5)
    variant_factors: int = 1
    # CoDA: lead a family's arms with the composite of its stored difficulty modes (every mode's edits in
    # one generation program) once two modes have programs; memory is what holds modes found in different
    # rounds and families, so only it can compose them
    compose: bool = True
    # learning-progress allocation
    allocation: AllocationConfig = field(default_factory=AllocationConfig)
    # training
    learn: LearnConfig = field(default_factory=LearnConfig)
    # held-out evaluation per family (reported, never used for steering): in-distribution and OOD scenes
    eval_id: int = 10
    eval_ood: int = 10
    # first seed of the held-out evaluation scenes (disjoint from every generated scene's seed)
    eval_seed0: int = 900_000
    # control-step limit of policy rollouts; None keeps each scene's own limit
    rollout_max_steps: int | None = None
    # episode-pool worker processes (0 runs episodes in this process); with executor "ray" and no
    # ray_address, the CPUs of the local Ray instance
    workers: int = 2
    # where the simulation work (validate, roll out, verify, evaluate) runs: "local" (this machine's process
    # pool) or "ray" (`sim.ray_pool`; identical results, tests/sim/test_ray_pool.py)
    executor: str = "local"
    # the Ray cluster to join with executor "ray": None or "local" (start one here), "auto", "HOST:PORT"
    ray_address: str | None = None
    # sandbox worker processes
    sandbox_workers: int = 1
    # render a thumbnail next to every accepted scene
    thumbnails: bool = True
    # seed of everything random in the loop
    seed: int = 0

    def __post_init__(self) -> None:
        METHODS.get(self.method)  # "did you mean" on a typo
        if not self.families:
            raise ValueError("need at least one task family")
        if self.space not in SPACES:
            raise ValueError(f"unknown factor space {self.space!r}; spaces: {', '.join(SPACES)}")
        if self.space == "extended" and getattr(self.learn.policy, "max_objects", EXTENDED_MAX_OBJECTS) < \
                EXTENDED_MAX_OBJECTS:
            raise ValueError(f"learn.policy.max_objects = {self.learn.policy.max_objects}: a scene of the "
                             f"extended space holds up to {EXTENDED_MAX_OBJECTS} object tokens; set it to at "
                             f"least that (`agents.run --space extended` does)")
        if self.rounds < 0 or self.budget < 1 or self.held < 0 or self.max_arms < 1:
            raise ValueError("need rounds >= 0, budget >= 1, held >= 0, max_arms >= 1")
        if self.workers < 0 or self.sandbox_workers < 1:
            raise ValueError(f"need workers >= 0 (0 runs episodes in this process) and sandbox_workers >= 1, "
                             f"got {self.workers} and {self.sandbox_workers}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"unknown executor {self.executor!r}; executors: {', '.join(EXECUTORS)}")
        EXECUTORS.get(self.executor).check(self.workers, self.ray_address)
        if self.learn.sft_steps < 0 or (self.learn.sft_steps == 0 and not self.learn.init_policy):
            raise ValueError(f"learn.sft_steps = {self.learn.sft_steps}: the bootstrap needs SFT steps >= 1, "
                             "or 0 with learn.init_policy (a policy to start from as given)")
        for name in ("base_arm", "background"):
            if getattr(self, name) not in ("seed", "dr"):
                raise ValueError(f"{name} must be 'seed' or 'dr', got {getattr(self, name)!r}")
        if self.variant_factors < 1:
            raise ValueError(f"need variant_factors >= 1 (the factors a variant moves), got "
                             f"{self.variant_factors}")
        if self.max_retries < 0 or self.oversample < 1.0:
            raise ValueError("need max_retries >= 0 and oversample >= 1")
        if self.critic.retries or self.writer.retries:
            raise ValueError("critic.retries and writer.retries must be 0 in a run: the nodes retry every "
                             f"agent call themselves, max_retries={self.max_retries} times (one retry loop)")

    @property
    def method_config(self) -> MethodConfig:
        return METHODS.get(self.method)

    @property
    def verify_alpha(self) -> float:
        """The verification test's significance level (`verify.alpha`; a field of its own before)."""
        return self.verify.alpha

    @property
    def critic_kind(self) -> Literal["rules", "llm"]:
        """The critic: the rule-based one without a model or with `llm_critic` off, the LLM's otherwise (the
        writers are the LLM's whenever there is a model)."""
        return "llm" if self.llm != "rules" and self.llm_critic else "rules"

    def to_json(self) -> str:
        """The config's fields and, as `method_config`, what its method name meant when it was written: a
        method's definition can change (FINDINGS #28 made `coda` sparse), and a resumed run must not
        silently continue under another one (`check_method`)."""
        method = dataclasses.asdict(self.method_config)
        return json.dumps({**dataclasses.asdict(self), "method_config": method}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        """The config of a `to_json` text; a file written before `verify.alpha` existed keeps its
        `verify_alpha` as it, one written before `llm_critic` existed its LLM critic."""
        data = json.loads(text)
        if "verify_alpha" in data:
            data["verify"] = {**data.get("verify", {}), "alpha": data.pop("verify_alpha")}
        data.setdefault("llm_critic", True)  # written when an LLM backend always diagnosed
        return _build(cls, data)


def check_method(method: str, written: dict[str, Any]) -> None:
    """ValueError when `method` now names another configuration than `written` (a run's `method_config`),
    naming the method that matches what the run was started with."""
    now = dataclasses.asdict(METHODS.get(method))
    # a field added since the run was written takes its default: the run was made without it, as by default
    defaults = {f.name: f.default for f in dataclasses.fields(MethodConfig)
                if f.default is not dataclasses.MISSING}
    written = {**{k: v for k, v in defaults.items() if k not in written}, **written}
    if written == now:
        return
    same = [name for name in METHODS.names() if dataclasses.asdict(METHODS.get(name)) == written]
    diff = ", ".join(f"{k}: {written.get(k)!r} → {now[k]!r}" for k in now if written.get(k) != now[k])
    raise ValueError(f"method {method!r} has changed since this run was written ({diff})"
                     + (f"; what it was is now called {same[0]!r}: set \"method\": \"{same[0]}\" in its "
                        f"config.json to continue it" if same else "; no registered method matches it"))


def _build(cls: type, data: dict[str, Any]) -> Any:
    """A (nested) frozen dataclass from its `asdict` form; tuples come back as tuples."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):  # keys of removed fields (learn.threads) are ignored: old files load
        if f.name not in data:
            continue
        kwargs[f.name] = _value(hints[f.name], data[f.name])
    return cls(**kwargs)


def _value(hint: Any, v: Any) -> Any:
    if dataclasses.is_dataclass(hint) and isinstance(v, dict):
        return _build(hint, v)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        if isinstance(v, dict) and "type" in v and all(dataclasses.is_dataclass(a) for a in inner):
            from coda_policy.registry import CONFIGS  # a policy config: its backend by name

            return _build(CONFIGS.get(v["type"]), v)
        return v if v is None or len(inner) != 1 else _value(inner[0], v)
    if origin is tuple and isinstance(v, list):
        return tuple(v)
    return v


def config_path(run_dir: str | Path) -> Path:
    """Where a run directory keeps its `RunConfig` (`to_json`)."""
    return Path(run_dir) / "config.json"


def room_for_space(policy: Any, space: Space) -> Any:
    """`policy` with room for every object token a scene of `space` can hold: an object-token policy's
    `max_objects` raised to `EXTENDED_MAX_OBJECTS` in the extended space (a bound, not a weight: the
    network is the same); any other policy as it is."""
    limit = getattr(policy, "max_objects", None)
    if space != "extended" or limit is None or limit >= EXTENDED_MAX_OBJECTS:
        return policy
    return dataclasses.replace(policy, max_objects=EXTENDED_MAX_OBJECTS)
