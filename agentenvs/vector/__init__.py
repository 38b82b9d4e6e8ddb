"""Grouped, batched rollouts: :class:`GroupedVectorEnv` (in-process, subprocesses, Ray).

``grouped`` holds the vector env, ``backends`` the in-process, subprocess
and Ray backends, ``workers`` the worker loop, ``slices`` the requests and
replies that cross process boundaries.

May import: ``agentenvs.core`` (the families only through ``gym.make``).
"""

from agentenvs.vector.backends import BACKENDS
from agentenvs.vector.grouped import GroupedVectorEnv

__all__ = ["BACKENDS", "GroupedVectorEnv"]
