"""`ContentHashed`: the base of every frozen record whose `id` is a hash of its own content (programs,
diagnoses, memory entries). Its dump writes the `id`; reading the dump back accepts that `id` only while
it still matches the content, so a record edited after it was written is refused, not silently re-hashed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class ContentHashed(BaseModel):
    """A frozen record whose `id` (defined by the subclass) is computed from its content; accepts the `id`
    its dump wrote and insists that it still matches."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def id_mismatch(cls, stored: Any, computed: str) -> str:
        """The error message for a stored `id` that no longer matches the content."""
        return f"{cls.__name__}: stored id {stored!r} does not match its content ({computed!r})"

    @model_validator(mode="wrap")
    @classmethod
    def _stored_id(cls, data: Any, handler: Any) -> Any:
        stored = None
        if isinstance(data, dict) and "id" in data:
            data = dict(data)
            stored = data.pop("id")
        obj = handler(data)
        if stored is not None and stored != obj.id:
            raise ValueError(cls.id_mismatch(stored, obj.id))
        return obj
