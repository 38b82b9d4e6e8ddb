"""Search QA: the shortcuts of a turn's bookkeeping give what the general rules give.

The collapse check of a passage line, the state key assembled from its parts, the
information kept per sequence of rows, the bare-action fast path; and what a
caller does to a turn's info leaves the env and its later turns as they were.
"""

from __future__ import annotations

import copy
import itertools
import sys

import numpy as np
import pytest

from agentenvs.core.keys import stable_digest, text_key
from agentenvs.envs.search.env import (
    PRESETS,
    PassageLines,
    SearchEnv,
    format_passages,
    hit_rows,
    passage_body,
)
from agentenvs.envs.search.expert import SearchExpert
from retrieval_index.corpus import OTHER_ASCII_WHITESPACE, is_collapsed

SMALL = 3000

# The built-in worlds in a private cache, with no data folder.
pytestmark = pytest.mark.usefixtures("private_search_cache")


def test_every_whitespace_character_but_the_space_is_non_printable_or_listed():
    # spaces_only's premise: text that passes it holds no whitespace str.split() sees
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if char.isspace() and char != " ":
            assert not char.isprintable() and (code >= 128 or code in OTHER_ASCII_WHITESPACE), hex(code)


def assert_collapse_check_holds(text: str) -> None:
    """The check never passes text that collapses to another, and decides printable text exactly."""
    collapsed = " ".join(text.split()) == text
    assert is_collapsed(text) <= collapsed, repr(text)
    if text.isprintable():
        assert is_collapsed(text) == collapsed, repr(text)


@pytest.mark.parametrize(
    "text",
    ["plain words here.", "", " ", "two  spaces", "trailing ", " leading", "tab\there", "nl\nhere", "\x1cfs",
     "\x1f", "\x0bvt", "\x0cff", "\rcr", "nbsp\u00a0here", "ideo\u3000space", "line\u2028sep",
     "zero\u200bwidth", "bidi \u202eabc\u202c", "lone \ud800 surrogate", "é accent", "ends with nbsp\u00a0",
     "\x85next", "nul\x00here", "many   spaces   inside", "x" * 5000 + "  y"],
)  # fmt: skip
def test_the_collapse_check_agrees_with_split_and_join(text):
    for line in (text, f"(Title: {text}) {text}", f"Doc 1(Title: t) {text} Doc 2(Title: t) x"):
        assert_collapse_check_holds(line)


def test_random_text_is_checked_as_split_and_join_reads_it():
    rng = np.random.default_rng(0)
    alphabet = list("ab .,()") + [" ", "  ", "\t", "\n", "\x1c", "\u00a0", "\u2003", "\u200b", "é", "\u3000"]
    for _ in range(5000):
        assert_collapse_check_holds("".join(rng.choice(alphabet, size=int(rng.integers(0, 40)))))


def test_information_of_lines_with_newlines_or_odd_whitespace_is_keyed_by_the_general_rule():
    # a row's own newline must not pass for a join, whitespace around a join must not vanish
    texts = ["one\ntwo", "ends with space ", " starts with space", "", "tab\tin", "nbsp\u00a0in", "ok text",
             "\u2028sep", "dbl  space"]  # fmt: skip
    lines = PassageLines(capacity=2)
    for first, second in itertools.product(texts, repeat=2):
        passages = {1: ("T", first, False), 2: ("U", second, False)}  # no store flags: the text is checked
        contents = [f"{title}\n{text}" for title, text, _ in passages.values()]
        expected = "".join(f"Doc {i}{passage_body(c)}" for i, c in enumerate(contents, 1))
        expected = f"\n\n<information>{expected.strip()}</information>\n\n"
        assert lines.information([1, 2], passages.__getitem__) == (expected, text_key(expected))
        lines = PassageLines(capacity=2)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_assembled_state_key_is_the_digest_of_the_state_key_data(preset):
    env = SearchEnv("hotpotqa", split="test", corpus_passages=SMALL, reward_preset=preset)
    rng = np.random.default_rng(5)
    # (compared after each turn: under search-r1 the turn's key is taken before its observation joins
    # the sequence state, so the info's key is the one of the moment before)
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        assert info["state_key"] == env._compute_state_key() == stable_digest(env._state_key_data())
        done = False
        while not done:
            response = SearchExpert(env).act(obs, info) if rng.random() < 0.5 else env.sample_action(rng)
            obs, _, terminated, truncated, info = env.step(response)
            assert env._compute_state_key() == stable_digest(env._state_key_data())
            done = terminated or truncated


