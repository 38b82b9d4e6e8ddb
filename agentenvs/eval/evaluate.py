"""Evaluate a chat model on a panel: ``agentenvs eval`` writes a submission bundle.

The model is any *chat backend*: an object with ``complete(messages,
**request) -> reply`` where the reply carries ``text``, ``prompt_tokens`` and
``completion_tokens`` — :class:`agentenvs.core.chat.ChatClient` for an
OpenAI-compatible endpoint (it owns retries, backoff and timeouts) or
:class:`agentenvs.agents.local.TransformersChat` for a local model. Backends
that can also say ``context_length()`` and ``count_prompt_tokens(messages)``
(both of those do) get their prompts fitted to the model's context.

Settings (:class:`GenerationSettings`): each request asks for the env's
``reply_max_tokens`` (its paper's setting, the ``max_tokens`` row of its
table; ``--max-tokens`` overrides it for every env) and stops at the env's
``reply_stop`` strings; temperature, top_p and seed are sent as given. Every
setting, the context length and how tokens were counted are recorded in the
bundle's metadata (``settings``, covered by ``settings_digest``), and a
resume with other settings is refused.

Token counts (``settings.token_count``): ``server`` where the backend counts
a prompt's tokens with the model's own tokenizer and chat template (a local
model; an endpoint answering one of the ways :mod:`agentenvs.core.chat`
lists: vLLM's ``/tokenize``, llama.cpp's ``/apply-template`` + ``/tokenize``,
TGI's ``/chat_tokenize``), found by one probe before any episode;
``estimate`` where the context is known but the server counts no way (SGLang,
Ollama, hosted APIs, or any refusal, error or answer of another shape: the
shape of an answer never ends a run): UTF-8 bytes plus
:data:`TEMPLATE_TOKENS_PER_MESSAGE` per message; ``none`` where the context
is unknown, so nothing is fitted. A server that counted at the probe and
fails to count later (after the client's retries) crashes that episode, which
a rerun plays again: one bundle never mixes server counts and estimates.

Context policy (:class:`PromptFitter`, the one place it is decided): a
prompt may use ``context_length − reserve`` tokens, where ``reserve =
min(max_tokens, context_length // 2)`` is kept for the reply, and each
request asks for ``min(max_tokens, context_length − prompt tokens)``. A
prompt over its budget loses its oldest turns first, one at a time; the
system message, the first turn (it states the task) and the current
observation are always kept. When even that does not fit, or the server
refuses the prompt as too long, the episode ends there as a scored failure
(``end_reason`` ``context_overflow``, success False, score 0), which the
summary counts per env and a rerun reproduces (it is never a crash).

Stop strings: servers drop the stop string from the reply; it is put back
(vLLM names it in ``stop_reason``; where a server does not, a reply that
stopped inside an opened ``<tag>`` whose ``</tag>`` is a stop string gets
it back), then the reply is cut after its first stop string, so a server
that ignores ``stop`` gives the same text.

Concurrency: a thread pool of ``concurrency`` workers, each playing whole
episodes, so at most that many requests are in flight. Threads fit because
the client is synchronous and thread-safe and the time goes into waiting for
the endpoint; env steps are short and each episode holds its own env (one
pool of env copies per env id, one copy per worker at most).

Resume: each finished episode is appended to ``episodes.jsonl`` and flushed; a
rerun with the same model, panel and settings skips the episodes already
there, once they replay (:mod:`agentenvs.eval.replay`; one that does not is
named and the rerun refused, as the board would refuse the bundle). An episode
whose model calls fail after the client's retries is *crashed*: it is not
written (a rerun plays it again), it is counted and reported with its error,
and the summary is only written once every panel episode has finished.
"""

from __future__ import annotations

import importlib
import json
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

from agentenvs.core.chat import ChatError, ContextLengthError
from agentenvs.core.env import agent_env
from agentenvs.core.prompting import Turn, chat_messages, observation_text
from agentenvs.eval.bundle import (
    EPISODES_FILE,
    METADATA_FILE,
    SUMMARY_FILE,
    BundleError,
    read_episode_lines,
    read_json,
    submission_metadata,
    validate,
    write_json,
)
from agentenvs.eval.episodes import CONTEXT_OVERFLOW, EpisodeRecord
from agentenvs.eval.panel import EnvPanel, PanelEpisode, PanelSpec, env_panel, make_panel_env
from agentenvs.eval.replay import Replayed, replay_records
from agentenvs.eval.statistics import summarize

# where a backend cannot count tokens: UTF-8 bytes of the contents plus this much per message for the
# chat template (a byte-level BPE token covers at least one byte, so bytes rarely undercount)
TEMPLATE_TOKENS_PER_MESSAGE = 16


