"""Registration: ``import agentenvs`` registers every ``agentenvs/<Name>-v0``.

Each family package (``agentenvs/<family>/__init__.py``) lists its envs in a
module-level ``ENVS`` tuple of :class:`EnvEntry`. Family ``__init__`` modules
stay import-light (no third-party imports), so registering never fails for a
missing extra; ``gym.make`` reports the extra to install instead.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import gymnasium as gym

NAMESPACE = "agentenvs"
_NOT_FAMILIES = {"core", "agents", "vector"}


@dataclass(frozen=True)
class EnvEntry:
    """One registered env id: ``agentenvs/{name}-v0``.

    ``variant_of`` names the main env a variant id specialises (one BabyAI
    level of the ``BabyAI`` mix); ``agentenvs run all`` covers main ids only.
    """

    name: str
    entry_point: str
    summary: str
    kwargs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    extra: str | None = None
    variant_of: str | None = None

    @property
    def env_id(self) -> str:
        return f"{NAMESPACE}/{self.name}-v0"


def discover() -> list[EnvEntry]:
    """Every family's entries, families in alphabetical order."""
    import agentenvs

    entries: list[EnvEntry] = []
    for module in sorted(pkgutil.iter_modules(agentenvs.__path__), key=lambda m: m.name):
        if not module.ispkg or module.name in _NOT_FAMILIES:
            continue
        family = importlib.import_module(f"agentenvs.{module.name}")
        entries.extend(getattr(family, "ENVS", ()))
    return entries


def register_all() -> list[EnvEntry]:
    """Register every discovered entry with gymnasium (idempotent)."""
    entries = discover()
    for entry in entries:
        if entry.env_id not in gym.registry:
            gym.register(id=entry.env_id, entry_point=entry.entry_point, kwargs=dict(entry.kwargs))
    return entries

