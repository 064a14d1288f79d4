"""Policy backends by name. A backend is a folder, `coda_policy/<name>/` with `configuration_<name>.py` (its
config class, registered under its `type`) beside `modeling_<name>.py` (its policy class); the modeling module
is found from the name and imported only when a policy is built, so a heavy backend (pi05) costs nothing
until it is used, and adding a backend is adding a folder."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
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
        POLICIES.register(name, modeling or f"coda_policy.{name}.modeling_{name}:{_camel(name)}Policy")
        return cls

    return deco


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def _load_builtin() -> None:
    """Import every backend folder's configuration module (light: no torch, no lerobot)."""
    import coda_policy

    for m in pkgutil.iter_modules(coda_policy.__path__):
        if m.ispkg and importlib.util.find_spec(f"coda_policy.{m.name}.configuration_{m.name}"):
            importlib.import_module(f"coda_policy.{m.name}.configuration_{m.name}")


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


def load_policy(path: Any) -> Any:
    """Load any saved policy (a .safetensors checkpoint, `coda_policy.checkpoint`): it names its backend."""
    from coda_policy.checkpoint import load_checkpoint

    ckpt = load_checkpoint(path)
    return policy_class(ckpt["config"]["type"]).from_checkpoint(ckpt)