class ChatBackend(Protocol):
    def complete(self, messages: list[dict[str, str]], **request: Any) -> Any: ...


@runtime_checkable
class TokenCounter(Protocol):
    """A backend that counts a prompt's tokens (None: its server stopped answering counts)."""

    def count_prompt_tokens(self, messages: list[dict[str, str]]) -> int | None: ...


@dataclass(frozen=True)
class GenerationSettings:
    """How replies are asked for and prompts are built (recorded in the bundle).

    ``max_tokens`` None: each env's ``reply_max_tokens``. ``max_model_len``
    None: the backend's ``context_length()``, if it has one.
    ``history_window``: past turns shown besides the first (None: all).
    """

    max_tokens: int | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    history_window: int | None = None
    max_model_len: int | None = None

    def __post_init__(self) -> None:
        # the bounds of the bundle's settings schema, checked here so a bad flag fails before any request
        for name, low, high in (
            ("max_tokens", 1, 10**9),
            ("max_model_len", 1, 10**9),
            ("seed", 0, 2**53 - 1),  # what a JSON reader holds exactly (the bundle's MAX_INTEGER)
            ("history_window", 0, 10**6),
        ):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high
            ):
                raise ValueError(f"{name} must be an integer in [{low}, {high}] or None, got {value!r}")
        if not 0.0 <= self.temperature <= 2.0 or not 0.0 < self.top_p <= 1.0:
            raise ValueError(
                f"temperature must be in [0, 2] and top_p in (0, 1], got {self.temperature}, {self.top_p}"
            )


@dataclass
class EvalReport:
    """What one ``run_eval`` call did."""

    played: int = 0
    skipped: int = 0
    model_s: float = 0.0  # summed over the episodes played, as is env_s
    env_s: float = 0.0
    crashed: list[tuple[PanelEpisode, str]] = field(default_factory=list)
    summary: dict[str, Any] | None = None


def recorded_settings(
    settings: GenerationSettings, env_ids: Sequence[str], backend: ChatBackend | None
) -> dict[str, Any]:
    """The ``settings`` of the bundle's metadata: what every request and prompt of this run used.

    ``backend`` None: no model (scripted agents), so no context length and no token counts.
    """
    context_length = settings.max_model_len
    if context_length is None and backend is not None and hasattr(backend, "context_length"):
        context_length = backend.context_length()
    envs = {}
    for env_id in env_ids:
        env_class = _env_class(gym.spec(env_id).entry_point)
        envs[env_id] = {
            "max_tokens": settings.max_tokens or env_class.reply_max_tokens,
            "stop": list(env_class.reply_stop),
        }
    counts = "none"
    if context_length is not None:
        # "server" only when the backend answers a count; this first count is where a ChatClient finds how
        # its server counts, or that it cannot (then None: the estimate)
        counter = getattr(backend, "count_prompt_tokens", None)
        probe = [{"role": "user", "content": "x"}]
        counts = "server" if counter is not None and counter(probe) is not None else "estimate"
    return {
        "temperature": float(settings.temperature),
        "top_p": float(settings.top_p),
        "seed": settings.seed,
        "history_window": settings.history_window,
        "context_length": context_length,
        "token_count": counts,
        "envs": envs,
    }


def _env_class(entry_point: Any) -> Any:
    """The env class a registry entry point names (``"module:Class"`` or the class itself)."""
    if not isinstance(entry_point, str):
        return entry_point
    module, _, name = entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


class ContextOverflow(Exception):
    """Even the shortest prompt the policy allows exceeds the context."""


