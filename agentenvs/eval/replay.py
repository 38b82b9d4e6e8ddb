"""The replay: re-run recorded episodes and list where each differs from its record.

Used by ``agentenvs replay`` (a results file of ``agentenvs run``),
``agentenvs eval`` (the episodes a resumed bundle already holds) and the
leaderboard (every submitted episode), so all three apply the same checks.

Each record is reset from its seed and task id and stepped with its recorded
responses. The record must match the replay in:

* each turn's reward (:func:`~agentenvs.eval.statistics.same_number`), obs key and
  state key (exactly; the reset's keys first);
* the turn count: the env ends the episode at the record's last turn, not
  before, not after; a record ended by ``context_overflow`` (the model's
  prompt no longer fit) must find the env still running after its turns, and
  must be a failure with score 0;
* how the episode ended: a record's ``end_reason`` ``terminated`` or
  ``truncated`` must be the flag the env raised on the last turn (where it
  raises both, ``terminated``, the rule :func:`~agentenvs.eval.episodes.play_episode`
  and the eval harness record by), and its ``terminated`` and ``truncated``
  must each be the flag the env returned on the last turn it played (both
  False after a context overflow); a record written before these existed
  (None) claims nothing here;
* the ``turns`` and ``return`` a record read back claims, the reward
  component sums, success and score.

Token counts and timings cannot be replayed.

Records of one env (same id, kwargs and split) replay in lock-step batches
over an :mod:`agentenvs.vector` backend (``inprocess`` by default;
``subprocess`` or ``ray`` spread many records over cores). An env that cannot
be built, a reset or a step that raises, is a problem of the records it
concerns, never an exception of the replay. The observations the replay
produces are each record's transcript: what the env said, never what the
record claims.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentenvs.core.prompting import observation_text
from agentenvs.core.untrusted import one_line
from agentenvs.eval.episodes import EpisodeRecord
from agentenvs.eval.statistics import same_number
from agentenvs.vector.backends import BACKENDS, make_backend
from agentenvs.vector.slices import Crash, MakeRegistered, ResetRequest

COPIES_PER_WORKER = 16
PROBLEM_CHARS = 300
# (env id, env kwargs as canonical JSON, split): the records one set of env copies replays
EnvKey = tuple[str, str, str | None]


@dataclass
class Replayed:
    """The replay of one record: what differs (empty when it reproduces) and what the env said.

    ``transcript``: per turn ``{"observation", "response", "reward"}``, then
    ``{"observation"}`` for the last observation.
    """

    problems: list[str] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)

    @property
    def reproduced(self) -> bool:
        return not self.problems


def replay_records(
    records: Sequence[EpisodeRecord],
    *,
    backend: str = "inprocess",
    num_workers: int | None = None,
    batch: int | None = None,
    on_replayed: Callable[[int, Replayed], None] | None = None,
) -> list[Replayed]:
    """Replay every record (see the module docstring); one :class:`Replayed` per record, in order.

    ``batch`` env copies replay in lock-step: one in process (building an env
    can cost more than replaying an episode), :data:`COPIES_PER_WORKER` per
    worker process otherwise. ``on_replayed(index, replayed)`` is called as
    each record's replay ends (for progress display).
    """
    if backend not in BACKENDS:  # refused here, so that it never reads as every record's env failing
        raise ValueError(f"unknown backend {backend!r}; choose one of {list(BACKENDS)}")
    if num_workers is not None and num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    results: dict[int, Replayed] = {}
    by_env: dict[EnvKey, list[int]] = {}
    for index, record in enumerate(records):
        by_env.setdefault(env_key(record), []).append(index)
    for key, indices in sorted(by_env.items(), key=lambda item: json.dumps(item[0])):
        for index, replayed in _replay_env(key, records, indices, backend, num_workers, batch):
            results[index] = replayed
            if on_replayed is not None:
                on_replayed(index, replayed)
    return [results[index] for index in range(len(records))]


def env_key(record: EpisodeRecord) -> EnvKey:
    """What the env copies replaying ``record`` are built from."""
    return record.env_id, json.dumps(record.env_kwargs, sort_keys=True), record.split


def _replay_env(
    key: EnvKey,
    records: Sequence[EpisodeRecord],
    indices: Sequence[int],
    backend_name: str,
    num_workers: int | None,
    batch: int | None,
) -> Iterator[tuple[int, Replayed]]:
    """(index, replay) of each record of one env, batch after batch."""
    env_id, kwargs_text, split = key
    kwargs = json.loads(kwargs_text)
    if split is not None:
        kwargs["split"] = split
    if batch is None:
        batch = 1 if backend_name == "inprocess" else COPIES_PER_WORKER * (num_workers or os.cpu_count() or 1)
    size = max(1, min(batch, len(indices)))
    try:
        backend = make_backend(backend_name, MakeRegistered(env_id, kwargs), size, num_workers)
    except Exception as exc:  # an id or kwargs this version cannot build: every record of it fails
        problem = f"the env cannot be built: {type(exc).__name__}: {one_line(exc, PROBLEM_CHARS)}"
        yield from ((index, Replayed([problem])) for index in indices)
        return
    try:
        for start in range(0, len(indices), size):
            yield from _replay_chunk(backend, records, indices[start : start + size])
    finally:
        backend.close()


class _Episode:
    """One record being replayed: what the env has produced so far."""

    def __init__(self, record: EpisodeRecord) -> None:
        self.record = record
        self.observation = ""
        self.rewards: list[float] = []
        self.obs_keys: list[Any] = []
        self.state_keys: list[Any] = []
        self.components: dict[str, float] = {}
        self.turns: list[dict[str, Any]] = []
        self.final: Mapping[str, Any] | None = None
        self.ended: str | None = None  # "terminated" or "truncated": how the env ended the episode
        self.flags = (False, False)  # the env's terminated and truncated on the last turn replayed
        self.error: str | None = None

    def start(self, observation: Any, info: Mapping[str, Any]) -> None:
        self.observation = observation_text(observation)
        self.obs_keys.append(info.get("obs_key"))
        self.state_keys.append(info.get("state_key"))


def _reset(backend: Any, episodes: Mapping[int, _Episode]) -> None:
    """Reset every slot in one call; when that raises, slot by slot, so the error lands on its record."""
    requests = {
        slot: ResetRequest(episode.record.seed, episode.record.task_id) for slot, episode in episodes.items()
    }
    try:
        results = backend.reset(requests)
    except Exception:  # some record's reset raised: find which, one slot at a time
        results = {}
        for slot, request in requests.items():
            try:
                results.update(backend.reset({slot: request}))
            except Exception as exc:  # this record's seed or task id: its problem, the others replay
                episodes[
                    slot
                ].error = f"the reset raised {type(exc).__name__}: {one_line(exc, PROBLEM_CHARS)}"
    for slot, (observation, info) in results.items():
        episodes[slot].start(observation, info)


def _replay_chunk(
    backend: Any, records: Sequence[EpisodeRecord], chunk: Sequence[int]
) -> list[tuple[int, Replayed]]:
    episodes = {slot: _Episode(records[index]) for slot, index in enumerate(chunk)}
    _reset(backend, episodes)
    running = {
        slot for slot, episode in episodes.items() if episode.error is None and episode.record.responses
    }
    for episode in episodes.values():
        if episode.error is None and not episode.record.responses and not episode.record.overflowed:
            episode.error = "the record has no turns"
    turn = 0
    while running:
        responses = {slot: episodes[slot].record.responses[turn] for slot in sorted(running)}
        for slot, result in backend.step(responses).items():
            episode = episodes[slot]
            if isinstance(result, Crash):
                episode.error = (
                    f"the env crashed on turn {turn + 1}: {result.error.splitlines()[-1][:PROBLEM_CHARS]}"
                )
                running.discard(slot)
                continue
            observation, reward, terminated, truncated, info = result
            episode.rewards.append(float(reward))
            episode.obs_keys.append(info.get("obs_key"))
            episode.state_keys.append(info.get("state_key"))
            for name, value in info.get("reward_components", {}).items():
                episode.components[name] = episode.components.get(name, 0.0) + float(value)
            episode.turns.append(
                {"observation": episode.observation, "response": responses[slot], "reward": float(reward)}
            )
            episode.observation = observation_text(observation)
            ended = terminated or truncated
            episode.flags = (bool(terminated), bool(truncated))
            if ended:
                episode.final = info
                episode.ended = "terminated" if terminated else "truncated"  # both: play_episode's rule
            if ended or turn + 1 >= len(episode.record.responses):
                running.discard(slot)
        turn += 1
    return [
        (index, Replayed(_differences(episode), [*episode.turns, {"observation": episode.observation}]))
        for index, episode in zip(chunk, episodes.values(), strict=False)
    ]


def _differences(episode: _Episode) -> list[str]:
    """What the replay of one record shows that the record does not (the module docstring's checks)."""
    if episode.error is not None:
        return [episode.error]
    record = episode.record
    problems = []
    if record.overflowed:
        if episode.ended is not None:
            problems.append(
                f"recorded end_reason {record.end_reason!r} (the env still running), "
                f"the replay ended {episode.ended}"
            )
        if record.success or record.score != 0:
            problems.append("an episode ended by context overflow must fail with score 0")
    elif episode.ended is None:
        problems.append(f"the episode had not ended after the record's {record.turns} turns")
    elif len(episode.rewards) != record.turns:
        problems.append(
            f"the episode ended after {len(episode.rewards)} turns; the record has {record.turns}"
        )
    elif record.end_reason is not None and record.end_reason != episode.ended:
        problems.append(
            f"recorded {record.end_reason}=True (end_reason {record.end_reason!r}), "
            f"the replay ended {episode.ended}"
        )
    for name, recorded_flag, replayed_flag in zip(
        ("terminated", "truncated"), (record.terminated, record.truncated), episode.flags, strict=True
    ):
        if recorded_flag is not None and recorded_flag != replayed_flag and not problems:
            problems.append(
                f"recorded {name}={recorded_flag}, the replay's env returned {name}={replayed_flag} "
                f"on turn {len(episode.rewards) - 1}"
            )
    for name, replayed, recorded in (
        ("rewards", episode.rewards, record.rewards),
        ("obs_keys", episode.obs_keys, record.obs_keys),
        ("state_keys", episode.state_keys, record.state_keys),
    ):
        turn = next(
            (t for t, (a, c) in enumerate(zip(replayed, recorded, strict=False)) if not same_number(c, a)),
            None if len(replayed) == len(recorded) else min(len(replayed), len(recorded)),
        )
        if turn is not None:
            problems.append(
                f"{name} differ from turn {turn}: replayed {_entry(replayed, turn)}, recorded "
                f"{_entry(recorded, turn)}"
            )
    if record.claimed_turns is not None and record.claimed_turns != record.turns:
        problems.append(f"turns {record.claimed_turns}, but {record.turns} responses")
    if record.claimed_return is not None and not same_number(record.claimed_return, sum(episode.rewards)):
        problems.append(f"return {record.claimed_return!r}, replayed {sum(episode.rewards)!r}")
    if set(record.component_sums) != set(episode.components) or not all(
        same_number(record.component_sums[name], value) for name, value in episode.components.items()
    ):
        problems.append("reward component sums differ")
    if episode.final is not None:
        success = episode.final.get("success")
        replayed_success = None if success is None else bool(success)
        if replayed_success != record.success:
            problems.append(f"success {record.success!r}, replayed {replayed_success!r}")
        if not same_number(record.score, episode.final.get("score")):
            problems.append(f"score {record.score!r}, replayed {episode.final.get('score')!r}")
    return problems


def _entry(values: Sequence[Any], turn: int) -> str:
    return repr(values[turn]) if turn < len(values) else "nothing"
