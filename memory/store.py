"""`Memory`: CoDA's episodic / semantic / procedural memory (DESIGN §5 step 7) in a Chroma
`PersistentClient` under `<run dir>/memory`, plus the learning-progress ledger and the program-reuse log.

Collections (documents embedded with our offline MiniLM, cosine space):
- `episodic`: one entry per episode (`ep_<episode id>`) and one per diagnosis (`dx_<hash>`): the evidence.
- `semantic`: one entry per difficulty mode; document = description, metadata = factor, phase, families.
- `procedural`: generation + training program pairs indexed by mode and family.

Every write is an upsert keyed by a stable id, so a resumed run that repeats a step changes nothing.
One process owns a memory directory at a time (Chroma's local store is not multi-process safe).

Joining a mode (`add_validated`) — the rule:
1. Candidates are modes with the same factor group, factor name and phase (phase labels are the
   families' shared vocabulary: approach, grasp, lift, …), whatever family founded them.
2. The side must be compatible: equal, or either unknown (None). For choice edits (side "values") the
   mode's values and the diagnosis's must intersect, if both have any.
3. Similarity = the highest cosine between the new explanation and the mode's description or any of
   its member explanations (up to `join_members` of them). The best candidate with similarity ≥
   `join_threshold` is joined; otherwise a new mode is founded. The text gate only separates different
   mechanisms behind the same factor and phase: MiniLM does not tell "too far" from "too close", which is
   why the side is structural.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
from chromadb.config import Settings

from memory.embedding import MiniLMEmbeddingFunction
from memory.ledger import AllocationConfig, Ledger
from memory.reuse import ReuseLog
from memory.types import Diagnosis, DifficultyMode, EpisodeRecord, ProgramEntry, ProgressPoint, Verdict, slug


@dataclass(frozen=True, kw_only=True)
class MemoryConfig:
    """How memory decides joins and reports progress."""

    # Minimum cosine similarity (MiniLM) between a new explanation and a mode's texts to join it. Paraphrases
    # of one mechanism score ~0.65–0.75, unrelated mechanisms of the same factor/phase ~0.35–0.6.
    join_threshold: float = 0.5
    # How many of a mode's member explanations the similarity looks at (the first ones stored).
    join_members: int = 32
    # EMA weight for the learning progress shown on `DifficultyMode` (match the allocation's α).
    alpha: float = AllocationConfig.alpha


def _dump(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


def found_mode(d: Diagnosis, family: str, round_no: int, taken: Iterable[str] = ()) -> DifficultyMode:
    """The difficulty mode a validated diagnosis founds when no stored mode matches it (its id unique
    among `taken`)."""
    stem = "_".join([slug(d.factor), slug(d.phase)] + ([d.side] if d.side in ("low", "high") else []))
    taken = set(taken)
    mode_id, k = stem, 2
    while mode_id in taken:
        mode_id, k = f"{stem}_{k}", k + 1
    where = f" ({d.side} side)" if d.side in ("low", "high") else ""
    return DifficultyMode(
        id=mode_id, description=f"{d.factor_key}{where} during {d.phase}: {d.explanation}",
        factor_group=d.factor_group, factor=d.factor, phase=d.phase, side=d.side,
        values=_edit_values(d), families=(family,), evidence_ids=(d.episode_id,), diagnosis_ids=(d.id,),
        created_round=round_no)


def _edit_values(d: Diagnosis) -> tuple[str, ...]:
    """JSON of the choice values a diagnosis's edit names for its own factor (side "values" only)."""
    if d.side != "values" or d.factor not in d.edit:
        return ()
    v = d.edit[d.factor]
    vals = v if isinstance(v, tuple | list) else (v,)
    return tuple(sorted({json.dumps(x) for x in vals}))


def _where(conds: list[dict[str, Any]]) -> dict[str, Any]:
    """Chroma wants `$and` only for two or more conditions."""
    return {"$and": conds} if len(conds) > 1 else conds[0]