class PromptFitter:
    """The context policy of the module docstring, for one env's requests.

    Args:
        backend: the chat backend; with ``token_count="server"`` its
            ``count_prompt_tokens(messages)`` counts, else the byte estimate does
            (:data:`TEMPLATE_TOKENS_PER_MESSAGE`).
        context_length: the model's context; None fits nothing (the server decides).
        max_tokens: the env's reply budget.
        token_count: the recorded setting, ``"server"`` or ``"estimate"``.
    """

    def __init__(
        self, backend: ChatBackend, context_length: int | None, max_tokens: int, token_count: str = "server"
    ) -> None:
        self.backend = backend
        self.context_length = context_length
        self.max_tokens = max_tokens
        self.by_server = token_count == "server"
        if context_length is not None:
            self.budget = context_length - min(max_tokens, context_length // 2)

    def count(self, messages: list[dict[str, str]]) -> int:
        if self.by_server:
            if not isinstance(self.backend, TokenCounter):
                raise TypeError('token_count "server" needs a backend with count_prompt_tokens(messages)')
            counted = self.backend.count_prompt_tokens(messages)
            if counted is None:
                raise ChatError("the server stopped answering token counts")  # a crash: rerun
            return int(counted)
        return sum(len(m["content"].encode("utf-8")) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)

    def fit(self, messages: list[dict[str, str]]) -> tuple[list[dict[str, str]], int]:
        """The prompt to send and the reply's ``max_tokens``; :class:`ContextOverflow` when nothing fits.

        ``messages`` is ``chat_messages``' layout: system, then (user, assistant)
        per shown turn, then the current user message. Dropping ``k`` turns
        removes the ``k`` oldest after the first; the token count falls with
        ``k``, so the fewest drops that fit are found by bisection.
        """
        if self.context_length is None:
            return messages, self.max_tokens
        droppable = max(0, (len(messages) - 4) // 2)  # turns besides the first

        def dropped(k: int) -> list[dict[str, str]]:
            return messages[:3] + messages[3 + 2 * k :] if k else messages

        tokens = self.count(messages)
        if tokens > self.budget:
            low, high = 1, droppable  # invariant: dropping `high` turns fits, or nothing does
            tokens = self.count(dropped(high)) if droppable else tokens
            if tokens > self.budget:
                raise ContextOverflow(f"{tokens} prompt tokens, the budget is {self.budget}")
            fitting = tokens
            while low < high:
                middle = (low + high) // 2
                counted = self.count(dropped(middle))
                if counted <= self.budget:
                    high, fitting = middle, counted
                else:
                    low = middle + 1
            messages, tokens = dropped(high), fitting
        return messages, min(self.max_tokens, self.context_length - tokens)


def restore_stop(reply: Any, stop: Sequence[str]) -> str:
    """The reply's text with its stop string put back, cut after the first stop string (module docstring)."""
    text = reply.text
    if stop:
        if reply.stop_reason in stop:
            text += reply.stop_reason
        elif reply.finish_reason == "stop":
            for closing in stop:
                opening = "<" + closing[2:] if closing.startswith("</") else None
                if opening and text.rfind(opening) > text.rfind(closing):
                    text += closing
                    break
        ends = [text.find(s) + len(s) for s in stop if s in text]
        if ends:
            text = text[: min(ends)]
    return text


def play_model_episode(
    env: gym.Env,
    backend: ChatBackend,
    episode: PanelEpisode,
    *,
    split: str,
    agent: str,
    settings: Mapping[str, Any],
) -> EpisodeRecord:
    """Play one panel episode with the model; its record (the bundle line, see ``EPISODE_SCHEMA``).

    ``settings`` is :func:`recorded_settings`' record.
    """
    env_settings = settings["envs"][episode.env_id]
    stop = env_settings["stop"]
    fitter = PromptFitter(
        backend, settings["context_length"], env_settings["max_tokens"], settings["token_count"]
    )
    request: dict[str, Any] = {"temperature": settings["temperature"], "top_p": settings["top_p"]}
    if stop:
        request["stop"] = list(stop)
    if settings["seed"] is not None:
        request["seed"] = settings["seed"]
    instructions = agent_env(env).instructions
    clock = time.perf_counter
    started = clock()
    observation, info = env.reset(seed=episode.seed, options={"task_id": episode.task_id})
    record = EpisodeRecord(
        env_id=episode.env_id,
        env_kwargs={},
        split=split,
        seed=episode.seed,
        task_id=episode.task_id,
        agent=agent,
        obs_keys=[info["obs_key"]],
        state_keys=[info["state_key"]],
        env_s=clock() - started,
    )
    history: list[Turn] = []
    terminated = truncated = overflowed = False
    while not (terminated or truncated):
        messages = chat_messages(
            instructions, observation, info, history, history_window=settings["history_window"]
        )
        started = clock()
        try:
            messages, max_tokens = fitter.fit(messages)
            reply = backend.complete(messages, max_tokens=max_tokens, **request)
        except (ContextOverflow, ContextLengthError):
            overflowed = True
            break
        finally:
            record.model_s += clock() - started
        text = restore_stop(reply, stop)
        history.append(Turn(observation_text(observation), text))
        started = clock()
        observation, reward, terminated, truncated, info = env.step(text)
        record.env_s += clock() - started
        record.add_step(text, reward, info)
        record.prompt_tokens += int(reply.prompt_tokens or 0)
        record.completion_tokens += int(reply.completion_tokens or 0)
    record.success = False if overflowed else bool(info["success"])
    record.score = 0.0 if overflowed else float(info["score"])
    record.end_reason = CONTEXT_OVERFLOW if overflowed else "terminated" if terminated else "truncated"
    # the env's own flags on the last turn it played (an overflow stops before the env ends: both False)
    record.terminated, record.truncated = bool(terminated), bool(truncated)
    return record


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


def _check_replays(
    path: Path, lines: Sequence[dict[str, Any]], on_replayed: Callable[[int, Replayed], None] | None
) -> None:
    """Refuse to resume onto episodes that do not replay (:mod:`agentenvs.eval.replay`).

    The board replays every episode; an episode edited since it was written,
    or written by a version whose envs differ, would get the finished bundle
    rejected there, so the resume stops here and names it.
    """
    records = [EpisodeRecord.from_validated(line) for line in lines]  # read_episode_lines validated them
    replays = replay_records(records, on_replayed=on_replayed)
    for number, (record, replayed) in enumerate(zip(records, replays, strict=False), start=1):
        if not replayed.reproduced:
            raise BundleError(
                f"{path.name}: episode {number} ({record.env_id} task {record.task_id} seed {record.seed}) "
                f"does not replay: {'; '.join(replayed.problems[:3])}; remove it to play it again"
            )


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
    settings: GenerationSettings = GenerationSettings(),
    on_start: Callable[[int], None] | None = None,
    on_episode: Callable[[PanelEpisode, EpisodeRecord | None], None] | None = None,
    on_resume: Callable[[int], None] | None = None,
    on_replayed: Callable[[int, Replayed], None] | None = None,
) -> EvalReport:
    """Play every episode of ``spec`` for ``env_ids`` not yet in ``out``; write the bundle there.

    For progress display, ``on_resume(finished)`` is called with the number
    of episodes already in ``out`` before they are replayed (``on_replayed``
    is the replay's, :func:`~agentenvs.eval.replay.replay_records`),
    ``on_start(pending)`` with the number of episodes left to play, and
    ``on_episode(episode, record)`` after each one (``record`` is None for a
    crashed one).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    panels = [env_panel(env_id, spec) for env_id in env_ids]
    used = recorded_settings(settings, env_ids, backend)
    metadata = submission_metadata(
        spec,
        {panel.env_id: panel.digest for panel in panels},
        model=model,
        model_size=model_size,
        endpoint=endpoint,
        settings=used,
    )
    if (out / METADATA_FILE).exists():
        previous = read_json(out / METADATA_FILE, "metadata")
        differing = [
            (name, previous[name], metadata[name])
            for name in ("model", "model_size", "endpoint", "panel_digest")
            if previous[name] != metadata[name]
        ] + [
            (f"setting {name}", previous["settings"].get(name), value)
            for name, value in used.items()
            if previous["settings"].get(name) != value
        ]
        if differing:
            name, before, now = differing[0]
            raise BundleError(
                f"{out} holds an evaluation with {name} {before!r}, not {now!r}; "
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
    if finished and on_resume is not None:
        on_resume(len(finished))
    _check_replays(episodes_path, finished, on_replayed)
    report = EvalReport(skipped=len(done_keys))
    pending = [(panel, e) for panel in panels for e in panel.episodes if e.key not in done_keys]
    if on_start is not None:
        on_start(len(pending))
    pool = _EnvPool(spec.split)

    def play(panel: EnvPanel, episode: PanelEpisode) -> EpisodeRecord:
        env = pool.borrow(panel.env_id)
        try:
            return play_model_episode(env, backend, episode, split=spec.split, agent=model, settings=used)
        finally:
            pool.give_back(panel.env_id, env)

    workers = ThreadPoolExecutor(concurrency)
    try:
        with episodes_path.open("a", encoding="utf-8") as sink:
            futures = {workers.submit(play, panel, episode): episode for panel, episode in pending}
            for future in as_completed(futures):
                episode = futures[future]
                record: EpisodeRecord | None = None  # None: the episode crashed
                try:
                    record = future.result()
                except Exception as exc:  # a crashed episode is reported and re-run on resume
                    report.crashed.append((episode, f"{type(exc).__name__}: {exc}"))
                else:
                    line = record.to_json()
                    sink.write(json.dumps(line) + "\n")
                    sink.flush()
                    finished.append(line)
                    report.played += 1
                    report.model_s += record.model_s
                    report.env_s += record.env_s
                if on_episode is not None:
                    on_episode(episode, record)
    finally:
        # on an interrupt, queued episodes never start; the few in flight end within their timeouts
        workers.shutdown(wait=True, cancel_futures=True)
        pool.close()
    if not report.crashed:
        report.summary = summarize(finished)
        write_json(out / SUMMARY_FILE, report.summary)
    return report
