"""Search QA's expert: follows the question's gold evidence path, then answers.

For each hop ``(subject, relation)`` it searches ``"{subject} {relation keywords}"``
(the bridge entity of the next hop is the object the previous hop's passage
states; the expert knows it from the path), keeping one turn for the answer:
with fewer turns than hops it searches the first hops only. On official data
without a path it searches the question once. It answers the first golden
answer (privileged), so its success rate shows that every question can be
answered and the env scores it; the share of gold evidence its searches
retrieve shows that the corpus and index make the path findable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentenvs.envs.search.world import RELATIONS

if TYPE_CHECKING:
    from agentenvs.envs.search.env import SearchEnv


def hop_query(subject: str, relation: str) -> str:
    return f"{subject} {RELATIONS[relation].keywords}"


class SearchExpert:
    def __init__(self, env: SearchEnv) -> None:
        self.env = env

    def queries(self) -> list[str]:
        question = self.env.question
        if not question.hops:
            return [question.question]
        return [hop_query(subject, relation) for subject, relation, _ in question.hops]

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        env = self.env
        queries = self.queries()
        turns_left = env.max_turns - env.turn
        if env.searches < len(queries) and turns_left > 1:
            return env.protocol.format(f"search[{queries[env.searches]}]")
        return env.protocol.format(f"answer[{env.question.golden_answers[0]}]")
