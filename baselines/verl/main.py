"""verl's PPO entry point with the agentenvs estimators and agent loop installed in its task runner.

verl trains inside a Ray actor (its task runner), so the registration must
happen there, not only in the launching process. The estimators' settings
come from verl's Hydra config, block ``algorithm.agentenvs`` (any setting of
:func:`baselines.verl.estimators.make_estimators`, read at every advantage
computation from the ``config`` verl passes), over the environment's
``AGENTENVS_OMEGA`` (1.0), ``AGENTENVS_ANCHOR`` (``state`` or ``obs``),
``AGENTENVS_ALPHA`` (MT-GRPO, 1.0) and ``AGENTENVS_PRESET`` (``paper``, or
``reference`` for the released code's arithmetic). Every other argument is
verl's own Hydra override, e.g.::

    python -m baselines.verl.main algorithm.adv_estimator=agentenvs_gigpo algorithm.gamma=0.95 \\
        +algorithm.agentenvs.preset=reference +algorithm.agentenvs.omega=1.0 \\
        actor_rollout_ref.rollout.agent.default_agent_loop=agentenvs data.train_files=... ...
"""

from __future__ import annotations

import os
from typing import Any


def environment_settings() -> dict[str, Any]:
    return {
        "omega": float(os.environ.get("AGENTENVS_OMEGA", "1.0")),
        "anchor": os.environ.get("AGENTENVS_ANCHOR", "state"),
        "alpha": float(os.environ.get("AGENTENVS_ALPHA", "1.0")),
        "preset": os.environ.get("AGENTENVS_PRESET", "paper"),
    }


def install_from_environment() -> dict[str, Any]:
    from baselines.verl import install

    return install(**environment_settings())


def main() -> None:
    import ray
    from verl.trainer import main_ppo

    base = main_ppo.TaskRunnerV1.__ray_actor_class__

    class AgentEnvsTaskRunner(base):  # type: ignore[misc, valid-type]
        def run(self, config: Any) -> Any:
            install_from_environment()
            return super().run(config)

    install_from_environment()
    main_ppo.TaskRunnerV1 = ray.remote(AgentEnvsTaskRunner)
    main_ppo.main()


if __name__ == "__main__":
    main()