class Memory:
    """The run's memory. `Memory(run_dir / "memory")`; use as a context manager or call `close()`."""

    def __init__(self, path: str | Path, *, config: MemoryConfig = MemoryConfig(),
                 embedding: MiniLMEmbeddingFunction | None = None) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.config = config
        self._ef = embedding or MiniLMEmbeddingFunction()
        self._client = chromadb.PersistentClient(path=str(self.path),
                                                 settings=Settings(anonymized_telemetry=False))
        self.episodic = self._collection("episodic")
        self.semantic = self._collection("semantic")
        self.procedural = self._collection("procedural")
        self.ledger = Ledger(self.path / "ledger.json")
        self.reuse = ReuseLog(self.path / "reuse.json")

    def _collection(self, name: str) -> Any:
        return self._client.get_or_create_collection(name, embedding_function=self._ef,
                                                     configuration={"hnsw": {"space": "cosine"}})

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- episodic -------------------------------------------------------------------------------------

    def add_episode(self, record: EpisodeRecord, diagnosis: Diagnosis | None = None) -> None:
        """Store an episode (and the critic's diagnosis of it, if any) as evidence."""
        self.add_episodes([record], [diagnosis])

    def add_episodes(self, records: Sequence[EpisodeRecord],
                     diagnoses: Sequence[Diagnosis | None] | None = None) -> None:
        """Batched `add_episode` (one embedding pass)."""
        diagnoses = list(diagnoses) if diagnoses is not None else [None] * len(records)
        if len(diagnoses) != len(records):
            raise ValueError("records and diagnoses must have the same length")
        if not records:
            return
        docs, metas = [], []
        for r, d in zip(records, diagnoses, strict=True):
            outcome = "success" if r.success else f"failure in {r.failing_phase or 'unknown phase'}"
            docs.append(d.text() if d else f"{r.family} scene {r.scene_id}: {outcome}")
            metas.append({**r.model_dump(mode="json", exclude={"failing_phase"}),
                          "failing_phase": r.failing_phase or "", "kind": "episode",
                          "diagnosis_id": d.id if d else ""})
        self.episodic.upsert(ids=[f"ep_{r.episode_id}" for r in records], documents=docs, metadatas=metas)
        fams = {d.id: r.family for r, d in zip(records, diagnoses, strict=True) if d is not None}
        self._put_diagnoses([d for d in diagnoses if d is not None], fams)

    def _put_diagnoses(self, diagnoses: Sequence[Diagnosis], families: dict[str, str],
                       extra: dict[str, Any] | None = None) -> None:
        """Upsert diagnosis entries, keeping what a later step already wrote (verdict, mode)."""
        if not diagnoses:
            return
        ids = list(dict.fromkeys(d.id for d in diagnoses))
        by_id = {d.id: d for d in diagnoses}
        old = self.episodic.get(ids=ids, include=["metadatas"])
        kept = {i: m for i, m in zip(old["ids"], old["metadatas"], strict=True)}
        metas = []
        for i in ids:
            d = by_id[i]
            base = {"kind": "diagnosis", "status": "pending", "mode_id": "", "verdict": "", "family": ""}
            meta = {**base, **kept.get(i, {}), **(extra or {})}
            meta.update(episode_id=d.episode_id, factor_key=d.factor_key, phase=d.phase, side=d.side or "",
                        critic_id=d.critic_id, confidence=d.confidence, explanation=d.explanation,
                        json=d.model_dump_json())
            meta["family"] = families.get(i) or meta["family"]
            metas.append(meta)
        self.episodic.upsert(ids=ids, documents=[by_id[i].text() for i in ids], metadatas=metas)

    def episode(self, episode_id: str) -> EpisodeRecord | None:
        got = self.episodic.get(ids=[f"ep_{episode_id}"], include=["metadatas"])
        return self._episode_from(got["metadatas"][0]) if got["ids"] else None

    @staticmethod
    def _episode_from(meta: dict[str, Any]) -> EpisodeRecord:
        fields = {k: meta[k] for k in EpisodeRecord.model_fields if k in meta}
        fields["failing_phase"] = meta.get("failing_phase") or None
        return EpisodeRecord.model_validate(fields)

    def diagnoses(self, mode_id: str | None = None, status: str | None = None) -> list[Diagnosis]:
        """Stored diagnoses, optionally of one mode and/or with one verdict status."""
        conds: list[dict[str, Any]] = [{"kind": "diagnosis"}]
        conds += [{"mode_id": mode_id}] if mode_id is not None else []
        conds += [{"status": status}] if status is not None else []
        got = self.episodic.get(where=_where(conds), include=["metadatas"])
        found = (Diagnosis.model_validate_json(m["json"]) for m in got["metadatas"])
        return sorted(found, key=lambda d: d.id)

    def search_episodes(self, text: str, k: int = 5, *, family: str | None = None,
                        failed_only: bool = True) -> list[tuple[EpisodeRecord, Diagnosis | None, float]]:
        """Episodes whose evidence text is nearest to `text`, with their diagnosis and similarity."""
        conds: list[dict[str, Any]] = [{"kind": "episode"}]
        conds += [{"family": family}] if family else []
        conds += [{"success": False}] if failed_only else []
        hits = self._query(self.episodic, text, k, _where(conds))
        return [(self._episode_from(meta), self.diagnosis(meta["diagnosis_id"]), sim) for meta, sim in hits]

    def diagnosis(self, diagnosis_id: str) -> Diagnosis | None:
        if not diagnosis_id:
            return None
        got = self.episodic.get(ids=[diagnosis_id], include=["metadatas"])
        return Diagnosis.model_validate_json(got["metadatas"][0]["json"]) if got["ids"] else None

    def _query(self, col: Any, text: str, k: int, where: dict[str, Any] | None) -> list[tuple[dict, float]]:
        n = min(k, col.count())
        if n <= 0:
            return []
        res = col.query(query_texts=[text], n_results=n, where=where, include=["metadatas", "distances"])
        return [(m, 1.0 - d) for m, d in zip(res["metadatas"][0], res["distances"][0], strict=True)]

    # ---- semantic: difficulty modes -------------------------------------------------------------------

    def add_validated(self, diagnosis: Diagnosis, verdict: Verdict, family: str, *,
                      round_no: int = 0) -> DifficultyMode:
        """File a validated diagnosis under a difficulty mode: join the matching one or found a new one
        (rule in the module docstring). Repeating the call returns the same mode unchanged."""
        if verdict.status != "validated":
            raise ValueError(f"add_validated needs a validated verdict, got {verdict.status!r}")
        if verdict.diagnosis_id != diagnosis.id:
            raise ValueError(f"verdict is for {verdict.diagnosis_id}, not for diagnosis {diagnosis.id}")
        stored = self._stored_modes()
        for m in stored:
            if diagnosis.id in m.diagnosis_ids:
                self._file_diagnosis(diagnosis, verdict, family, m.id)
                return self.mode(m.id)
        target = self._match(diagnosis, stored)
        if target is not None:
            mode = self._join(target, diagnosis, family)
        else:
            mode = self._found(diagnosis, family, round_no, stored)
        self._put_mode(mode)  # mode first: a crash before the next line is healed by the check above
        self._file_diagnosis(diagnosis, verdict, family, mode.id)
        return self.mode(mode.id)

    def add_verdict(self, diagnosis: Diagnosis, verdict: Verdict, family: str, *,
                    round_no: int = 0) -> DifficultyMode | None:
        """Record any verdict as evidence; a validated one is also filed under a mode (returned)."""
        if verdict.status == "validated":
            return self.add_validated(diagnosis, verdict, family, round_no=round_no)
        self._file_diagnosis(diagnosis, verdict, family, "")
        return None

    def _file_diagnosis(self, d: Diagnosis, v: Verdict, family: str, mode_id: str) -> None:
        self._put_diagnoses([d], {d.id: family},
                            {"status": v.status, "verdict": v.model_dump_json(), "mode_id": mode_id})

    def _compatible(self, m: DifficultyMode, d: Diagnosis) -> bool:
        if (m.factor_group, m.factor, m.phase) != (d.factor_group, d.factor, d.phase):
            return False
        if m.side is not None and d.side is not None and m.side != d.side:
            return False
        vals = _edit_values(d)
        return not (m.values and vals and not set(m.values) & set(vals))

    def _match(self, d: Diagnosis, stored: Sequence[DifficultyMode]) -> DifficultyMode | None:
        cands = [m for m in stored if self._compatible(m, d)]
        if not cands:
            return None
        texts: dict[str, list[str]] = {m.id: [m.description] for m in cands}
        got = self.episodic.get(where={"$and": [{"kind": "diagnosis"}, {"mode_id": {"$in": list(texts)}}]},
                                include=["metadatas"])
        for meta in got["metadatas"]:
            texts[meta["mode_id"]].append(meta["explanation"])
        groups = [[texts[m.id][0], *texts[m.id][1:][-self.config.join_members:]] for m in cands]
        emb = self._ef.embed([d.explanation] + [t for g in groups for t in g])  # one batch
        q, rows, best = emb[0], emb[1:], None
        for m, g in zip(cands, groups, strict=True):
            sim, rows = float(np.max(rows[:len(g)] @ q)), rows[len(g):]
            if best is None or sim > best[0] or (sim == best[0] and m.id < best[1]):
                best = (sim, m.id)
        if best is None or best[0] < self.config.join_threshold:
            return None
        return next(m for m in cands if m.id == best[1])

    def _join(self, m: DifficultyMode, d: Diagnosis, family: str) -> DifficultyMode:
        def add(xs: tuple[str, ...], *new: str) -> tuple[str, ...]:
            return tuple(dict.fromkeys((*xs, *new)))

        return m.model_copy(update={
            "families": add(m.families, family), "evidence_ids": add(m.evidence_ids, d.episode_id),
            "diagnosis_ids": add(m.diagnosis_ids, d.id),
            "values": tuple(sorted(set(m.values) | set(_edit_values(d)))),
        })

    def _found(self, d: Diagnosis, family: str, round_no: int,
               stored: Sequence[DifficultyMode]) -> DifficultyMode:
        return found_mode(d, family, round_no, {m.id for m in stored})

    def _put_mode(self, m: DifficultyMode) -> None:
        core = m.model_dump_json(exclude={"programs", "learning_progress"})
        meta = {"factor_group": m.factor_group, "factor": m.factor, "factor_key": m.factor_key,
                "phase": m.phase, "side": m.side or "", "families": "|" + "|".join(m.families) + "|",
                "created_round": m.created_round, "json": core}
        self.semantic.upsert(ids=[m.id], documents=[m.description], metadatas=[meta])

    def _stored_modes(self) -> list[DifficultyMode]:
        got = self.semantic.get(include=["metadatas"])
        return [DifficultyMode.model_validate_json(m["json"]) for m in got["metadatas"]]

    def _stored_mode(self, mode_id: str) -> DifficultyMode:
        got = self.semantic.get(ids=[mode_id], include=["metadatas"])
        if not got["ids"]:
            known = [m.id for m in self._stored_modes()]
            close = difflib.get_close_matches(mode_id, known, n=3)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            raise KeyError(f"no difficulty mode {mode_id!r}.{hint}")
        return DifficultyMode.model_validate_json(got["metadatas"][0]["json"])

    def _complete(self, m: DifficultyMode) -> DifficultyMode:
        points: list[ProgressPoint] = []
        for mode_id, fam in self.ledger.arms():
            if mode_id == m.id:
                points += self.ledger.history(mode_id, fam, self.config.alpha)
        points.sort(key=lambda p: (p.round, p.family))
        return m.model_copy(update={"programs": tuple(self.programs_for(m.id)),
                                    "learning_progress": tuple(points)})

    def mode(self, mode_id: str) -> DifficultyMode:
        """One mode with its programs and learning-progress history."""
        return self._complete(self._stored_mode(mode_id))

    def modes(self, family: str | None = None) -> list[DifficultyMode]:
        """All modes (or those seen in `family`), oldest first."""
        ms = [m for m in self._stored_modes() if family is None or family in m.families]
        return [self._complete(m) for m in sorted(ms, key=lambda m: (m.created_round, m.id))]

    def modes_for_family(self, family: str, factors: Iterable[str] | None = None, *,
                         maps: Callable[[DifficultyMode], bool] | None = None) -> list[DifficultyMode]:
        """Modes worth generating for `family`: those seen in it, plus modes from other families whose
        factor the family also has (`factors`: names in the family's schema) or that `maps` carries over
        (the loop passes a mapping by the factor's meaning) — cross-family transfer."""
        names = set(factors or ())
        return [m for m in self.modes() if family in m.families or m.factor in names
                or (maps is not None and maps(m))]

    def search_modes(self, text: str, k: int = 5, *,
                     family: str | None = None) -> list[tuple[DifficultyMode, float]]:
        """Modes whose description is nearest to `text` (cosine similarity), optionally seen in `family`."""
        hits = self._query(self.semantic, text, self.semantic.count() if family else k, None)
        out = [(DifficultyMode.model_validate_json(meta["json"]), sim) for meta, sim in hits
               if family is None or f"|{family}|" in meta["families"]]
        return [(self._complete(m), sim) for m, sim in out[:k]]

    # ---- procedural: programs by mode -----------------------------------------------------------------

    def add_programs(self, mode_id: str, generation_program_id: str, training_program_id: str, family: str,
                     paths: Sequence[str | Path] = ("", ""), *, round_no: int = 0) -> ProgramEntry:
        """Index a generation + training program pair under a mode for `family`; `paths` = (generation,
        training) files, relative to the run dir. Re-adding the same pair is a no-op (first entry kept)."""
        mode = self._stored_mode(mode_id)
        entry = ProgramEntry(mode_id=mode_id, family=family, generation_program_id=generation_program_id,
                             training_program_id=training_program_id, generation_path=str(paths[0]),
                             training_path=str(paths[1]), round=round_no)
        old = self.procedural.get(ids=[entry.id], include=["metadatas"])
        if old["ids"]:
            return ProgramEntry.model_validate_json(old["metadatas"][0]["json"])
        meta = {"mode_id": mode_id, "family": family, "generation_program_id": generation_program_id,
                "training_program_id": training_program_id, "round": round_no,
                "json": entry.model_dump_json()}
        doc = f"{family} programs for {mode.description}"
        self.procedural.upsert(ids=[entry.id], documents=[doc], metadatas=[meta])
        return entry

    def programs_for(self, mode_id: str, family: str | None = None) -> list[ProgramEntry]:
        """Program pairs stored for a mode, from every family. With `family`, that family's come first
        (newest round first), then other families' — the cross-family candidates to reuse or adapt."""
        got = self.procedural.get(where={"mode_id": mode_id}, include=["metadatas"])
        entries = [ProgramEntry.model_validate_json(m["json"]) for m in got["metadatas"]]
        return sorted(entries, key=lambda e: (family is not None and e.family != family, -e.round,
                                              e.family, e.id))

    def program_entry(self, entry_id: str) -> ProgramEntry:
        got = self.procedural.get(ids=[entry_id], include=["metadatas"])
        if not got["ids"]:
            raise KeyError(f"no program entry {entry_id!r}")
        return ProgramEntry.model_validate_json(got["metadatas"][0]["json"])

    def record_use(self, entry: ProgramEntry | str, family: str, round_no: int) -> bool:
        """Note that a stored program pair was used (run as is, or adapted) for `family` in `round`.
        Returns whether that is a cross-family reuse. Idempotent per (entry, family, round)."""
        e = self.program_entry(entry) if isinstance(entry, str) else entry
        return self.reuse.record(e, family, round_no)

    def reuse_stats(self) -> dict[str, Any]:
        """Uses, cross-family uses, and cross-family uses per "A->B" family pair."""
        return self.reuse.stats()

    @property
    def cross_family_reuse(self) -> int:
        return self.reuse_stats()["cross_family"]

    def counts(self) -> dict[str, int]:
        """Sizes, for metrics.jsonl."""
        n_dx = len(self.episodic.get(where={"kind": "diagnosis"}, include=[])["ids"])
        return {"episodes": self.episodic.count() - n_dx, "diagnoses": n_dx, "modes": self.semantic.count(),
                "programs": self.procedural.count(), "cross_family_reuse": self.cross_family_reuse}
