"""Record BALROG's BabyAI text on random walks: the reference
``tests/envs/babyai/test_babyai_balrog_reference.py`` replays.

BALROG's BabyAI observations are the ``descriptions`` its minigrid fork
(BartekCupial/Minigrid, ``MiniGridEnv.gen_graph``) writes into ``info``, joined
by BALROG's ``BabyAITextCleanLangWrapper`` (``balrog/environments/babyai_text``)
with the "You see " prefix dropped. Neither installs from a package registry,
so this script runs them from unpacked copies, outside agentenvs:

    git -C <Minigrid fork git dir> archive cf73dd1 minigrid | tar -x -C /tmp/balrog_minigrid
    git -C <BALROG git dir> archive af7d1f1 balrog/environments/babyai_text | tar -x -C /tmp/balrog
    python scripts/record_babyai_balrog_reference.py --minigrid /tmp/balrog_minigrid --balrog /tmp/balrog

The worlds are the default mix's levels (:data:`agentenvs.envs.babyai.tasks.DEFAULT_MIX`)
built on the fork's engine: the four minigrid levels from the fork's own
registry, and agentenvs' ``PickUpSeqGoToLocal`` (which minigrid lacks) as a
subclass of the fork's ``RoomGridLevel``. Each task is played by a random walk
over BALROG's six text actions through BALROG's wrapper; every turn's text,
reward and termination is recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path

import numpy as np

DEFAULT_OUT = (
    Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "babyai" / "balrog_text_reference.json"
)
MINIGRID_COMMIT = "cf73dd148e51276bd675a37e3bfb0bf2b42329b2"
BALROG_COMMIT = "af7d1f17e0deec3a7a0e334beae5f11b7a21371b"


def load_balrog_wrapper(balrog_root: Path) -> type:
    """BALROG's text wrapper, loaded from its file (BALROG's package pulls in every API client)."""
    path = balrog_root / "balrog" / "environments" / "babyai_text" / "clean_lang_wrapper.py"
    spec = importlib.util.spec_from_file_location("balrog_babyai_clean_lang_wrapper", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BabyAITextCleanLangWrapper


def import_fork(minigrid_root: Path):
    """Put the fork's ``minigrid`` first on the path and register its levels, as BALROG does."""
    sys.path.insert(0, str(minigrid_root))
    import minigrid

    if Path(minigrid.__file__).resolve().parent != (minigrid_root / "minigrid").resolve():
        raise SystemExit(f"minigrid came from {minigrid.__file__}, not from the fork at {minigrid_root}")
    if not hasattr(minigrid.minigrid_env.MiniGridEnv, "gen_graph"):
        raise SystemExit("this minigrid has no gen_graph: it is not BALROG's fork")
    with contextlib.redirect_stderr(io.StringIO()):
        minigrid.register_minigrid_envs()
    return minigrid


def record_episode(wrapper_class: type, level: str, seed: int, steps: int, rng: np.random.Generator) -> dict:
    from agentenvs.envs.babyai.tasks import make_level

    env = wrapper_class(make_level(level))
    with contextlib.redirect_stdout(io.StringIO()):  # "Sampling rejected" from some levels
        obs, _ = env.reset(seed=seed)
    turns = [{"action": None, "text": obs["text"]["long_term_context"], "reward": 0.0, "terminated": False}]
    for _ in range(steps):
        action = env.language_action_space[int(rng.integers(len(env.language_action_space)))]
        obs, reward, terminated, _, _ = env.step(action)
        turns.append(
            {
                "action": action,
                "text": obs["text"]["long_term_context"],
                "reward": float(reward),
                "terminated": bool(terminated),
            }
        )
        if terminated:
            break
    return {"task_id": f"{level}/{seed}", "mission": obs["mission"], "turns": turns}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--minigrid", type=Path, required=True, help="unpacked BartekCupial/Minigrid @cf73dd1"
    )
    parser.add_argument("--balrog", type=Path, required=True, help="unpacked balrog-ai/BALROG @af7d1f1")
    parser.add_argument(
        "--seeds", type=int, default=20, help="tasks per level (the test split's first seeds)"
    )
    parser.add_argument("--steps", type=int, default=30, help="random actions per episode")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    import_fork(args.minigrid)
    wrapper_class = load_balrog_wrapper(args.balrog)
    from agentenvs.envs.babyai.tasks import DEFAULT_MIX, SPLIT_SEEDS

    seeds = SPLIT_SEEDS["test"][: args.seeds]
    episodes = []
    for index, level in enumerate(DEFAULT_MIX.values()):
        for seed in seeds:
            rng = np.random.default_rng([index, seed])
            episodes.append(record_episode(wrapper_class, level, seed, args.steps, rng))
    record = {
        "about": (
            "BALROG's BabyAI text (balrog-ai/BALROG @"
            f"{BALROG_COMMIT[:7]}, BabyAITextCleanLangWrapper, "
            f"on BartekCupial/Minigrid @{MINIGRID_COMMIT[:7]}) "
            "over random walks of the default mix's levels; regenerate with "
            "scripts/record_babyai_balrog_reference.py. "
            "Each turn: the action sent, the text, reward, terminated."
        ),
        "minigrid_commit": MINIGRID_COMMIT,
        "balrog_commit": BALROG_COMMIT,
        "episodes": episodes,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    turns = sum(len(e["turns"]) for e in episodes)
    print(f"wrote {len(episodes)} episodes, {turns} turns to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
