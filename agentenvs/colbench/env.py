"""``agentenvs/ColBench-v0``: write a Python function for a person who only tells you details when asked.

ColBench's backend programming (SWEET-RL, Zhou et al. 2025). Each task is a
short, vague request for a function; a hidden reference function decides
the details the request leaves out (prices, thresholds, rules, rounding,
edge cases), and ~10 hidden test calls compare the agent's function with
it. A simulated collaborator answers questions from the hidden information.

=================  =============================================================
observation        reset: the request (e.g. ``I need a Python function
                   `order_total(quantity)` ...``); after a question: the
                   collaborator's reply (≤ 400 characters, ColBench's cut);
                   after the answer: ``Your function passed K of N hidden
                   tests.``
action             free text, one message per turn: a question (anything),
                   or ``I WANT TO ANSWER:`` followed by the code (the text
                   between the first and a second marker is the answer;
                   markdown fences are stripped). On the last turn the whole
                   message is the answer, as in ColBench. A leading
                   ``<think>…</think>`` block is dropped; text after
                   ``OUTPUT:`` replaces the message (ColBench's rule).
reward             weighted sum of (unweighted values in ``reward_components``):
  outcome          the score when the episode ends (share of hidden tests
                   passed); weight 1.0 — ColBench's sparse setting
  information      Φ(s') − Φ(s), **potential-based**; weight 0.0. Φ = share of
                   the task's hidden facts asked about so far (a question is
                   matched to the fact whose keywords it hits most, whatever
                   the collaborator answers; official tasks have no facts, so
                   Φ = 0). It sums to Φ(end) ≤ 1 over an episode, so asking
                   the same thing twice earns nothing: the turn-level signal a
                   step-level method would use.
  format           1 for a non-empty message whose answer (if any) has code;
                   not potential-based; weight 0.0
  invalid_action   1 for an empty or unreadable message (the turn is not
                   counted against the dialogue; state unchanged); not
                   potential-based; weight 0.0
termination        an answer was given (scored at once)
truncation         ``max_turns`` turns (default 10, ColBench's limit); the
                   last turn's message is the answer, so only an invalid last
                   turn truncates without one (score 0)
state key          the task's hidden spec (reference + test calls) + the set of
                   facts asked about + the answer state (open, or the score);
                   the dialogue's wording and the turn count are excluded
=================  =============================================================

Scoring (``scoring=``): ``"sandbox"`` (default) or ``"reference"`` (ColBench's
rules, for parity); see :mod:`agentenvs.colbench.scoring`. Every answer runs
in :class:`~agentenvs.colbench.sandbox.Sandbox`; the reference outputs stay in
this process. ``info["privileged"]`` (SWEET-RL's training-time information):
``reference`` (the source), ``hidden_facts`` (the collaborator's answers,
one per fact) and ``function``; never rendered. Tasks: built in (train
10,000 / valid 1,000 / test 1,000) or ColBench's files with ``data_dir=``
(see :mod:`agentenvs.colbench.tasks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from agentenvs.colbench.collaborators import BACKEND_REPLY_CHARS, Collaborator, RuleCollaborator, asked_facts
from agentenvs.colbench.protocol import ANSWER_MARKER, DialogueProtocol, extract_answer
from agentenvs.colbench.sandbox import CallResult, Sandbox, SandboxLimits
from agentenvs.colbench.scoring import SCORINGS, Evaluation, evaluate
from agentenvs.colbench.tasks import BackendTask, GeneratedTasks, OfficialTasks
from agentenvs.core.env import AgentEnv, StepOutcome

INSTRUCTIONS = (
    "You are helping a person write a Python function. Their request is vague on purpose: the "
    "exact rules (numbers, edge cases, rounding, formats) are known only to them. Ask short, "
    "specific questions, one per message; they answer briefly, in at most two sentences, and say "
    "they don't know about anything they have not decided. You have at most {max_turns} messages "
    "in all. When you know enough, send a message that starts with \"I WANT TO ANSWER:\" followed "
    "directly by the raw Python code of the function (no explanations). Your last message is "
    "taken as your answer whatever it says."
)
REFERENCE_LIMITS = SandboxLimits(call_seconds=10.0)


@dataclass(frozen=True)
class ColBenchSnapshot:
    """Everything that restores a ColBench episode exactly."""

    task_id: str
    turn: int
    done: bool
    world: tuple[frozenset[str], Evaluation | None, tuple[tuple[str, str], ...]]
    potentials: tuple[tuple[str, float], ...]
    state_key: str
    rng_state: dict


class ColBenchEnv(AgentEnv[BackendTask, tuple[str, str]]):
    """ColBench backend programming; see the module docstring.

    Args:
        split: ``"train"``, ``"valid"`` or ``"test"`` (official files: ``"train"``, ``"test"``).
        data_dir: folder with ColBench's ``backend_tasks/{train,test}.jsonl``; built-in tasks when None.
        collaborator: who answers questions (:class:`RuleCollaborator` when None).
        scoring: ``"sandbox"`` or ``"reference"`` (ColBench's rules).
        sandbox_limits: limits of each evaluation (1 s per test call by default).
        max_turns: messages before the episode ends (10).
        reward_weights: overrides of ``outcome``, ``information``, ``format``, ``invalid_action``.
        render_mode: ``"ansi"`` renders the dialogue.
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "outcome": 1.0,
        "information": 0.0,
        "format": 0.0,
        "invalid_action": 0.0,
    }
    default_max_turns = 10
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}
    reply_chars = BACKEND_REPLY_CHARS

    def __init__(
        self,
        split: str = "train",
        *,
        data_dir: str | None = None,
        collaborator: Collaborator | None = None,
        scoring: str = "sandbox",
        sandbox_limits: SandboxLimits | None = None,
        max_turns: int | None = None,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
        source = OfficialTasks(data_dir) if data_dir is not None else GeneratedTasks()
        super().__init__(
            source, split=split, max_turns=max_turns, reward_weights=reward_weights,
            protocol=DialogueProtocol(), render_mode=render_mode,
        )
        hide = [str(path.parent) for path in source.files.values()] if data_dir is not None else []
        self.scoring = scoring
        self.collaborator = collaborator if collaborator is not None else RuleCollaborator()
        self.sandbox = Sandbox(sandbox_limits, hide=hide)
        self.reference_sandbox = Sandbox(REFERENCE_LIMITS, hide=hide)
        self.instructions = INSTRUCTIONS.format(max_turns=self.max_turns)
        self.task: BackendTask | None = None
        self.asked: frozenset[str] = frozenset()
        self.evaluation: Evaluation | None = None
        self.dialogue: tuple[tuple[str, str], ...] = ()
        self._expected: dict[str, tuple[CallResult, ...]] = {}

    # ------------------------------------------------------------ world hooks
    def _start(self, task: BackendTask) -> None:
        self.task = task
        self.asked = frozenset()
        self.evaluation = None
        self.dialogue = (("user", task.request),)

    def _parse_action(self, action: str) -> tuple[str, str]:
        answer = extract_answer(action)
        if answer is not None:
            return ("answer", answer)
        if self.turn + 1 >= self.max_turns:
            return ("answer", action)
        return ("ask", action)

    def _apply(self, primitive: tuple[str, str]) -> StepOutcome:
        kind, text = primitive
        if kind == "ask":
            self.asked = self.asked | set(asked_facts(self.task.facts, text))
            reply = self.collaborator.respond(self.task, self.dialogue, text)[: self.reply_chars]
            self.dialogue = (*self.dialogue, ("assistant", text), ("user", reply))
            return StepOutcome(reply)
        self.evaluation = evaluate(text, self.task.calls, self.expected(self.task), self.sandbox, self.scoring)
        self.dialogue = (*self.dialogue, ("assistant", f"{ANSWER_MARKER}{text}"))
        feedback = f"Your function passed {self.evaluation.passed} of {self.evaluation.total} hidden tests."
        return StepOutcome(feedback, {"outcome": self.evaluation.score}, terminated=True)

    def expected(self, task: BackendTask) -> tuple[CallResult, ...]:
        """Reference outputs of the task's calls (official references run once, in the sandbox)."""
        if task.expected is not None:
            return task.expected
        key = f"{self.scoring}:{task.task_id}"
        if key not in self._expected:
            run = self.reference_sandbox.run(task.reference, task.calls, split_namespace=self.scoring == "reference")
            self._expected[key] = run.results
        return self._expected[key]

    def _observation_text(self) -> str:
        return self.task.request

    def _state_key_data(self) -> Any:
        answer = None if self.evaluation is None else self.evaluation.score
        return (self.task.content_key, self.asked, answer)

    def _is_success(self) -> bool:
        return self.evaluation is not None and self.evaluation.score == 1.0

    def _score(self) -> float:
        return 0.0 if self.evaluation is None else float(self.evaluation.score)

    def _potentials(self) -> Mapping[str, float]:
        facts = self.task.facts
        return {"information": len(self.asked) / len(facts) if facts else 0.0}

    def _privileged(self) -> Mapping[str, Any] | None:
        if self.task is None:
            return None
        return {
            "reference": self.task.reference,
            "hidden_facts": [fact.answer for fact in self.task.facts],
            "function": self.task.function,
        }

    def _format_value(self, parsed: Any) -> float:
        return 1.0 if parsed.well_formed else 0.0

    def action_help(self) -> str:
        return (f"Send a question for the person, or \"{ANSWER_MARKER}\" followed by your Python code.")

    def render(self) -> Any:
        if self.render_mode == "ansi":
            return "\n\n".join(f"{role}: {text}" for role, text in self.dialogue)
        return None

    # --------------------------------------------------------- exact restores
    def _world_state(self) -> Any:
        return (self.asked, self.evaluation, self.dialogue)

    def _restore_world(self, state: Any, *, started: bool) -> None:
        self.asked, self.evaluation, self.dialogue = state

    def snapshot(self) -> ColBenchSnapshot:
        """A small picklable object that :meth:`restore` turns back into this exact state."""
        return ColBenchSnapshot(
            task_id=self.task_id, turn=self.turn, done=self._done, world=self._world_state(),
            potentials=tuple(sorted(self._potential_values.items())), state_key=self._state_key,
            rng_state=self.np_random.bit_generator.state,
        )

    def restore(self, snapshot: ColBenchSnapshot) -> None:
        """Put the env back into the state :meth:`snapshot` took (any env of this class and arguments)."""
        self.task_id = snapshot.task_id
        self._start(self.task_source.load(snapshot.task_id))
        self._restore_world(snapshot.world, started=True)
        self.turn, self._done = snapshot.turn, snapshot.done
        self._potential_values = dict(snapshot.potentials)
        self._state_key = snapshot.state_key
        self.np_random.bit_generator.state = snapshot.rng_state

    # ---------------------------------------------------------------- agents
    def expert(self) -> Any:
        """The expert named in the family's registry entry (imported on demand)."""
        from agentenvs.colbench.expert import ColBenchExpert

        return ColBenchExpert(self)

    def sample_action(self, rng: np.random.Generator) -> str:
        """A random message: a fact's question, an off-topic question, or an answer (default or reference)."""
        kind = rng.random()
        facts = self.task.facts
        if kind < 0.5 and facts:
            return facts[int(rng.integers(len(facts)))].question
        if kind < 0.75:
            return "Could you tell me more about what you need?"
        code = self.task.default_answer if kind < 0.9 else self.task.reference
        return f"{ANSWER_MARKER}\n{code}"

