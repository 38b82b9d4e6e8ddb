"""Reference trainers for agentenvs: GiGPO, GRPO/RLOO, MT-GRPO, PPO/MT-PPO, SWEET-RL.

==========================  ===================================================
module                      what it holds
==========================  ===================================================
``advantages``              the estimators, pure numpy, formula in each docstring
``losses``                  PPO-clip, KL, value, Bradley–Terry and DPO losses (torch)
``prompts``                 prompt templates built from the env's own declarations
``policy``                  samplers: transformers ``generate``; vLLM when installed
``rollout``                 multi-turn rollouts over ``agentenvs.vector`` groups
``metrics``                 per-iteration JSONL metrics and the ``plot`` command
``trainers``                one ``TrainingRun`` loop, sectioned configs, and one
                            module per algorithm: ``critic_free`` (GiGPO / GRPO /
                            RLOO / MT-GRPO), ``ppo`` (MT-PPO / PPO-OR / PPO-MR),
                            ``sweet_rl`` (SWEET-RL)
``verl``                    the same estimators and episodes on verl (multi-GPU)
``experiments``             the CPU learning experiment (GRPO vs GiGPO)
==========================  ===================================================

May import: ``agentenvs.core``, ``agentenvs.vector`` and
``agentenvs.diagnostics`` (the envs through ``gym.make``; no module here
names a family). agentenvs never imports this package; it needs the
``train`` extra (torch, transformers, pyyaml; matplotlib for plots).
"""
