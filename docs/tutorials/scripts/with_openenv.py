"""Play agentenvs over OpenEnv's WebSocket protocol with openenv-core's own client.

Start the server first, then run this client against it::

    agentenvs serve agentenvs/Sokoban-v0 --port 8000 &
    python docs/tutorials/scripts/with_openenv.py http://127.0.0.1:8000

Each session gets an env of its own; the replies below are fixed moves, so
the episode reads the same on every run.
"""

from __future__ import annotations

import sys

from openenv.core import GenericEnvClient

REPLIES = [
    "<action>down || right || down</action>",
    "<action>down || left || left</action>",
    "<action>up || right</action>",
]


def main(base_url: str) -> int:
    with GenericEnvClient(base_url=base_url).sync() as env:
        result = env.reset(seed=0)  # observation: text, instructions, info (the privileged part never leaves)
        print(f"reset: {len(result.observation['instructions'])} characters of instructions")
        for reply in REPLIES:
            result = env.step({"response": reply})
            components = result.observation["info"]["reward_components"]
            print(
                f"{reply}  reward {result.reward:+.2f}  done {result.done}  outcome {components['outcome']}"
            )
        print(f"score {result.observation['info']['score']}, state {env.state()['state_key'][:12]}")
    return 0 if result.done else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"))
