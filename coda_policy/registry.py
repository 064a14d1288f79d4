"""Policy backends by name. A config class registers under its `type`; the modeling module is found from
that name and imported only when a policy is built, so a heavy backend (a later "pi05") costs nothing until
it is used and callers never change."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any, Protocol

from common.registry import Registry


class PolicyBackend(Protocol):
    """What every policy backend speaks (lerobot's three verbs plus save/load)."""

    def forward(self, batch: dict[str, Any], weights: Any = None) -> tuple[Any, dict[str, float]]: ...

    def select_action(self, obs: Any) -> Any: ...

    def reset(self, scene: Any = None) -> None: ...

    def save(self, path: Any) -> Any: ...


# name → config class
CONFIGS: Registry[type] = Registry("policy config")
# name → a ready policy configuration (`python -m agents.run --policy NAME`)
NAMED: Registry[Any] = Registry("named policy configuration")
# name → "module:Class" of the modeling code (imported lazily)
POLICIES: Registry[str] = Registry("policy backend")


def register_config(name: str, modeling: str | None = None) -> Callable[[type], type]:
    """Class decorator: register a config dataclass and where its modeling class lives."""

    def deco(cls: type) -> type:
        CONFIGS.register(name, cls)
        POLICIES.register(name, modeling or f"coda_policy.modeling_{name}:{_camel(name)}Policy")
        return cls

    return deco


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def _load_builtin() -> None:
    importlib.import_module("coda_policy.configuration_object_token")
    importlib.import_module("coda_policy.configuration_pi05")


def policy_names() -> list[str]:
    """Every registered backend."""
    _load_builtin()
    return POLICIES.names()


def policy_class(name: str) -> type:
    """The modeling class of backend `name` (imports it)."""
    _load_builtin()
    module, cls = POLICIES.get(name).split(":")
    return getattr(importlib.import_module(module), cls)


def named_config(name: str) -> Any:
    """A named policy configuration (e.g. "pi05_tiny"); unknown names raise with "did you mean"."""
    _load_builtin()
    return NAMED.get(name)


def make_config(name: str, **overrides: Any) -> Any:
    """A backend's config with field overrides; unknown fields raise with the known ones listed."""
    _load_builtin()
    cls = CONFIGS.get(name)
    known = {f.name for f in dataclasses.fields(cls)}
    bad = sorted(set(overrides) - known)
    if bad:
        raise TypeError(f"{name}: unknown config field(s) {bad}; known: {sorted(known)}")
    return cls(**overrides)


def make_policy(config: Any, stats: Any = None) -> Any:
    """Build a fresh policy from its config (dispatch on `config.type`)."""
    return policy_class(config.type)(config, stats)


def save_checkpoint(ckpt: dict[str, Any], path: Any) -> Any:
    """Write a policy's checkpoint dict to `path` atomically (a temporary file renamed into place)."""
    from pathlib import Path

    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(ckpt, tmp)
    tmp.replace(path)
    return path


def load_policy(path: Any) -> Any:
    """Load any saved policy: the checkpoint names its backend."""
    import torch

    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    return policy_class(ckpt["config"]["type"]).from_checkpoint(ckpt)
