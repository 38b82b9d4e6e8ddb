"""Reference trainers for agentenvs: GiGPO, GRPO/RLOO, MT-GRPO, PPO/MT-PPO, SWEET-RL.

==========================  ===================================================
module                      what it holds
==========================  ===================================================
``advantages``              the estimators, pure numpy, formula in each docstring
``losses``                  PPO-clip, KL, value, Bradley–Terry and DPO losses (torch)
``prompts``                 per-family prompt templates (history window, actions)
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

agentenvs never imports this package; it needs the ``train`` extra (torch,
transformers, pyyaml; matplotlib for plots).
"""
