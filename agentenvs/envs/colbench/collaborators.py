"""The simulated human: answers the agent's questions from the task's hidden information.

:class:`RuleCollaborator` (default) is offline and deterministic. For a
built-in task it answers the hidden fact the question is about: the fact
whose keywords the question's words hit most (ties: the first fact), in at
most two sentences, and "I don't know." when no fact matches. For an
official task (no structured facts) it quotes the reference line sharing the
most words with the question (a word and its plural or other extension count
as one). :class:`LLMCollaborator` and :class:`LLMDesignCollaborator` ask any
OpenAI-compatible model with ColBench's own simulator instructions.

:func:`asked_facts` decides which facts a question asks about; the env uses
it for the ``information`` potential whatever collaborator answers.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Protocol

from agentenvs.core.chat import ChatClient
from agentenvs.envs.colbench.sources import CollaborationTask, Fact

BACKEND_REPLY_CHARS = 400
DONT_KNOW = "I don't know."
_WORD = re.compile(r"[a-z0-9_]+")
_STOPWORDS = frozenset(
    {
        "the", "a", "an", "and", "or", "of", "to", "in", "is", "it", "be", "for", "on", "what", "how", "do",
        "does", "should", "i", "you", "your", "my", "we", "our", "with", "that", "this", "are", "if",
        "return", "returns", "function", "def",
    }
)  # fmt: skip


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def asked_facts(facts: Sequence[Fact], question: str) -> tuple[str, ...]:
    """Keys of the fact the question asks about (empty when it asks about none)."""
    asked = set(words(question))
    best, best_hits = None, 0
    for fact in facts:
        hits = sum(keyword in asked for keyword in fact.keywords)
        if hits > best_hits:
            best, best_hits = fact, hits
    return (best.key,) if best is not None else ()


def quote_reference_line(reference: str, question: str) -> str:
    """The reference line sharing the most words with the question, or "I don't know."."""
    asked = {w for w in words(question) if w not in _STOPWORDS and len(w) > 2}
    best, best_hits = "", 0
    for line in reference.splitlines():
        present = set(words(line))
        hits = sum(any(w.startswith(a) or a.startswith(w) for w in present if len(w) > 2) for a in asked)
        if hits > best_hits:
            best, best_hits = line.strip(), hits
    return f"In what I have in mind, that part reads: {best}" if best else DONT_KNOW


class Collaborator(Protocol):
    """Answers the agent's message; ``dialogue`` is the whole conversation so far, as (role, text)."""

    def respond(self, task: CollaborationTask, dialogue: Sequence[tuple[str, str]], message: str) -> str: ...


class RuleCollaborator:
    """Offline, deterministic answers from the task's hidden facts (see the module docstring)."""

    def respond(self, task: CollaborationTask, dialogue: Sequence[tuple[str, str]], message: str) -> str:
        if not task.facts:
            return quote_reference_line(task.reference, message)
        keys = asked_facts(task.facts, message)
        if not keys:
            return DONT_KNOW
        return next(fact.answer for fact in task.facts if fact.key == keys[0])


# ColBench's code-collaborator prompt (sweet_rl prompts/human_simulator_code_prompt.txt), verbatim:
# the simulated person must behave as in the benchmark.
CODE_SIMULATOR_PROMPT = (
    "Your task is to simulate a human user that interacts with an LLM agent in a dialogue.\n"
    "You would like the LLM agent to help you with the following problem:\n"
    "{problem_description}\n\n"
    "Your goal is to engage in the conversation with the LLM agent so that it can get to a personalized "
    "answer.\n"
    "You should make use of the following hidden information to answer the LLM agent.\n"
    "YOU SHOULD BEHAVE LIKE A HUMAN THAT NEEDS THE HELP FROM AN AGENT.\n"
    'You SHOULD ONLY ANSWER QUESTIONS WITH INFORMATION PROVIDED IN THE HIDDEN INFORMATION, AND SAY YOU DON"T '
    "KNOW IF THE ANSWER CAN NOT BE FOUND IN THE HIDDEN INFORMATION.\n\n"
    "{hidden_information}\n\n"
    "Here is the dialogue so far:\n"
    "{dialogue_history}\n\n\n"
    "Now directly output your answer to the LLM agent IN TWO SENTENCES. DO NOT SAY ANYTHING ELSE."
)
SIMULATOR_SYSTEM = "You are a helpful assistant."


