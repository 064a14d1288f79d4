"""The injected dependencies are typed with the real classes (imported for type checking only): every
annotation of `Deps` and of the `Agents` protocol resolves."""

from __future__ import annotations

import typing

import numpy as np

import agents.graph.deps as deps_module
from agents.graph.deps import Agents, Deps
from agents.llm import LLM, CallLog
from memory import Diagnosis, DifficultyMode, Ledger, Memory, Verdict
from programs.model import GenerationProgram, TrainingProgram
from sandbox import SandboxPool
from sim.episode import Episode
from sim.pool import EpisodePool
from sim.ray_pool import RayEpisodePool

NAMES = {"np": np, "LLM": LLM, "CallLog": CallLog, "Diagnosis": Diagnosis, "DifficultyMode": DifficultyMode,
         "Ledger": Ledger, "Memory": Memory, "Verdict": Verdict, "GenerationProgram": GenerationProgram,
         "TrainingProgram": TrainingProgram, "SandboxPool": SandboxPool, "Episode": Episode,
         "EpisodePool": EpisodePool, "RayEpisodePool": RayEpisodePool}


def test_deps_fields_are_the_real_types():
    hints = typing.get_type_hints(Deps, globalns={**vars(deps_module), **NAMES})
    assert hints["sandbox"] is SandboxPool and hints["episodes"] == EpisodePool | RayEpisodePool
    assert hints["memory"] == Memory | None and hints["llm"] == LLM | None


def test_agents_protocol_signatures_resolve():
    for name in ("diagnose", "verify", "write_generation_program", "write_training_program"):
        hints = typing.get_type_hints(getattr(Agents, name), globalns={**vars(deps_module), **NAMES})
        assert "return" in hints and hints["return"] is not typing.Any, name