def test_a_restored_branch_with_as_many_searches_gets_its_own_key():
    # the key is made again only when the search count changes; a restore to another branch at the
    # same count must not keep the key of the rows retrieved before it
    env = SearchEnv("hotpotqa", split="test", corpus_passages=SMALL)
    env.reset(seed=0)
    start = env.snapshot()
    words = env.question.question.split()
    branches = []
    for query in (words[0], " ".join(words[1:4])):
        env.restore(start)
        env.step(f"search[{query}]")
        branches.append((env.snapshot(), env.retrieved))
    assert branches[0][1] != branches[1][1]
    for snapshot, _ in branches + branches[::-1]:
        env.restore(snapshot)
        assert env.state_key == snapshot.state_key == stable_digest(env._state_key_data())
        info = env.step("answer[x]")[4]
        assert info["state_key"] == snapshot.state_key == stable_digest(env._state_key_data())


def test_information_kept_per_rows_is_recomputed_alike_after_eviction():
    env = SearchEnv("hotpotqa", split="test", corpus_passages=SMALL)
    corpus = env.retriever.corpus
    from retrieval_index.types import RetrievedPassage

    lines = PassageLines(capacity=2)  # rows and results are evicted and made again
    rng = np.random.default_rng(1)
    for _ in range(200):
        rows = rng.integers(0, len(corpus), size=int(rng.integers(1, 4))).tolist()
        hits = [RetrievedPassage(corpus[row], 1.0, row) for row in rows]
        expected = f"\n\n<information>{format_passages(hits).strip()}</information>\n\n"
        assert lines.information(*hit_rows(hits)) == (expected, text_key(expected))
        assert len(lines._rows) <= 2 and len(lines._results) <= 2


@pytest.mark.parametrize(
    "action", ["search[q]", "answer[a]", "search[]", "search[ a ] ]", "search[x]\n", " search[x]",
               "searchx[y]", "answer[[nested]]", "answer]", "search[\u202eq\u200b]", "Search[q]"],
)  # fmt: skip
def test_the_bare_action_fast_path_reads_as_the_pattern(action):
    from agentenvs.core.env import InvalidAction
    from agentenvs.envs.search.protocol import BARE_PATTERN

    env = SearchEnv("hotpotqa", split="test", corpus_passages=SMALL)
    bare = BARE_PATTERN.match(action)
    if bare is None:
        with pytest.raises(InvalidAction):
            env._parse_action(action)
    else:
        parsed = env._parse_action(action)
        assert (parsed.kind, parsed.content) == (bare.group(1), bare.group(2).strip())


def test_a_caller_mutating_every_info_value_changes_neither_the_env_nor_its_later_turns():
    def play(mutate: bool) -> list:
        env = SearchEnv("musique", split="test", corpus_passages=SMALL, reward_preset="mt-ppo")
        turns = []
        for seed in (0, 1):
            obs, info = env.reset(seed=seed)
            done = False
            while not done:
                seen = copy.deepcopy(info)
                turns.append(seen)
                if mutate:
                    for value in info.get("privileged", {}).values():
                        if isinstance(value, list):
                            value.append("injected")
                    for value in info.values():
                        if isinstance(value, list):
                            value.clear()
                        elif isinstance(value, dict):
                            value.update({"outcome": 9.0})
                    info.clear()
                obs, reward, terminated, truncated, info = env.step(SearchExpert(env).act(obs, seen))
                turns.append((obs, reward))
                done = terminated or truncated
            turns.append(copy.deepcopy(info))
        return turns

    assert play(mutate=True) == play(mutate=False)