def dialogue_text(dialogue: Sequence[tuple[str, str]]) -> str:
    """The dialogue as ColBench shows it to the simulator: ``role:text`` blocks, then ``agent:``."""
    return "".join(f"{role}:{text}\n\n\n\n" for role, text in dialogue) + "agent:"


class LLMCollaborator:
    """A model behind any OpenAI-compatible endpoint plays the person, with ColBench's prompt.

    The hidden information is the reference function (as in ColBench, whose
    simulator ran at temperature 0 with ``max_tokens=4096``: build the client
    so). The env cuts the reply to 400 characters. A failing endpoint raises
    :class:`~agentenvs.core.chat.ChatError` (the episode crashes; it is never
    scored as an ordinary failure).

    Args:
        client: a :class:`~agentenvs.core.chat.ChatClient` (its model, temperature, retries).
    """

    def __init__(self, client: ChatClient) -> None:
        self.client = client

    def messages(
        self, task: CollaborationTask, dialogue: Sequence[tuple[str, str]], message: str
    ) -> list[dict]:
        prompt = CODE_SIMULATOR_PROMPT.format(
            problem_description=task.request,
            hidden_information=task.reference,
            dialogue_history=dialogue_text((*dialogue, ("assistant", message))),
        )
        return [{"role": "system", "content": SIMULATOR_SYSTEM}, {"role": "user", "content": prompt}]

    def respond(self, task: CollaborationTask, dialogue: Sequence[tuple[str, str]], message: str) -> str:
        return self.client.complete(self.messages(task, dialogue, message)).text


# ColBench's design-collaborator prompt (sweet_rl prompts/human_simulator_html_prompt.txt), verbatim.
DESIGN_SIMULATOR_PROMPT = (
    "Your task is to simulate a human user that interacts with an LLM agent in a dialogue.\n"
    "Your goal is to engage in the conversation with the LLM agent so that it can get to a personalized "
    "answer.\n"
    "YOU SHOULD BEHAVE LIKE A HUMAN THAT NEEDS THE HELP FROM AN AGENT.\n"
    "The ultimate goal is to have the agent to construct the EXACT DESIGN that you have in mind.\n"
    "You will be given an image made by the agent and a ground-truth image that the human user wants.\n"
    "Describe briefly how is the image made by the agent is mainly different from the image that the human "
    "user wants. \n"
    "You should PRIORITIZE MOST OUTSTANDING DIFFERENCES. DESCRIBE CONCRETELY HOW EACH COMPONENT IS DIFFERENT "
    "(e.g. image has a larger size, text alignment should be in the center, etc)\n"
    "1) The first image will be the agent provided image.\n"
    "2) The second image will be the image that the human user wants\n"
)


def image_url(png: bytes) -> dict:
    """An OpenAI image part for a PNG, as ColBench sent it (a base64 data URL)."""
    return {"type": "image_url", "image_url": {"url": "data:image;base64," + base64.b64encode(png).decode()}}


class LLMDesignCollaborator:
    """A vision model behind any OpenAI-compatible endpoint plays the person of the frontend tasks.

    As in ColBench it sees no dialogue: only its instructions, the render of the
    page the agent's message holds (or a note that there is none) and the
    render of the reference page, and describes the main differences. The env
    cuts the reply to 1,000 characters. Build the client with temperature 0 and
    ``max_tokens=4096`` as ColBench did.
    """

    def __init__(self, client: ChatClient) -> None:
        self.client = client

    def messages(self, agent_png: bytes | None, reference_png: bytes) -> list[dict]:
        content: list[dict] = [{"type": "text", "text": DESIGN_SIMULATOR_PROMPT}]
        if agent_png is not None:
            content += [
                {"type": "text", "text": "Below is the design the agent is referring to."},
                image_url(agent_png),
            ]
        else:
            content.append({"type": "text", "text": "The agent did not provide any visualization."})
        content += [
            {"type": "text", "text": "Below is the ground truth design that the human user wants."},
            image_url(reference_png),
        ]
        return [{"role": "user", "content": content}]

    def respond_to_renders(self, agent_png: bytes | None, reference_png: bytes) -> str:
        return self.client.complete(self.messages(agent_png, reference_png)).text
