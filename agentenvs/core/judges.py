"""Judges: score a prediction against references, by rule or by an LLM.

``RuleJudge`` implements the QA metrics with SQuAD's answer normalisation
(lowercase, punctuation dropped, the articles a/an/the dropped, whitespace
collapsed), as Search-R1 and FlashRAG compute them:

- ``em``: 1 when the normalised prediction equals some normalised reference;
- ``f1``: the best token-level F1 over the references;
- ``contains`` (sub-EM): 1 when some normalised reference occurs inside the
  normalised prediction (Search-R1's "a golden answer is in the retrieved
  text" check uses it with the passages as the prediction).

``LLMJudge`` asks any OpenAI-compatible chat endpoint whether a prediction
answers a question the way the references do, at temperature 0, with
retries and a cache keyed by the prompt. A judge that cannot be reached
raises :class:`JudgeError` (after the client's retries): a judge outage is
never scored as a wrong answer.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
METRICS = ("em", "f1", "contains")


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation (lowercase, no punctuation, no articles, single spaces)."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, references: Sequence[str]) -> float:
    normalized = normalize_answer(prediction)
    return float(any(normalize_answer(reference) == normalized for reference in references))


def contains_answer(text: str, references: Sequence[str]) -> float:
    normalized = normalize_answer(text)
    return float(any(normalize_answer(reference) in normalized for reference in references))


def token_f1(prediction: str, references: Sequence[str]) -> float:
    """Best SQuAD token F1 of ``prediction`` over ``references``.

    As in FlashRAG, a yes/no/noanswer reference or prediction only scores
    when both sides are that same word.
    """
    normalized = normalize_answer(prediction)
    best = 0.0
    for reference in references:
        gold = normalize_answer(reference)
        special = ("yes", "no", "noanswer")
        if (normalized in special or gold in special) and normalized != gold:
            continue
        predicted_tokens, gold_tokens = normalized.split(), gold.split()
        common = sum((Counter(predicted_tokens) & Counter(gold_tokens)).values())
        if common == 0:
            continue
        precision, recall = common / len(predicted_tokens), common / len(gold_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


class Judge(Protocol):
    def score(self, prediction: str, references: Sequence[str], question: str = "") -> float:
        """A score in [0, 1] for ``prediction`` against ``references``."""
        ...


class RuleJudge:
    """Rule-based judge: ``metric`` is ``"em"``, ``"f1"`` or ``"contains"``."""

    def __init__(self, metric: str = "em") -> None:
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {list(METRICS)}")
        self.metric = metric
        self._score = {"em": exact_match, "f1": token_f1, "contains": contains_answer}[metric]

    def score(self, prediction: str, references: Sequence[str], question: str = "") -> float:
        return self._score(prediction, references)

    def __reduce__(self):
        return (RuleJudge, (self.metric,))


class JudgeError(RuntimeError):
    """The LLM judge gave no usable verdict (endpoint down, or a reply that is neither yes nor no)."""


JUDGE_PROMPT = (
    "You are grading an answer to a question. Reply with exactly one word: yes if the predicted "
    "answer means the same as one of the reference answers, no otherwise.\n\n"
    "Question: {question}\nReference answers: {references}\nPredicted answer: {prediction}\n\nVerdict:"
)


class LLMJudge:
    """An LLM behind an OpenAI-compatible chat endpoint grades ``prediction`` (1.0 yes, 0.0 no).

    Args:
        base_url: the endpoint's base URL (``http://host:port/v1``).
        model: the model name the endpoint serves.
        api_key: sent as a bearer token when given.
        timeout_s, max_retries: per request; after the retries a failure raises :class:`JudgeError`.
        cache_size: verdicts kept per prompt (the same prompt is asked once).
        prompt: the grading prompt, with ``{question}``, ``{references}`` and ``{prediction}``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        cache_size: int = 4096,
        prompt: str = JUDGE_PROMPT,
    ) -> None:
        from agentenvs.core.chat import ChatClient

        self.prompt = prompt
        self.client = ChatClient(
            base_url,
            model,
            api_key=api_key,
            temperature=0.0,
            max_tokens=8,
            timeout_s=timeout_s,
            max_retries=max_retries,
            cache_size=cache_size,
        )

    def score(self, prediction: str, references: Sequence[str], question: str = "") -> float:
        from agentenvs.core.chat import ChatError

        content = self.prompt.format(
            question=question, references="; ".join(references), prediction=prediction
        )
        try:
            reply = self.client.complete([{"role": "user", "content": content}])
        except ChatError as exc:
            raise JudgeError(f"LLM judge unavailable: {exc}") from exc
        verdict = reply.text.strip().lower().strip(string.punctuation + " ")
        words = verdict.split()
        if words and words[0] in ("yes", "no"):
            return 1.0 if words[0] == "yes" else 0.0
        raise JudgeError(f"LLM judge replied neither yes nor no: {reply.text[:200]!r}")
