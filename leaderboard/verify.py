"""Verification by replay: a submission counts only if every episode reproduces.

Checks, in order (all problems are collected, up to :data:`MAX_PROBLEMS`):

1. the document follows the schema (:func:`agentenvs.eval.bundle.validate`);
2. the panel is known, ``package_version`` is this board's version (every
   env digest covers the version, so a digest that matches was made by it:
   another version named beside matching digests is forged), and every env's
   digest equals the digest this version computes (a panel of another
   version or other tasks is refused);
3. coverage: every panel episode (env, task id, seed) is present exactly once,
   nothing else is, and every episode names the submitted model;
4. replay (:mod:`agentenvs.eval.replay`): each episode is reset from its
   task id and seed and stepped with its recorded responses; each turn's
   reward, obs key and state key, the turn count, component sums, return,
   success and score must equal the record's (an edited response changes
   them); how each episode ended is checked against the replay: its
   ``end_reason``, ``terminated`` and ``truncated`` are required, the end
   reason must name the flag the env raised on the last turn (a changed one
   is refused as ``recorded terminated=True (…), the replay ended
   truncated``), each flag must be the one the env returned (a flipped flag
   is refused as ``recorded truncated=False, the replay's env returned
   truncated=True on turn N``), and an
   episode recorded as ended by ``context_overflow`` must still be running
   after its turns, and counts as a failure with score 0;
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import agentenvs
from agentenvs.core.keys import stable_digest
from agentenvs.core.registration import family_of
from agentenvs.eval.bundle import BundleError, validate
from agentenvs.eval.episodes import EpisodeRecord
from agentenvs.eval.panel import PANELS, PanelSpec, env_panel, panel_digest
from agentenvs.eval.replay import replay_records
from agentenvs.eval.statistics import summarize, summary_differences

MAX_PROBLEMS = 20


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

    @property
    def verified_summary(self) -> dict[str, Any]:
        """The summary recomputed from a verified submission's episodes."""
        if self.summary is None:
            raise RuntimeError("this verdict holds no summary: the submission did not verify")
        return self.summary

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

    ``panels`` are the panels the board accepts, by name. ``backend``,
    ``num_workers`` and ``batch`` say where and how many episodes replay at
    once (:func:`agentenvs.eval.replay.replay_records`).
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
    records = [EpisodeRecord.from_validated(episode) for episode in episodes]
    replays = replay_records(records, backend=backend, num_workers=num_workers, batch=batch)
    for number, (record, replayed) in enumerate(zip(records, replays, strict=False)):
        where = f"episode {number} ({record.env_id} task {record.task_id})"
        # the schema allows records without them (older results files); the board does not
        unsaid = [name for name in ("end_reason", "terminated", "truncated") if getattr(record, name) is None]
        if unsaid:
            verdict.add(f"{where}: no {', '.join(unsaid)}; every episode on the board records how it ended")
        for problem in replayed.problems:
            verdict.add(f"{where}: {problem}")
    verdict.transcripts = [replayed.transcript for replayed in replays]
    if verdict.verified:
        recomputed = summarize(episodes)
        for difference in summary_differences(document["summary"], recomputed):
            verdict.add(f"summary does not follow from the episodes: {difference}")
        verdict.summary = recomputed
        verdict.families = family_summaries(episodes)
    return verdict


def family_summaries(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per family: the ``overall`` of :func:`~agentenvs.eval.statistics.summarize` over its envs' episodes.

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
