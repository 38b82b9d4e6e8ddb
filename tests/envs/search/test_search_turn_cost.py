"""Search QA: the cheap paths of a turn give what the general ones give.

The well-formed-turn match of :class:`SearchProtocol`, the exact match on
answers normalised once per episode (and F1 taken as 1.0 on a non-empty
exact match), each checked against the general rule on hostile inputs.
"""

from __future__ import annotations

import itertools
import re
import sys

import numpy as np
import pytest

from agentenvs.core.judges import exact_match, normalize_answer, token_f1
from agentenvs.envs.search.protocol import SearchProtocol, cut_response

PIECES = (
    "<think>", "</think>", "<search>", "</search>", "<answer>", "</answer>", "<information>",
    "</information>", "<searchx>", "<", ">", "</", " ", "\n", "\x1c", "\u00a0", "\u200b", "\u202e",
    "\u2028", "\ufeff", "q", "Paris", "\ud800", "[", "]", "search[x]", "answer[y]", "<think >",
)  # fmt: skip

# The built-in worlds in a private cache, with no data folder.
pytestmark = pytest.mark.usefixtures("private_search_cache")


def hostile_responses() -> list[str]:
    rng = np.random.default_rng(0)
    drawn = ["".join(rng.choice(PIECES, size=int(rng.integers(1, 12)))) for _ in range(20000)]
    shaped = [
        f"{lead}<think>{a}</think>{gap}<{kind}>{b}</{kind}>{tail}"
        for lead, a, gap, kind, b, tail in itertools.product(
            ("", " \n", "\x1c", "\u200b", "x"), ("", "why <b>", "<searchx>", "</think"),
            ("", "\n", "\u00a0", "\ufeff", " ."), ("search", "answer"), (" q ", "", "<answer>a"),
            ("", " ", "</search>", " <search>z</search>"),
        )
    ]  # fmt: skip
    long = [
        "<think>" + "a<" * 100_000 + "</think><search>q</search>",
        "<think>x</think>" + " " * 100_000 + "<answer>" + "[" * 200_000,
        "<think>" + "<thin" * 40_000 + "</think>\n<answer> a </answer>",
    ]
    return drawn + shaped + long


def test_the_well_formed_turn_match_reads_as_the_general_rule():
    protocol = SearchProtocol()
    for response in hostile_responses():
        assert protocol.parse(response) == protocol.parse_cut(cut_response(response)), repr(response)


def test_regex_whitespace_is_what_str_strip_drops():
    # the well-formed match skips \\s between tags where the sequence rule skips what strip() drops
    space = re.compile(r"\s")
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert (space.fullmatch(char) is not None) == (char.strip() == ""), hex(code)


def test_answer_checks_equal_the_judges_on_hostile_answers():
    from agentenvs.envs.search.env import SearchEnv

    answers = [
        "Paris",
        "the Paris",
        "",
        " ",
        "yes",
        "no",
        "a",
        "ΣΣ",
        "İstanbul",
        "New  York",
        "\ud800",
        "1,000",
    ]
    for golden in itertools.combinations(answers, 2):
        normalized = frozenset(normalize_answer(answer) for answer in golden)
        for prediction in answers:
            correct, f1 = SearchEnv.answer_scores(prediction, golden, normalized)
            assert correct == bool(exact_match(prediction, golden))
            assert f1 == token_f1(prediction, golden), (prediction, golden)


def test_rows_of_the_in_process_index_are_what_retrieve_returns():
    from agentenvs.envs.search.env import SearchEnv, bounded_query, line_parts

    env = SearchEnv("hotpotqa", corpus_passages=3000, topk=5)
    assert env._rows_in_process
    env.reset(seed=0)
    words = env.question.question.split()
    queries = ["", "the of a", "\ud800 \u202e\u200b", "x" * 5000, " ".join(words), words[0], "1e30 10**30"]
    queries += [" ".join(words[i : i + 3]) for i in range(len(words))]
    for query in map(bounded_query, queries):
        expected = env.retriever.retrieve([query], env.topk)[0]
        env.retriever.scorer.clear_cache()
        rows, read = env._search(query)
        assert rows == [hit.index for hit in expected], query
        shown = [line_parts(hit.passage.contents) for hit in expected]
        assert [read(row)[:2] for row in rows] == shown, query


def test_cleared_passage_lines_give_the_same_turns():
    from agentenvs.envs.search.env import SearchEnv
    from agentenvs.envs.search.expert import SearchExpert

    env = SearchEnv("musique", corpus_passages=3000, reward_preset="search-r1")

    def played() -> list[tuple]:
        obs, info = env.reset(seed=3)
        turns, done = [(obs, info)], False
        while not done:
            obs, reward, terminated, truncated, info = env.step(SearchExpert(env).act(obs, info))
            turns.append((obs, reward, info))
            done = terminated or truncated
        return turns

    first, kept = played(), played()
    env.clear_passage_lines()
    assert len(env._passages) == 0
    assert first == kept == played()
