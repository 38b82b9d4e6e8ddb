"""Experiments that rerun in minutes on a CPU, each a module with its results under ``results/``.

``estimators`` trains the miniature of ``baselines/configs/mini_sokoban.yaml``
with GRPO, GiGPO and VinePPO (``vineppo_sokoban.yaml``) through
``baselines.trainers.run`` and writes ``results/estimators.json``.
``best_of_n`` measures Best-of-N success against N with an AgentPRM promise
model (trajectory- and step-level) and writes ``results/best_of_n_<env>.json``.

The papers' result tables in miniature, one module each (the page "The
papers' results and ours" holds each module's ``docs_row`` of its results
file):

- ``turn_rewards``: GRPO-OR, GRPO-MR, PPO-OR, PPO-MR and MT-PPO on Sokoban with
  several moves per turn (the MT-PPO paper);
- ``two_turn_search``: GRPO-OR, GRPO-MR and MT-GRPO on a generated two-turn
  search world (the MT-GRPO paper);
- ``turn_decomposition``: trajectory-level against turn-decomposed PPO-OR,
  PPO-MR and MT-PPO, on ``turn_rewards``' setting and runs;
- ``value_accuracy``: PPO's critic and VinePPO's K-rollout mean against 256
  rollouts from snapshots of a PPO run;
- ``archer_efficiency``: episodes to a success threshold, ArCHer against PPO
  and GRPO;
- ``prm_labels``: AgentPRM's TD(λ) against Monte Carlo promise labels in a
  lookup-table PRM at equal env-step budgets, then Best-of-N;
- ``state_matching``: GiGPO with state-key against obs-key anchors (and GRPO)
  on BabyAI, whose observations alias states;
- ``hicra_mechanics``: HICRA with every token planning against GRPO (the
  direction cannot be tested on a CPU).

``common`` holds what every experiment shares (pinned numerics, timed runs);
``arms`` the arms x seeds runner of ``archer_efficiency``, ``state_matching``
and ``hicra_mechanics``.
May import: ``baselines`` (its trainers, metrics) and ``agentenvs``; an
experiment imports ``common``, ``arms`` or ``best_of_n`` (``prm_labels``
reuses its Best-of-N), no other experiment.
"""
