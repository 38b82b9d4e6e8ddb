"""The lock's expert: reads the hidden code (privileged) and turns the first wrong dial towards it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentenvs.envs.lock.env import LockEnv


class LockExpert:
    """Solves every task in exactly ``distance`` turns, the fewest possible."""

    def __init__(self, env: LockEnv) -> None:
        self.env = env

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        lock = self.env.lock
        dial = next(
            i for i, (wanted, shown) in enumerate(zip(lock.code, lock.dials, strict=False)) if wanted != shown
        )
        direction = "up" if lock.code[dial] > lock.dials[dial] else "down"
        return self.env.protocol.format(f"{direction} {dial + 1}")
