"""Evaluate an agentenvs env with verifiers' own ``evaluate_sync``; replay each rollout with ``gym.make``.

Needs a model behind an OpenAI-compatible endpoint: ``OPENAI_BASE_URL``
(default ``http://127.0.0.1:8000/v1``), ``MODEL`` (default ``tiny``) and a
key in ``OPENAI_API_KEY`` (any text for a local server)::

    python docs/tutorials/scripts/with_verifiers.py
"""

from __future__ import annotations

import math
import os

import gymnasium as gym
import verifiers as vf

from agentenvs.integrations.verifiers import load_environment

ENV_ID = "agentenvs/Sokoban-v0"


def replayed_return(seed: int, replies: list[str]) -> float:
    """The return ``gym.make`` gives the same replies from the same seed."""
    env = gym.make(ENV_ID, split="test")
    env.reset(seed=seed)
    total = sum(env.step(reply)[1] for reply in replies)
    env.close()
    return total


def main() -> int:
    env = load_environment(
        ENV_ID, seeds=range(2), split="test"
    )  # a vf.MultiTurnEnv; rubric = the env's reward
    client = vf.ClientConfig(
        api_base_url=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"),
        api_key_var="OPENAI_API_KEY",
    )
    results = env.evaluate_sync(
        client,
        model=os.environ.get("MODEL", "tiny"),
        sampling_args={"max_tokens": 16},
        num_examples=2,
        rollouts_per_example=2,
        state_columns=["agentenvs"],
    )
    for output in results["outputs"]:
        replies = [m["content"] or "" for m in output["completion"] if m["role"] == "assistant"]
        seed = int(output["info"]["seed"])
        assert math.isclose(output["reward"], replayed_return(seed, replies), abs_tol=1e-9)
        components = {
            name: round(output["metrics"][name], 3) for name in ("outcome", "invalid_action", "format")
        }
        print(f"seed {seed}: {len(replies)} turns, reward {output['reward']:+.3f} {components}")
    print(f"{len(results['outputs'])} rollouts, each replayed by gym.make to the same return")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
