"""Experiments that rerun in minutes on a CPU, each a module with its results under ``results/``.

``estimators`` trains the miniature of ``baselines/configs/mini_sokoban.yaml``
with GRPO, GiGPO and VinePPO (``vineppo_sokoban.yaml``) through
``baselines.trainers.run`` and writes ``results/estimators.json``.
May import: ``baselines`` (its trainers, metrics) and ``agentenvs``;
nothing imports an experiment.
"""
