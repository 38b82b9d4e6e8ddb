"""Experiments that rerun in minutes on a CPU, each a module with its results under ``results/``.

``grpo_vs_gigpo`` trains the miniature of ``baselines/configs/mini_sokoban.yaml``
through ``baselines.trainers.run`` and writes ``results/grpo_vs_gigpo.json``.
May import: ``baselines`` (its trainers, metrics) and ``agentenvs``;
nothing imports an experiment.
"""
