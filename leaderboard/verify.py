"""Verification by replay: a submission counts only if every episode reproduces.

Checks, in order (all problems are collected, up to :data:`MAX_PROBLEMS`):

1. the document follows the schema (:func:`agentenvs.agents.bundle.validate`);
2. the panel is known, ``package_version`` is this board's version (every
   env digest covers the version, so a digest that matches was made by it:
   another version named beside matching digests is forged), and every env's
   digest equals the digest this version computes (a panel of another
   version or other tasks is refused);
3. coverage: every panel episode (env, task id, seed) is present exactly once,
   nothing else is, and every episode names the submitted model;
4. replay: each episode is reset from its task id and seed and stepped with
   its recorded responses; each turn's reward, obs key and state key, the
   turn count, component sums, return, success and score must equal the
   record's (an edited response changes them); an episode recorded as ended
   by ``context_overflow`` must still be running after its turns, and counts
   as a failure with score 0;
5. the summary is recomputed from the episodes and must equal the submitted
   one (never trusted; the stored numbers are the recomputed ones); the
   per-family summaries the board ranks by (:func:`family_summaries`) are
   computed the same way.

Token counts and timings cannot be replayed; they are shown as reported.

Replay runs episodes of one env in lock-step batches over an
:mod:`agentenvs.vector` backend (``inprocess`` by default; ``subprocess`` or
``ray`` spread large submissions over cores). The observations the replay
produces become the transcripts the board shows, so a transcript is what the
env said, never what the submitter claims.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import agentenvs
from agentenvs.agents.bundle import BundleError, summarize, summary_differences, validate
from agentenvs.agents.panel import PANELS, PanelSpec, env_panel, panel_digest
from agentenvs.core.keys import stable_digest
from agentenvs.core.prompting import observation_text
from agentenvs.core.registration import family_of
from agentenvs.vector.backends import make_backend
from agentenvs.vector.slices import Crash, MakeRegistered, ResetRequest

MAX_PROBLEMS = 20
COPIES_PER_WORKER = 16


@dataclass
class Verdict:
    """The outcome of :func:`verify_submission`."""

    problems: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    families: dict[str, Any] | None = None
    transcripts: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return not self.problems

    def add(self, problem: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)


def verify_submission(
    document: Any,
    *,
    backend: str = "inprocess",
    num_workers: int | None = None,
    batch: int | None = None,
    panels: Mapping[str, PanelSpec] = PANELS,
) -> Verdict:
    """Check ``document`` (a submission, see the module docstring); problems empty when verified.

    ``panels`` are the panels the board accepts, by name. ``batch`` env
    copies replay in lock-step: one in process (building an env can cost
    more than replaying an episode), :data:`COPIES_PER_WORKER` per worker
    process otherwise.
    """
    verdict = Verdict()
    try:
        validate("submission", document)
    except BundleError as exc:
        verdict.add(f"schema: {exc}")
        return verdict
    metadata, episodes = document["metadata"], document["episodes"]
    if stable_digest(metadata["settings"]) != metadata["settings_digest"]:
        verdict.add("the settings digest does not match the settings")
        return verdict
    spec = panels.get(metadata["panel"])
    if spec is None:
        verdict.add(f"unknown panel {metadata['panel']!r}")
        return verdict
    if metadata["package_version"] != agentenvs.__version__:
        verdict.add(
            f"package_version {metadata['package_version']!r}: this board replays agentenvs "
            f"{agentenvs.__version__} only (its panel digests cover the version)"
        )
        return verdict
    if not _check_panel(spec, metadata, verdict) or not _check_coverage(spec, metadata, episodes, verdict):
        return verdict
    verdict.transcripts = [[] for _ in episodes]
    by_env: dict[str, list[int]] = {}
    for index, episode in enumerate(episodes):
        by_env.setdefault(episode["env_id"], []).append(index)
    for env_id, indices in sorted(by_env.items()):
        _replay_env(env_id, spec.split, episodes, indices, verdict, backend, num_workers, batch)
    if verdict.verified:
        recomputed = summarize(episodes)
        for difference in summary_differences(document["summary"], recomputed):
            verdict.add(f"summary does not follow from the episodes: {difference}")
        verdict.summary = recomputed
        verdict.families = family_summaries(episodes)
    return verdict


def family_summaries(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per family: the ``overall`` of :func:`~agentenvs.agents.bundle.summarize` over its envs' episodes.

    A family's score is the unweighted mean of its envs' means (the eight
    Search ids count as one family), with the same bootstrap interval.
    """
    by_family: dict[str, list[Mapping[str, Any]]] = {}
    for episode in episodes:
        by_family.setdefault(family_of(episode["env_id"]), []).append(episode)
    return {family: summarize(rows)["overall"] for family, rows in sorted(by_family.items())}


