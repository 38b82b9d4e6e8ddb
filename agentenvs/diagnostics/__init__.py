"""Diagnostics of what the envs' keys tell a trainer (``agentenvs diagnose ...``)."""
