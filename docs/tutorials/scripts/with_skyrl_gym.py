"""Play one agentenvs episode through SkyRL-gym's own ``make`` and check it against ``gym.make``.

::

    python docs/tutorials/scripts/with_skyrl_gym.py

The replies are the expert's, computed on a ``gym.make`` twin of the env, so
the episode ends in success; every SkyRL turn must pay what the twin's does.
"""

from __future__ import annotations

import math

import gymnasium as gym
import skyrl_gym

from agentenvs.core.registration import make_expert
from agentenvs.integrations.skyrl_gym import dataset_rows  # the import registers env_class "agentenvs"

ENV_ID = "agentenvs/Sokoban-v0"


def main() -> int:
    row = dataset_rows(ENV_ID, seeds=range(4))[0]  # what a SkyRL dataset holds: prompt, env_class, extra_info
    extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
    conversation, _ = env.init(row["prompt"])
    print(f"init: {[message['role'] for message in conversation]}, seed {row['extra_info']['seed']}")

    twin = gym.make(ENV_ID)
    observation, info = twin.reset(seed=row["extra_info"]["seed"])
    expert = make_expert(twin)
    done = False
    while not done:
        reply = expert.act(observation, info)
        out = env.step(reply)
        observation, reward, terminated, truncated, info = twin.step(reply)
        assert math.isclose(out["reward"], reward) and out["done"] == (terminated or truncated)
        assert out["metadata"]["info"]["state_key"] == info["state_key"]
        print(f"{reply}  reward {out['reward']:+.2f}  done {out['done']}")
        done = out["done"]
    metrics = env.get_metrics()
    print({name: round(value, 3) for name, value in sorted(metrics.items())})
    env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
