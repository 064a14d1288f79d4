"""One small generic registry for plugins (task families, backends, ...), with "did you mean" on typos."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
N = TypeVar("N")


class UnknownNameError(KeyError):
    """A name that is not registered; the message suggests the closest registered names."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps names to plugins. `register` works as a decorator or a plain call."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T | None = None) -> Callable[[T], T] | T:
        if item is not None:
            self._add(name, item)
            return item

        def deco(obj: T) -> T:
            self._add(name, obj)
            return obj

        return deco

    def _add(self, name: str, item: T) -> None:
        if name in self._items and self._items[name] is not item:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self._items), n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            known = ", ".join(sorted(self._items)) or "none"
            raise UnknownNameError(f"unknown {self.kind} {name!r}.{hint} Known: {known}.") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)


def by_name(items: Iterable[N], name: str, what: str, *, prefix: str = "", where: str = "") -> N:
    """The item of `items` whose `.name` is `name`. Else a KeyError that names what was looked for and
    lists the names there are: `{prefix}no {what} {name!r}{where}; {what}s: [...]`."""
    items = tuple(items)
    for item in items:
        if item.name == name:
            return item
    raise KeyError(f"{prefix}no {what} {name!r}{where}; {what}s: {[i.name for i in items]}")
