"""`ProgramRejected`: the expected failure of a rules agent (critic or writer) on an input it has no answer
for. The graph reports it, retries the call or back-fills the slot from the seed program; any other
exception out of an agent is a bug and stops the run.

No imports: the factor-space code, the critic, the writers and the graph nodes all raise or catch it.
"""

from __future__ import annotations


class ProgramRejected(ValueError):
    """A program (or diagnosis) the rules cannot derive for this input: no factor of the kind asked for, no
    side or choice to edit, nothing left to back off, a template edit failing its checks, no editable
    factor shared with the failing scene. A `ValueError`, so callers that caught those still do."""
