"""A run's configuration, split by what it is: the methods (`methods.py`: `MethodConfig`, `METHODS`), the
parts of a run's config, one per stage (`parts.py`: learn, critic, writer, verify, compile), the run config
and its JSON codec (`run_config.py`: `RunConfig`), and the named presets (`presets.py`: `PRESETS`).
Every name is importable from `agents.config`.
"""

from agents.config.methods import METHODS, Generator, MethodConfig, Update
from agents.config.parts import (
    WEIGHTED_UPDATE_BEFORE,
    CompileConfig,
    CriticConfig,
    LearnConfig,
    VerifyConfig,
    WriterConfig,
)
from agents.config.presets import PRESETS, get_preset
from agents.config.run_config import RUN_ALPHA, RunConfig, check_method, config_path

__all__ = ["METHODS", "PRESETS", "RUN_ALPHA", "WEIGHTED_UPDATE_BEFORE", "CompileConfig", "CriticConfig",
           "Generator", "LearnConfig", "MethodConfig", "RunConfig", "Update", "VerifyConfig", "WriterConfig",
           "check_method", "config_path", "get_preset"]
