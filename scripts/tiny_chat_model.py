"""Build, offline, a tiny random chat model that vLLM can serve.

::

    python scripts/tiny_chat_model.py DIR ENV_ID ...

The tokenizer is learnt from the envs' instructions and first observations
(:func:`baselines.tiny.save_chat_model`). Used by ``scripts/vllm_eval_e2e.sh``.
"""

from __future__ import annotations

import sys

import gymnasium as gym

import agentenvs  # noqa: F401  (registers the env ids)
from agentenvs.core.prompting import observation_text
from baselines.tiny import save_chat_model


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python scripts/tiny_chat_model.py DIR ENV_ID ...", file=sys.stderr)
        return 2
    folder, env_ids = argv[0], argv[1:]
    texts = []
    for env_id in env_ids:
        env = gym.make(env_id, split="test")
        texts.append(env.unwrapped.instructions)
        texts += [observation_text(env.reset(seed=seed)[0]) for seed in range(3)]
        env.close()
    print(f"wrote a {save_chat_model(folder, texts):,}-parameter chat model to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
