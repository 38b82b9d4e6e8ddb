"""Search QA: the passage lines every env of a process over one retriever shares.

A group's rollouts, spread over several envs, meet the same passages; the
lines made for one env serve the others, their memory is paid once per
process, and nothing of one env's episode reaches another's rewards.
"""

from __future__ import annotations

import copy
import pickle
import sys
import threading
import tracemalloc

import numpy as np
import pytest

from agentenvs.core.judges import contains_answer, normalize_answer
from agentenvs.envs.search.env import PassageLines, SearchEnv, corpus_line_parts, passage_lines_for
from agentenvs.envs.search.expert import SearchExpert

SMALL = 3000

# The built-in worlds in a private cache, with no data folder.
pytestmark = pytest.mark.usefixtures("private_search_cache")


def play(env: SearchEnv, seed: int, responses: list[str] | None = None) -> tuple[list[str], list[tuple]]:
    """The responses (the expert's unless given) and every turn's observation, reward and info."""
    obs, info = env.reset(seed=seed)
    turns, played, done = [(obs, info)], [], False
    while not done:
        response = SearchExpert(env).act(obs, info) if responses is None else responses[len(played)]
        played.append(response)
        obs, reward, terminated, truncated, info = env.step(response)
        turns.append((obs, reward, info))
        done = terminated or truncated or (responses is not None and len(played) == len(responses))
    return played, turns


def test_envs_over_one_retriever_share_one_store_and_their_copies_rejoin_it():
    first, second = SearchEnv("nq", corpus_passages=SMALL), SearchEnv("hotpotqa", corpus_passages=SMALL)
    shared = passage_lines_for(first.retriever)
    assert second.retriever is first.retriever
    for env in (first, second, pickle.loads(pickle.dumps(first)), copy.deepcopy(second)):
        assert env._passages is shared
    other = SearchEnv("nq", corpus_passages=SMALL, world_seed=1)
    assert other._passages is not shared
    # a copy of a store alone (not through an env) starts empty, with the same capacity
    assert len(pickle.loads(pickle.dumps(shared))) == 0


def test_lines_made_by_one_env_serve_another_and_a_clear_reaches_both():
    first, second = SearchEnv("nq", corpus_passages=SMALL), SearchEnv("nq", corpus_passages=SMALL)
    first.clear_passage_lines()
    responses, turns = play(first, seed=4)
    kept = len(first._passages)
    assert kept > 0
    assert play(second, seed=4, responses=responses)[1] == turns
    assert len(second._passages) == kept  # every row was found kept: none made again
    second.clear_passage_lines()
    assert len(first._passages) == 0
    assert play(first, seed=4, responses=responses)[1] == turns


@pytest.mark.parametrize("preset", ["search-r1", "mt-grpo", "mt-ppo"])
def test_one_envs_answers_never_reach_another_envs_answer_check(preset):
    # the paper presets pay when a search's passages hold a golden answer: each env checks its own
    # question's answers, however the two envs' turns interleave over the shared lines
    alone, mixed = [], []
    for seeds in [(0, 1), (2, 3), (5, 6), (7, 8)]:
        envs = [SearchEnv("nq", corpus_passages=SMALL, reward_preset=preset) for _ in seeds]
        experts = [play(env, seed)[0] for env, seed in zip(envs, seeds, strict=True)]
        # each env makes the other's searches too, so the same passages meet both questions' answers
        scripts = [
            [response for response in own + other if "<search>" in response][:3] + [own[-1]]
            for own, other in zip(experts, experts[::-1], strict=True)
        ]
        for env in envs:
            env.clear_passage_lines()
        alone.append(
            [play(env, seed, script)[1] for env, seed, script in zip(envs, seeds, scripts, strict=True)]
        )
        for env, seed in zip(envs, seeds, strict=True):
            env.reset(seed=seed)
        for env in envs:
            env.clear_passage_lines()
        turns: list[list[tuple]] = [[], []]
        for step in range(max(map(len, scripts))):
            for number, env in enumerate(envs):
                if step < len(scripts[number]) and not env._done:
                    obs, reward, *_, info = env.step(scripts[number][step])
                    turns[number].append((obs, reward, info))
        mixed.append([turns[0], turns[1]])
    for solo, together in zip(alone, mixed, strict=True):
        assert [played[1:] for played in solo] == together
    # the check was exercised: some search paid one env and not the other
    paid = {
        (number, step): played[step + 1][2]["reward_components"].get("retrieval")
        for pair in alone
        for number, played in enumerate(pair)
        for step in range(len(played) - 1)
    }
    assert {0.0, 1.0} <= set(paid.values())


def test_threads_sharing_one_store_get_what_one_thread_gets():
    env = SearchEnv("nq", corpus_passages=SMALL)
    corpus = env.retriever.corpus

    def read(row: int):
        return corpus_line_parts(corpus, row)

    rng = np.random.default_rng(0)
    # six results over 18 rows in a store of 4: most calls find theirs kept, and most evict another's
    results = [rng.choice(60, size=3, replace=False).tolist() for _ in range(6)]
    picks = [results[int(pick)] for pick in rng.integers(0, len(results), size=1500)]
    golden = [[normalize_answer(corpus[row].title)] for row in range(0, 60, 3)]
    expected_information = {tuple(rows): PassageLines().information(rows, read) for rows in picks}
    lines = PassageLines(capacity=4)  # rows and results evicted while other threads read them
    failures: list[BaseException] = []

    def worker(number: int) -> None:
        try:
            for step, rows in enumerate(picks[number::2]):
                answers = golden[(number + step) % len(golden)]
                assert lines.information(rows, read) == expected_information[tuple(rows)]
                shown = enumerate(map(read, rows), 1)
                plain = "".join(f"Doc {i}(Title: {title}) {text}\n" for i, (title, text, _) in shown)
                assert lines.answer_found(rows, read, answers) == bool(contains_answer(plain, answers))
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch inside a call, where a store without its lock breaks
    try:
        threads = [threading.Thread(target=worker, args=(number,)) for number in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    assert len(lines) <= 4


def test_more_envs_over_one_retriever_keep_no_more_lines():
    envs = [SearchEnv("nq", corpus_passages=SMALL) for _ in range(8)]
    envs[0].clear_passage_lines()
    scripts = [play(envs[0], seed)[0] for seed in range(30)]
    envs[0].clear_passage_lines()
    tracemalloc.start()
    try:
        for seed, script in enumerate(scripts):
            play(envs[0], seed, script)
        one_env, _ = tracemalloc.get_traced_memory()
        for env in envs[1:]:
            for seed, script in enumerate(scripts):
                play(env, seed, script)
        eight_envs, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # one env's pass keeps its rows' lines and results; each of seven more envs meeting them keeps only
    # its own episode (its last question, observation and generator), not lines of its own
    assert one_env > 50_000
    assert (eight_envs - one_env) / 7 < one_env / 10
