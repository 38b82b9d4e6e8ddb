"""Evaluate a chat model on a panel: ``agentenvs eval`` writes a submission bundle.

The model is any *chat backend*: an object with ``complete(messages) ->
reply`` where the reply carries ``text``, ``prompt_tokens`` and
``completion_tokens`` — :class:`agentenvs.core.chat.ChatClient` for an
OpenAI-compatible endpoint (it owns retries, backoff and timeouts) or
:class:`agentenvs.agents.local.TransformersChat` for a local model.

Concurrency: a thread pool of ``concurrency`` workers, each playing whole
episodes, so at most that many requests are in flight. Threads fit because
the client is synchronous and thread-safe and the time goes into waiting for
the endpoint; env steps are short and each episode holds its own env (one
pool of env copies per env id, one copy per worker at most).

Resume: each finished episode is appended to ``episodes.jsonl`` and flushed;
a rerun with the same model and panel skips the episodes already there. An
episode whose model calls fail after the client's retries is *crashed*: it is
not written (a rerun plays it again), it is counted and reported with its
error, and the summary is only written once every panel episode has finished.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import gymnasium as gym

from agentenvs.agents.bundle import (
    EPISODES_FILE,
    METADATA_FILE,
    SUMMARY_FILE,
    BundleError,
    read_episode_lines,
    read_json,
    submission_metadata,
    summarize,
    validate,
    write_json,
)
from agentenvs.agents.panel import EnvPanel, PanelEpisode, PanelSpec, env_panel, make_panel_env
from agentenvs.core.prompting import Turn, chat_messages, observation_text


class ChatBackend(Protocol):
    def complete(self, messages: list[dict[str, str]]) -> Any: ...


@dataclass
class EvalReport:
    """What one ``run_eval`` call did."""

    played: int = 0
    skipped: int = 0
    model_s: float = 0.0  # summed over the episodes played, as is env_s
    env_s: float = 0.0
    crashed: list[tuple[PanelEpisode, str]] = field(default_factory=list)
    summary: dict[str, Any] | None = None


def play_model_episode(
    env: gym.Env,
    backend: ChatBackend,
    episode: PanelEpisode,
    *,
    split: str,
    agent: str,
    history_window: int | None = None,
) -> dict[str, Any]:
    """Play one panel episode with the model; the bundle line (see ``EPISODE_SCHEMA``)."""
    instructions = env.unwrapped.instructions
    clock = time.perf_counter
    started = clock()
    observation, info = env.reset(seed=episode.seed, options={"task_id": episode.task_id})
    env_s = clock() - started
    model_s = 0.0
    history: list[Turn] = []
    line: dict[str, Any] = {
        "env_id": episode.env_id,
        "env_kwargs": {},
        "split": split,
        "task_id": episode.task_id,
        "seed": episode.seed,
        "agent": agent,
        "responses": [],
        "rewards": [],
        "obs_keys": [info["obs_key"]],
        "state_keys": [info["state_key"]],
        "component_sums": {},
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    done = False
    while not done:
        messages = chat_messages(instructions, observation, info, history, history_window=history_window)
        started = clock()
        reply = backend.complete(messages)
        model_s += clock() - started
        history.append(Turn(observation_text(observation), reply.text))
        started = clock()
        observation, reward, terminated, truncated, info = env.step(reply.text)
        env_s += clock() - started
        done = terminated or truncated
        line["responses"].append(reply.text)
        line["rewards"].append(float(reward))
        line["obs_keys"].append(info["obs_key"])
        line["state_keys"].append(info["state_key"])
        for name, value in info["reward_components"].items():
            line["component_sums"][name] = line["component_sums"].get(name, 0.0) + float(value)
        line["prompt_tokens"] += int(reply.prompt_tokens or 0)
        line["completion_tokens"] += int(reply.completion_tokens or 0)
    line.update(
        success=bool(info["success"]),
        score=float(info["score"]),
        turns=len(line["responses"]),
        model_s=model_s,
        env_s=env_s,
    )
    line["return"] = float(sum(line["rewards"]))
    return line


class _EnvPool:
    """Env copies per env id, lent to one episode at a time."""

    def __init__(self, split: str) -> None:
        self.split = split
        self.free: dict[str, queue.SimpleQueue[gym.Env]] = {}
        self.all: list[gym.Env] = []
        self.lock = threading.Lock()

    def borrow(self, env_id: str) -> gym.Env:
        with self.lock:
            free = self.free.setdefault(env_id, queue.SimpleQueue())
        try:
            return free.get_nowait()
        except queue.Empty:
            env = make_panel_env(env_id, self.split)
            with self.lock:
                self.all.append(env)
            return env

    def give_back(self, env_id: str, env: gym.Env) -> None:
        self.free[env_id].put(env)

    def close(self) -> None:
        for env in self.all:
            env.close()


def _finished_episodes(path: Path) -> list[dict[str, Any]]:
    """Episodes already in ``path``; a torn last line (a crash mid-write) is dropped from the file."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        path.write_text(text[: text.rfind("\n") + 1], encoding="utf-8")
    return read_episode_lines(path)


