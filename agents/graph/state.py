"""The graph's state: ids, paths (relative to the run directory) and small numbers — never arrays or
images. Everything bulky lives in the run directory (DESIGN §7); the state says where.

No key has a reducer: a node returns the keys it owns, complete, and they replace the old values. A node
re-run after a crash therefore returns the same update from the same input.
"""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict  # pydantic (LangGraph Studio's input schema) needs it on 3.11

SlotStatus = Literal["pending", "generated", "retry", "accepted", "failed"]
# what a slot's last error was: the writer raised, its program failed the static checks (or is for another
# family), the program raised in the sandbox on every run, too few of its scenes passed validation
SlotFailure = Literal["", "writer", "checks", "sandbox", "invalid_scenes"]


class Slot(TypedDict):
    """One arm's share of the round's generation budget and how getting it is going."""

    family: str
    mode_id: str  # "seed", a difficulty mode id, or a variant id ("dr", "var_<factor>_<side>")
    n: int  # accepted training scenes wanted
    held: int  # accepted measurement scenes wanted (before/after success)
    program: str  # generation program (.json sidecar, relative path); "" until one is written
    train_program: str  # training program for this arm; "" = the family's seed training program
    attempts: int  # program versions tried so far
    status: SlotStatus
    error: str  # the last error, fed back verbatim to the writer on a retry
    failure: SlotFailure  # the kind of the last error ("" none; a failed slot's reason in metrics.jsonl)
    candidates: list[str]  # generated scenes waiting for validation (relative .json paths)
    accepted: list[str]  # accepted training scenes
    held_scenes: list[str]  # accepted measurement scenes
    demos: list[str]  # expert episodes of the accepted training scenes (.npz)
    template: str  # procedural-memory entry (another family's program) to adapt (cross-family reuse); ""
    adapted: bool  # the slot's program is that entry's program adapted to this family (not the writer's)
    backfill_for: str  # mode id whose failed slot this seed slot makes up for; "" = none


class RoundState(TypedDict, total=False):
    """State of the whole run; one checkpoint after every node."""

    rounds: int  # rounds to run after the bootstrap
    node: str  # the node that wrote this checkpoint
    round: int  # current round (0 = bootstrap)
    policy: str  # current policy checkpoint (relative path)
    slots: list[Slot]  # this round's arms
    rollouts: list[str]  # this round's policy episodes on accepted scenes (.npz, relative)
    rollout_failures: int  # rollouts that errored (no episode)
    diagnoses: list[str]  # this round's diagnosis files (diagnoses/round_XX/<id>.json)
    critic_failures: list[str]  # episodes the critic could not diagnose, with the reason
    unusable_answers: dict[str, int]  # "critic" / "writer" → this round's answers that could not be used
    modes: list[str]  # "<mode>|<family>" validated this round (compile writes their programs)
    mode_programs: dict[str, list[str]]  # "<mode>|<family>" → [generation, training] program paths
    programs: list[str]  # program files written this round
    compiled: list[dict[str, Any]]  # per (mode, family) compiled this round: agreement, writer errors, files
    train_metrics: dict[str, Any]  # numbers from the round's policy update
    # family → expert demonstrations trained on in earlier rounds (the bootstrap's included; relative .npz):
    # what `learn.replay` adds to each round's update
    demo_history: dict[str, list[str]]
    measured: dict[str, Any]  # success before/after per arm, held-out ID/OOD success per family
    metrics: dict[str, Any]  # the last finished round's summary row (also in metrics.jsonl)
    cost: dict[str, dict[str, float]]  # node → cost of this round (seconds, LLM calls, tokens, sim steps)


def slot_key(slot: Slot) -> str:
    """`<mode>|<family>`: the arm a slot serves."""
    return f"{slot['mode_id']}|{slot['family']}"


def new_slot(family: str, mode_id: str, n: int, held: int, *, program: str = "", train_program: str = "",
             template: str = "", backfill_for: str = "") -> Slot:
    """A pending slot."""
    return Slot(family=family, mode_id=mode_id, n=n, held=held, program=program, train_program=train_program,
                attempts=0, status="pending", error="", failure="", candidates=[], accepted=[],
                held_scenes=[], demos=[], template=template, adapted=False,
                backfill_for=backfill_for)


def initial_state(rounds: int) -> RoundState:
    """What a fresh run starts from."""
    return RoundState(rounds=rounds, node="", round=0, policy="", slots=[], rollouts=[], rollout_failures=0,
                      diagnoses=[], critic_failures=[], unusable_answers={}, modes=[], mode_programs={},
                      programs=[], compiled=[], train_metrics={}, demo_history={}, measured={}, metrics={},
                      cost={})
