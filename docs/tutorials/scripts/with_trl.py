"""One GRPO step of TRL's own ``GRPOTrainer`` on agentenvs episodes, on the CPU.

::

    python docs/tutorials/scripts/with_trl.py runs/tutorial-trl

``GRPOEnvironment`` is the trainer's ``rollout_func``, reward functions (one
per reward component) and dataset; each completion is a whole episode. The
model here is a tiny random chat model built offline; point ``model=`` at
any local chat model folder instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trl import GRPOConfig, GRPOTrainer

from agentenvs.integrations.trl import GRPOEnvironment
from baselines.tiny import save_chat_model


def main(out: Path) -> int:
    episodes = []
    environment = GRPOEnvironment("agentenvs/Sokoban-v0", seeds=range(8), on_episode=episodes.append)
    model = out / "tiny-chat"
    save_chat_model(
        str(model), [m["content"] for prompt in environment.prompts for m in prompt], vocab_size=400
    )
    config = GRPOConfig(
        output_dir=str(out / "grpo"),
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=1024,
        generation_kwargs={"max_new_tokens": 16},
        report_to=[],
        save_strategy="no",
        use_cpu=True,
    )
    trainer = GRPOTrainer(model=str(model), args=config, **environment.trainer_kwargs())
    trainer.train()
    logged = trainer.state.log_history[0]
    for name, weight in environment.reward_weights.items():
        print(f"rewards/{name}: {logged[f'rewards/{name}/mean']:+.3f} (weight {weight})")
    print(
        f"reward: {logged['reward']:+.3f} over {len(episodes)} episodes; "
        f"first episode's turns: {len(episodes[0].responses)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/tutorial-trl")))