def run_eval(
    env_ids: Sequence[str],
    backend: ChatBackend,
    out: str | Path,
    *,
    spec: PanelSpec,
    model: str,
    model_size: str = "",
    endpoint: str = "openai",
    concurrency: int = 8,
    history_window: int | None = None,
    on_start: Callable[[int], None] | None = None,
    on_episode: Callable[[PanelEpisode, dict[str, Any] | None], None] | None = None,
) -> EvalReport:
    """Play every episode of ``spec`` for ``env_ids`` not yet in ``out``; write the bundle there.

    For progress display, ``on_start(pending)`` is called with the number of
    episodes left to play, and ``on_episode(episode, line)`` after each one
    (``line`` is None for a crashed one).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    panels = [env_panel(env_id, spec) for env_id in env_ids]
    metadata = submission_metadata(
        spec,
        {panel.env_id: panel.digest for panel in panels},
        model=model,
        model_size=model_size,
        endpoint=endpoint,
    )
    if (out / METADATA_FILE).exists():
        previous = read_json(out / METADATA_FILE, "metadata")
        for name in ("model", "model_size", "endpoint", "panel_digest"):
            if previous[name] != metadata[name]:
                raise BundleError(
                    f"{out} holds an evaluation with {name} {previous[name]!r}, not {metadata[name]!r}; "
                    "resume it with the same settings or choose another --out"
                )
        metadata["created"] = previous["created"]
    validate("metadata", metadata)
    write_json(out / METADATA_FILE, metadata)

    episodes_path = out / EPISODES_FILE
    finished = _finished_episodes(episodes_path)
    wanted = {episode.key for panel in panels for episode in panel.episodes}
    done_keys = {(line["env_id"], line["task_id"], line["seed"]) for line in finished}
    stray = done_keys - wanted
    if stray:
        raise BundleError(f"{episodes_path} holds episodes outside this panel, e.g. {min(stray)}")
    report = EvalReport(skipped=len(done_keys))
    pending = [(panel, e) for panel in panels for e in panel.episodes if e.key not in done_keys]
    if on_start is not None:
        on_start(len(pending))
    pool = _EnvPool(spec.split)

    def play(panel: EnvPanel, episode: PanelEpisode) -> dict[str, Any]:
        env = pool.borrow(panel.env_id)
        try:
            return play_model_episode(
                env, backend, episode, split=spec.split, agent=model, history_window=history_window
            )
        finally:
            pool.give_back(panel.env_id, env)

    workers = ThreadPoolExecutor(concurrency)
    try:
        with episodes_path.open("a", encoding="utf-8") as sink:
            futures = {workers.submit(play, panel, episode): episode for panel, episode in pending}
            for future in as_completed(futures):
                episode = futures[future]
                try:
                    line = future.result()
                except Exception as exc:  # a crashed episode is reported and re-run on resume
                    report.crashed.append((episode, f"{type(exc).__name__}: {exc}"))
                    line = None
                else:
                    sink.write(json.dumps(line) + "\n")
                    sink.flush()
                    finished.append(line)
                    report.played += 1
                    report.model_s += line["model_s"]
                    report.env_s += line["env_s"]
                if on_episode is not None:
                    on_episode(episode, line)
    finally:
        # on an interrupt, queued episodes never start; the few in flight end within their timeouts
        workers.shutdown(wait=True, cancel_futures=True)
        pool.close()
    if not report.crashed:
        report.summary = summarize(finished)
        write_json(out / SUMMARY_FILE, report.summary)
    return report