def _check_panel(spec: PanelSpec, metadata: Mapping[str, Any], verdict: Verdict) -> bool:
    known = {}
    for env_id, digest in sorted(metadata["env_digests"].items()):
        if env_id not in agentenvs.ENV_IDS:
            verdict.add(f"{env_id!r} is not an agentenvs env id")
            continue
        try:
            actual = env_panel(env_id, spec).digest
        except Exception as exc:  # an unknown or unbuildable env id is the submission's problem
            verdict.add(f"env {env_id!r} cannot be built here: {type(exc).__name__}: {exc}")
            continue
        if actual != digest:
            verdict.add(f"{env_id}: panel digest {digest} is not this version's {actual}")
        known[env_id] = actual
    if verdict.problems:
        return False
    if panel_digest(spec, known) != metadata["panel_digest"]:
        verdict.add("the panel digest does not match the env digests")
        return False
    return True


def _check_coverage(
    spec: PanelSpec, metadata: Mapping[str, Any], episodes: Sequence[Mapping[str, Any]], verdict: Verdict
) -> bool:
    wanted = {e.key for env_id in metadata["env_digests"] for e in env_panel(env_id, spec).episodes}
    seen: set[tuple[str, str, int]] = set()
    for number, episode in enumerate(episodes):
        key = (episode["env_id"], episode["task_id"], episode["seed"])
        if key in seen:
            verdict.add(f"episode {number}: {key} appears more than once")
        elif key not in wanted:
            verdict.add(f"episode {number}: {key} is not on the panel")
        seen.add(key)
        if episode["split"] != spec.split:
            verdict.add(f"episode {number}: split {episode['split']!r}, the panel plays {spec.split!r}")
        if episode["agent"] != metadata["model"]:
            verdict.add(
                f"episode {number}: agent {episode['agent']!r} is not the model {metadata['model']!r}"
            )
    for key in sorted(wanted - seen)[:5]:
        verdict.add(f"panel episode {key} is missing")
    if len(wanted - seen) > 5:
        verdict.add(f"{len(wanted - seen)} panel episodes are missing in all")
    return verdict.verified


def _replay_env(
    env_id: str,
    split: str,
    episodes: Sequence[Mapping[str, Any]],
    indices: Sequence[int],
    verdict: Verdict,
    backend_name: str,
    num_workers: int | None,
    batch: int | None,
) -> None:
    if batch is None:
        batch = 1 if backend_name == "inprocess" else COPIES_PER_WORKER * (num_workers or os.cpu_count() or 1)
    size = min(batch, len(indices))
    backend = make_backend(backend_name, MakeRegistered(env_id, {"split": split}), size, num_workers)
    try:
        for start in range(0, len(indices), size):
            chunk = indices[start : start + size]
            _replay_chunk(backend, episodes, chunk, verdict)
    finally:
        backend.close()


class _Replay:
    """One episode being replayed: what it has produced so far."""

    def __init__(self, record: Mapping[str, Any], observation: Any, info: Mapping[str, Any]) -> None:
        self.record = record
        self.observation = observation_text(observation)
        self.rewards: list[float] = []
        self.obs_keys = [info["obs_key"]]
        self.state_keys = [info["state_key"]]
        self.components: dict[str, float] = {}
        self.turns: list[dict[str, Any]] = []
        self.final: Mapping[str, Any] | None = None
        self.error: str | None = None


