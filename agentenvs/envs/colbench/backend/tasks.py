"""ColBench backend tasks: the built-in generator and the official ColBench files.

Built in (default): :class:`GeneratedTasks` draws a family of
:mod:`agentenvs.envs.colbench.backend.families` and its hidden parameters per task;
train 10,000 / valid 1,000 / test 1,000 tasks (ColBench: 10,000 train, 1,000
test). Splits are disjoint by content: a task belongs to the split its
(family, parameters) hash selects, so no hidden spec is in two splits; a
small family's spec may repeat within a split. Reference outputs are
computed here from the reference source (our own code, run in-process).

Official: ``OfficialTasks(data_dir)`` reads sweet_rl's published
``backend_tasks/train.jsonl`` and ``backend_tasks/test.jsonl`` (also found
directly in ``data_dir``), one JSON object per line with
``problem_description``, ``ground_truth`` (the reference function's source)
and ``test_cases`` (``{"test1": "f(...)", ...}``). Their reference outputs
come from running ``ground_truth`` in the sandbox (see the env).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentenvs.core.keys import stable_digest
from agentenvs.envs.colbench.backend.families import FAMILIES
from agentenvs.envs.colbench.backend.sandbox import CallResult
from agentenvs.envs.colbench.sources import Fact, GeneratedSource, OfficialSource, draw_in_split

PREFIX = "colbench"


@dataclass(frozen=True)
class BackendTask:
    """One backend task. ``expected`` is None where the reference must first run in the sandbox."""

    task_id: str
    request: str
    reference: str
    function: str
    calls: tuple[str, ...]
    facts: tuple[Fact, ...]
    family: str
    expected: tuple[CallResult, ...] | None = None
    default_answer: str = ""

    @property
    def content_key(self) -> str:
        """Digest of the hidden spec: the reference and its test calls."""
        return stable_digest((self.reference, self.calls))


def run_trusted_reference(source: str, calls: tuple[str, ...]) -> tuple[CallResult, ...]:
    """Outputs of one of our own generated references (trusted code, run in this process)."""
    namespace: dict = {}
    exec(source, namespace)  # noqa: S102 (our generated source, never an answer)
    return tuple(CallResult(True, eval(call, namespace)) for call in calls)


def generate_task(split: str, index: int) -> BackendTask:
    """The built-in task at ``index`` of ``split`` (deterministic)."""

    def draw(rng: np.random.Generator) -> tuple[str, dict]:
        family = FAMILIES[int(rng.integers(len(FAMILIES)))]
        return family.name, family.sample(rng)

    rng, (name, params) = draw_in_split(PREFIX, split, index, draw)
    family = next(f for f in FAMILIES if f.name == name)
    calls = tuple(family.calls(params, rng))
    reference = family.source(params)
    return BackendTask(
        task_id=f"{PREFIX}-{split}-{index:05d}",
        request=family.request,
        reference=reference,
        function=family.function,
        calls=calls,
        facts=family.facts(params),
        family=family.name,
        expected=run_trusted_reference(reference, calls),
        default_answer=family.source(family.default),
    )


class GeneratedTasks(GeneratedSource[BackendTask]):
    """The built-in backend tasks (see the module docstring)."""

    prefix = PREFIX

    def generate(self, split: str, index: int) -> BackendTask:
        return generate_task(split, index)


class OfficialTasks(OfficialSource[BackendTask]):
    """sweet_rl's published backend tasks, loaded from ``data_dir`` (see the module docstring)."""

    prefix = PREFIX
    folder = "backend_tasks"
    kind = "backend"

    def parse(self, record: dict, task_id: str) -> BackendTask:
        """One line as a task (facts: none; the reference is the hidden information)."""
        return BackendTask(
            task_id=task_id,
            request=str(record["problem_description"]),
            reference=str(record["ground_truth"]),
            function="",
            calls=tuple(str(call) for call in record["test_cases"].values()),
            facts=(),
            family="official",
        )
