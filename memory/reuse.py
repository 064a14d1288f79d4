"""Program-reuse log: which stored program pair was used for which family in which round. The paper's
cross-family transfer claim is counted here (a pair written for family A used, as is or adapted, for B).

A JSON file (`<memory dir>/reuse.json`, written atomically) keyed by (entry, family, round), so a resumed
round that notes the same use again counts it once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memory.types import ProgramEntry


class ReuseLog:
    """Uses of procedural-memory entries; `record` is idempotent per (entry, family, round)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._events: dict[str, dict[str, Any]] = (
            json.loads(self.path.read_text()) if self.path.exists() else {})

    def record(self, entry: ProgramEntry, family: str, round_no: int) -> bool:
        """Note a use of `entry` for `family` in `round`; returns whether it crosses families."""
        cross = entry.family != family
        key = f"{entry.id}|{family}|{round_no}"
        if key not in self._events:
            self._events[key] = {"entry_id": entry.id, "mode_id": entry.mode_id, "from_family": entry.family,
                                 "for_family": family, "round": round_no, "cross_family": cross}
            tmp = self.path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(self._events, indent=1, sort_keys=True))
            os.replace(tmp, self.path)
        return cross

    def events(self) -> list[dict[str, Any]]:
        return [self._events[k] for k in sorted(self._events)]

    def stats(self) -> dict[str, Any]:
        """Uses, cross-family uses, and cross-family uses per "A->B" family pair."""
        pairs: dict[str, int] = {}
        for e in self._events.values():
            if e["cross_family"]:
                k = f"{e['from_family']}->{e['for_family']}"
                pairs[k] = pairs.get(k, 0) + 1
        cross = sum(e["cross_family"] for e in self._events.values())
        return {"uses": len(self._events), "cross_family": cross, "by_pair": pairs}
