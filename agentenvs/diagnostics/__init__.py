"""Diagnostics of what the envs' keys tell a trainer (``agentenvs diagnose ...``).

``grouping`` scores how rollout-group anchors (observation text, similarity
clusters, the true ``state_key``) group the turns of scripted episodes.

May import: ``agentenvs.core`` and :mod:`agentenvs.agents` (the scripted
agents it plays); never ``agentenvs.eval``, ``baselines`` or ``leaderboard``.
"""
