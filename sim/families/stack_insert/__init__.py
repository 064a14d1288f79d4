"""Stack and insert: put block A on block B, or push a square peg into the hole of a fixed hole block."""

from sim.families.stack_insert.family import StackInsert
from sim.families.stack_insert.scene import BASE, HOLE, PEG, PIECE

__all__ = ["BASE", "HOLE", "PEG", "PIECE", "StackInsert"]
