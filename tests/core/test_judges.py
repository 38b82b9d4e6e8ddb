"""Rule judges on hand-worked cases; the LLM judge's plumbing against a localhost OpenAI server."""

from __future__ import annotations

import pickle

import pytest

from agentenvs.core.judges import JudgeError, LLMJudge, RuleJudge, normalize_answer

from fixtures.openai_server import FakeOpenAIServer


def test_squad_normalisation():
    assert normalize_answer("  The Eiffel-Tower!! ") == "eiffeltower"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("THE\tanswer,  is   42.") == "answer is 42"


@pytest.mark.parametrize(
    ("metric", "prediction", "references", "expected"),
    [
        ("em", "the Beatles", ["Beatles", "The Fab Four"], 1.0),
        ("em", "Beatles band", ["Beatles"], 0.0),
        ("contains", "they were the Beatles, a band", ["beatles"], 1.0),
        ("contains", "Rolling Stones", ["Beatles"], 0.0),
        ("f1", "Paris France", ["Paris"], pytest.approx(2 / 3)),
        ("f1", "the city of Paris", ["Paris, France", "Paris"], 0.5),
        ("f1", "yes", ["no"], 0.0),
        ("f1", "no", ["no"], 1.0),
        ("f1", "London", ["Paris"], 0.0),
    ],
)
def test_rule_judge_hand_worked(metric, prediction, references, expected):
    assert RuleJudge(metric).score(prediction, references) == expected


def test_rule_judge_rejects_unknown_metric_and_pickles():
    with pytest.raises(ValueError):
        RuleJudge("bleu")
    judge = pickle.loads(pickle.dumps(RuleJudge("f1")))
    assert judge.score("Paris", ["Paris"]) == 1.0


def test_llm_judge_asks_once_per_prompt_and_reads_the_verdict():
    def reply(body):
        content = body["messages"][-1]["content"]
        return "Yes." if "Predicted answer: Paris" in content else "no"

    with FakeOpenAIServer(reply) as server:
        judge = LLMJudge(server.base_url, "judge-model", max_retries=0)
        assert judge.score("Paris", ["Paris, France"], question="Capital of France?") == 1.0
        assert judge.score("Paris", ["Paris, France"], question="Capital of France?") == 1.0
        assert judge.score("Lyon", ["Paris, France"], question="Capital of France?") == 0.0
        assert len(server.requests) == 2
        body = server.requests[0]
        assert body["model"] == "judge-model" and body["temperature"] == 0.0
        assert "Reference answers: Paris, France" in body["messages"][0]["content"]


def test_llm_judge_retries_then_raises_on_outage_and_on_nonsense():
    with FakeOpenAIServer(lambda body: "yes", fail_first=1) as server:
        judge = LLMJudge(server.base_url, "m", max_retries=2)
        assert judge.score("a", ["a"]) == 1.0
        assert len(server.requests) == 2
    with FakeOpenAIServer(lambda body: "yes", fail_first=10) as server:
        with pytest.raises(JudgeError, match="unavailable"):
            LLMJudge(server.base_url, "m", max_retries=1).score("a", ["a"])
    with FakeOpenAIServer(lambda body: "maybe so") as server:
        with pytest.raises(JudgeError, match="neither yes nor no"):
            LLMJudge(server.base_url, "m", max_retries=0).score("a", ["a"])