def _replay_chunk(
    backend: Any, episodes: Sequence[Mapping[str, Any]], chunk: Sequence[int], verdict: Verdict
) -> None:
    requests = {
        slot: ResetRequest(episodes[i]["seed"], episodes[i]["task_id"]) for slot, i in enumerate(chunk)
    }
    replays = {
        slot: _Replay(episodes[chunk[slot]], *result) for slot, result in backend.reset(requests).items()
    }
    turn = 0
    running = {slot for slot, replay in replays.items() if replay.record["responses"]}
    for slot in set(replays) - running:
        if not _overflowed(replays[slot].record):
            replays[slot].error = "the record has no turns"
    while running:
        responses = {slot: replays[slot].record["responses"][turn] for slot in sorted(running)}
        for slot, result in backend.step(responses).items():
            replay = replays[slot]
            if isinstance(result, Crash):
                replay.error = f"the env crashed on turn {turn + 1}: {result.error.splitlines()[-1]}"
                running.discard(slot)
                continue
            observation, reward, terminated, truncated, info = result
            replay.rewards.append(float(reward))
            replay.obs_keys.append(info["obs_key"])
            replay.state_keys.append(info["state_key"])
            for name, value in info["reward_components"].items():
                replay.components[name] = replay.components.get(name, 0.0) + float(value)
            replay.turns.append(
                {"observation": replay.observation, "response": responses[slot], "reward": float(reward)}
            )
            replay.observation = observation_text(observation)
            ended = terminated or truncated
            recorded_turns = len(replay.record["responses"])
            if ended:
                replay.final = info
            if ended or turn + 1 >= recorded_turns:
                running.discard(slot)
        turn += 1
    for slot, replay in replays.items():
        index = chunk[slot]
        for problem in _differences(replay):
            verdict.add(
                f"episode {index} ({replay.record['env_id']} task {replay.record['task_id']}): {problem}"
            )
        verdict.transcripts[index] = [*replay.turns, {"observation": replay.observation}]


def _differences(replay: _Replay) -> list[str]:
    """What the replay of one episode shows that its record does not."""
    if replay.error is not None:
        return [replay.error]
    record = replay.record
    problems = []
    if _overflowed(record):
        if replay.final is not None:
            problems.append("the env ended the episode; the record says the context overflowed")
        if record["success"] or record["score"] != 0:
            problems.append("an episode ended by context overflow must fail with score 0")
    elif replay.final is None:
        problems.append(f"the episode had not ended after the record's {len(record['responses'])} turns")
    elif len(replay.rewards) != len(record["responses"]):
        problems.append(
            f"the episode ended after {len(replay.rewards)} turns; the record has {len(record['responses'])}"
        )
    for name, actual in (
        ("rewards", replay.rewards),
        ("obs_keys", replay.obs_keys),
        ("state_keys", replay.state_keys),
    ):
        claimed = record[name]
        if len(claimed) != len(actual) or not all(_same(a, c) for a, c in zip(actual, claimed)):
            turn = next(
                (t for t, (a, c) in enumerate(zip(actual, claimed)) if not _same(a, c)),
                min(len(actual), len(claimed)),
            )
            problems.append(f"{name} differ from turn {turn}")
    if record["turns"] != len(record["responses"]):
        problems.append(f"turns {record['turns']}, but {len(record['responses'])} responses")
    if not _same(record["return"], sum(replay.rewards)):
        problems.append(f"return {record['return']!r}, replayed {sum(replay.rewards)!r}")
    if set(record["component_sums"]) != set(replay.components) or not all(
        _same(record["component_sums"][name], value) for name, value in replay.components.items()
    ):
        problems.append("reward component sums differ")
    if replay.final is not None:
        if bool(replay.final["success"]) != record["success"]:
            problems.append(f"success {record['success']!r}, replayed {replay.final['success']!r}")
        if not _same(record["score"], replay.final["score"]):
            problems.append(f"score {record['score']!r}, replayed {replay.final['score']!r}")
    return problems


def _overflowed(record: Mapping[str, Any]) -> bool:
    return record.get("end_reason") == "context_overflow"


def _same(actual: Any, claimed: Any) -> bool:
    if isinstance(actual, str) or isinstance(claimed, str):
        return actual == claimed
    return math.isclose(float(actual), float(claimed), rel_tol=1e-9, abs_tol=1e-12)
