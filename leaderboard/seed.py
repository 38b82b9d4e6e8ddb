"""The floor and the ceiling: the random and expert agents of every env, as submissions.

Each is played on the panel like a model (episode ``i`` resets with seed
``i``, which picks the split's task ``i``, the panel's task), written in the
bundle format and verified by replay like any upload.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from agentenvs.agents import AgentUnavailable
from agentenvs.eval.bundle import submission_metadata
from agentenvs.eval.episodes import play_episode
from agentenvs.eval.evaluate import GenerationSettings, recorded_settings
from agentenvs.eval.panel import PanelSpec, env_panel, make_panel_env
from agentenvs.eval.statistics import summarize

SCRIPTED_AGENTS = ("random", "expert")


def scripted_document(env_ids: Sequence[str], agent: str, spec: PanelSpec) -> dict[str, Any]:
    """A submission document of scripted agent ``agent`` on ``env_ids`` (those it can play)."""
    episodes: list[dict[str, Any]] = []
    env_digests = {}
    for env_id in env_ids:
        panel = env_panel(env_id, spec)
        env = make_panel_env(env_id, spec.split)
        lines = []
        try:
            for episode in panel.episodes:
                started = time.perf_counter()
                record = play_episode(env, agent, seed=episode.seed, env_id=env_id, env_kwargs={})
                record.env_s = time.perf_counter() - started  # a scripted agent's time is the env's
                if record.task_id != episode.task_id:
                    raise RuntimeError(
                        f"{env_id} seed {episode.seed} played task {record.task_id}, not {episode.task_id}"
                    )
                lines.append(record.to_json())
        except AgentUnavailable:
            continue
        finally:
            env.close()
        episodes.extend(lines)
        env_digests[env_id] = panel.digest
    # a scripted agent is asked for no tokens: the default settings, no context
    settings = recorded_settings(GenerationSettings(), list(env_digests), backend=None)
    metadata = submission_metadata(
        spec, env_digests, model=agent, model_size="", endpoint="scripted", settings=settings
    )
    return {"metadata": metadata, "summary": summarize(episodes), "episodes": episodes}
