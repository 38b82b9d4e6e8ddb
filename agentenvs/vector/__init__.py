"""Grouped, batched rollouts: :class:`GroupedVectorEnv` (in-process, subprocesses, Ray)."""

from agentenvs.vector.backends import BACKENDS
from agentenvs.vector.grouped import GroupedVectorEnv

__all__ = ["BACKENDS", "GroupedVectorEnv"]
