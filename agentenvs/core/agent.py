"""The agent protocol: anything that answers an observation with a response."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Agent(Protocol):
    """``act(observation, info) -> response`` where response is what a model would send."""

    def act(self, observation: Any, info: dict[str, Any]) -> str: ...
