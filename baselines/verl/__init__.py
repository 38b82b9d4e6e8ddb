"""verl integration: agentenvs estimators as verl advantage estimators,
agentenvs episodes as a verl agent loop.

Multi-GPU and multi-node training runs on verl (Ray placement, FSDP/Megatron
actors, vLLM/SGLang rollout servers); ``baselines.trainers`` stays the
readable single-process reference. Importing this package needs nothing from
verl; :func:`install` does::

    import baselines.verl
    baselines.verl.install(omega=1.0, anchor="state")   # before verl's trainer starts
    baselines.verl.install(preset="reference")          # verl-agent's arithmetic, for reproduction

then run verl with ``algorithm.adv_estimator=agentenvs_gigpo`` (or
``agentenvs_grpo``, ``agentenvs_rloo``, ``agentenvs_mt_grpo``),
``algorithm.gamma=0.95`` and ``actor_rollout_ref.rollout.agent.default_agent_loop=agentenvs``.
``python -m baselines.verl.main`` does both inside verl's Ray task runner
(``scripts/verl_gigpo.sh`` has the full command).

May import: ``baselines`` (its estimators, prompts and rollout) and
``agentenvs.core``; verl only inside functions that run under verl.
"""

from __future__ import annotations

import importlib.util
from typing import Any

ESTIMATOR_NAMES = ("agentenvs_grpo", "agentenvs_rloo", "agentenvs_mt_grpo", "agentenvs_gigpo")


def verl_available() -> bool:
    return importlib.util.find_spec("verl") is not None


def install(**settings: Any) -> dict[str, Any]:
    """Register the estimators and the agent loop with verl; the registered estimator functions.

    verl hands ``non_tensor_batch`` (where the agent loop leaves per-turn
    rewards and anchor keys) only to estimators it knows, so ``install`` also
    wraps ``verl.trainer.ppo.ray_trainer.compute_advantage`` to call the
    agentenvs estimators with it; every other estimator goes through verl's
    own code unchanged. Idempotent for the same settings.

    ``settings`` go to :func:`baselines.verl.estimators.make_estimators`
    (``omega``, ``anchor``, ``alpha``, ``preset``, ``reference_code`` and every
    estimator option); verl's ``algorithm.agentenvs`` block overrides them per call.
    """
    if not verl_available():
        raise ImportError("baselines.verl.install needs the 'verl' package (pip install verl)")
    from verl.trainer.ppo import core_algos, ray_trainer

    from baselines.verl import agent_loop  # noqa: F401  (registers the "agentenvs" agent loop)
    from baselines.verl.estimators import make_estimators

    estimators = make_estimators(**settings)
    for name, function in estimators.items():
        core_algos.ADV_ESTIMATOR_REGISTRY[name] = function

    original = getattr(
        ray_trainer.compute_advantage, "__wrapped_by_agentenvs__", ray_trainer.compute_advantage
    )

    def compute_advantage(data: Any, adv_estimator: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(adv_estimator, "value", adv_estimator)
        if name not in estimators:
            return original(data, adv_estimator, *args, **kwargs)
        if "response_mask" not in data.batch.keys():
            data.batch["response_mask"] = ray_trainer.compute_response_mask(data)
        advantages, returns = estimators[name](
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=data.batch["response_mask"],
            index=data.non_tensor_batch["uid"],
            config=kwargs.get("config"),
            non_tensor_batch=data.non_tensor_batch,
        )
        data.batch["advantages"] = advantages.to(data.batch["token_level_rewards"].device)
        data.batch["returns"] = returns.to(data.batch["token_level_rewards"].device)
        return data

    compute_advantage.__wrapped_by_agentenvs__ = original  # type: ignore[attr-defined]
    ray_trainer.compute_advantage = compute_advantage
    try:  # verl's v1 trainer imported the function by name
        from verl.trainer.ppo.v1 import utils as v1_utils
    except ImportError:
        pass
    else:
        v1_utils.compute_advantage = compute_advantage
    return estimators
