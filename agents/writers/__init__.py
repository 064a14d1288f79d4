"""The writers (DESIGN §5 steps 2 and 8): a difficulty mode → a generation program (`generation.py`), a
validated diagnosis → a training program (`training.py`, its LLM answers' schemas and grammar in
`answers.py`); rules templates without an LLM, checked LLM answers with one. `base.py` holds what both
share."""

from agents.writers.base import ProgramRejected, WriterConfig, WriterError
from agents.writers.generation import resolve_factor, write_generation_program
from agents.writers.training import write_training_program

__all__ = [
    "ProgramRejected", "WriterConfig", "WriterError", "resolve_factor", "write_generation_program",
    "write_training_program",
]
