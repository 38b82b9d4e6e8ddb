"""Search QA: Search-R1's texts and reading, reward presets, farming, expert, snapshots, loaders.

Most tests run on a small built-in world (3,000 passages) in a private cache.
"""

from __future__ import annotations

import copy
import json
import pickle
import re

import gymnasium as gym
import numpy as np
import pytest

import agentenvs
from agentenvs.core.registration import make_expert
from agentenvs.envs.search import SETS
from agentenvs.envs.search import env as search_env
from agentenvs.envs.search.env import (
    INSTRUCTIONS,
    INVALID_TEXT,
    PRESETS,
    QUERY_MAX_CHARS,
    QUERY_MAX_WORDS,
    SearchEnv,
    bounded_query,
    search_r1_score,
)
from agentenvs.envs.search.expert import SearchExpert, hop_query
from agentenvs.envs.search.protocol import SearchProtocol, SequenceChecker
from agentenvs.envs.search.questions import STYLES, TEST_SIZES, read_questions
from agentenvs.envs.search.tasks import builtin_dir

SMALL = 3000


pytestmark = pytest.mark.usefixtures("private_search_cache")


def make(dataset="hotpotqa", **kwargs) -> SearchEnv:
    return SearchEnv(dataset, corpus_passages=SMALL, **kwargs)


def search_id(dataset: str) -> str:
    """The registered id of one QA set (``"2wiki"`` -> ``agentenvs/Search-2Wiki-v0``)."""
    return next(f"agentenvs/Search-{name}-v0" for name, set_name, _ in SETS if set_name == dataset)


def play_expert(env: SearchEnv, episodes: int) -> tuple[int, int, int]:
    """The expert on test seeds ``0..episodes-1``: episodes solved, gold passages found, gold passages needed.

    Needed are the evidence passages the turn limit leaves room to search for.
    """
    solved, found, needed = 0, 0, 0
    for seed in range(episodes):
        obs, info = env.reset(seed=seed)
        expert = SearchExpert(env)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            done = terminated or truncated
        solved += info["success"]
        evidence = env.question.evidence[: env.max_turns - 1]
        needed += len(evidence)
        found += sum(int(p) in env.retrieved for p in evidence)
    return solved, found, needed


def good_query(env: SearchEnv) -> str:
    subject, relation, _ = env.question.hops[0]
    return hop_query(subject, relation)


def test_prompt_information_and_invalid_texts_are_search_r1s():
    env = make("nq")
    obs, info = env.reset(seed=0)
    assert obs.startswith(
        "Answer the given question. You must conduct reasoning inside <think> and </think> first"
    )
    assert obs == f"{INSTRUCTIONS}Question: {env.question.question.strip()}?\n"  # NQ style has no '?'
    assert env.instructions == INSTRUCTIONS
    obs, *_ = env.step(f"<think>hm</think><search> {good_query(env)} </search>")
    assert obs.startswith('\n\n<information>Doc 1(Title: "') and obs.endswith("</information>\n\n")
    docs = re.findall(r"Doc (\d)\(Title: \"[^\"]+\"\) ", obs)
    assert docs == ["1", "2", "3"]
    assert "\nDoc 2(Title: " in obs and "\nDoc 3(Title: " in obs
    before = env.state_key
    obs, reward, terminated, truncated, info = env.step("I will look it up")
    assert obs == INVALID_TEXT and not terminated
    assert info["reward_components"]["invalid_action"] == 1.0 and info["state_key"] == before
    obs, reward, terminated, truncated, info = env.step(
        f"<think>x</think><answer>{env.question.golden_answers[-1]}</answer>"
    )
    assert obs == "" and terminated and info["success"] and info["score"] == 1.0 and info["f1"] == 1.0


@pytest.mark.parametrize(
    ("response", "action", "well_formed"),
    [
        ("<think>a</think><search> q1 </search>", "search[q1]", True),
        ("<think>a</think>\n<answer> Paris </answer>", "answer[Paris]", True),
        ("<search>q</search>", "search[q]", False),  # no think first
        ("<answer>x</answer><search>q</search>", "answer[x]", False),  # cut at </search>: first block wins
        ("<search>q</search><answer>x</answer>", "search[q]", False),
        ("<think>a</think><search>q</search> trailing words", "search[q]", True),  # cut drops the tail
        ("<think>a</think>text<search>q</search>", "search[q]", False),
        ("<Search>q</Search><answer>y</answer>", "answer[y]", False),  # tags are case-sensitive
        ("<search>q <answer>a</answer>", "answer[a]", False),
        ("search[plain query]", "search[plain query]", False),
        ("<think><search>q</search></think>", "search[q]", False),
    ],
)
def test_reading_follows_search_r1(response, action, well_formed):
    parsed = SearchProtocol().parse(response)
    assert parsed.actions == (action,) and parsed.well_formed == well_formed


def test_tag_soup_never_raises_and_reads_like_the_regex():
    rng = np.random.default_rng(0)
    pieces = [
        "<search>",
        "</search>",
        "<answer>",
        "</answer>",
        "<think>",
        "</think>",
        "<information>",
        "q",
        " ",
        "\n",
    ]
    protocol = SearchProtocol()
    pattern = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
    for _ in range(3000):
        text = "".join(pieces[int(i)] for i in rng.integers(0, len(pieces), size=int(rng.integers(0, 14))))
        parsed = protocol.parse(text)
        cut = (
            text.split("</search>")[0] + "</search>"
            if "</search>" in text
            else (text.split("</answer>")[0] + "</answer>" if "</answer>" in text else text)
        )
        match = pattern.search(cut)
        if match:
            assert parsed.actions == (f"{match.group(1)}[{match.group(2).strip()}]",)
        elif not parsed.actions:
            assert parsed.error


def test_sequence_checker_is_search_r1s_rule():
    def valid(*pieces):
        checker = SequenceChecker()
        for piece in pieces:
            checker.feed(piece)
        return checker.complete

    info = '\n\n<information>Doc 1(Title: "A") text</information>\n\n'
    assert valid("<think>a</think><search>q</search>", info, "<think>b</think><answer>x</answer>")
    assert valid("<think>a</think> <answer>x</answer>")
    assert not valid("<think>a</think><search>q</search>", info, "<answer>x</answer>")  # think after info
    assert not valid("<think>a</think><search>q</search>", INVALID_TEXT, "<think>b</think><answer>x</answer>")
    assert not valid("<think>a</think><answer>x</answer> more")
    assert not valid("<think>a</think><search>q</search>", info)


@pytest.mark.parametrize(
    ("correct", "valid", "retrieved", "expected"),
    [
        (True, True, False, 1.0),
        (True, False, True, 0.8),
        (False, True, True, 0.2),
        (False, False, False, 0.1),
    ],
)
def test_search_r1_score_table(correct, valid, retrieved, expected):
    assert search_r1_score(correct, valid, retrieved) == pytest.approx(expected)


def play(env: SearchEnv, responses: list[str]) -> list[dict]:
    infos = []
    for response in responses:
        _, reward, terminated, truncated, info = env.step(response)
        infos.append({**info["reward_components"], "reward": reward})
        if terminated or truncated:
            break
    return infos


def test_search_r1_preset_pays_qa_em_format_at_the_end():
    env = make("nq", reward_preset="search-r1")
    env.reset(seed=3)
    gold, query = env.question.golden_answers[0], good_query(env)
    turns = play(
        env, [f"<think>a</think><search>{query}</search>", f"<think>b</think><answer>{gold}</answer>"]
    )
    assert [t["reward"] for t in turns] == [0.0, 1.0]
    env.reset(seed=3)
    turns = play(env, [f"<search>{query}</search>", f"<think>b</think><answer>{gold}</answer>"])
    assert turns[-1]["reward"] == pytest.approx(0.8)
    env.reset(seed=3)
    turns = play(
        env, [f"<think>a</think><search>{query}</search>", "<think>b</think><answer>nobody</answer>"]
    )
    assert turns[-1]["reward"] == pytest.approx(0.2)
    env.reset(seed=3)
    assert play(env, ["<answer>nobody</answer>"])[-1]["reward"] == pytest.approx(0.1)


def test_mt_ppo_preset_turn_rewards():
    env = make("nq", reward_preset="mt-ppo")
    env.reset(seed=4)
    gold, query = env.question.golden_answers[0], good_query(env)
    first, second, third = play(
        env,
        [
            f"<think>a</think><search>{query}</search>",
            f"<search>{query}</search>",
            f"<think>c</think><answer>{gold}</answer>",
        ],
    )
    # retrieval 0.3 (answer in the docs) + format 0.1 − 0.1 × 1 search
    assert first["retrieval"] == 1.0 and first["reward"] == pytest.approx(0.3 + 0.1 - 0.1)
    # malformed: −0.2; second search: −0.2
    assert second["format"] == -2.0 and second["reward"] == pytest.approx(0.3 - 0.2 - 0.2)
    assert third["outcome"] == 1.0 and third["reward"] == pytest.approx(1.0 + 0.1)
    env.reset(seed=4)
    assert play(env, ["<think>a</think><answer>nobody</answer>"])[-1]["outcome"] == pytest.approx(0.2)
    env.reset(seed=4)
    assert play(env, ["<answer>nobody</answer>"])[-1]["outcome"] == -1.0


def test_mt_ppo_charges_an_invalid_turn_as_the_search_it_did_not_make():
    env = make("nq", reward_preset="mt-ppo")  # 4 turns
    env.reset(seed=4)
    search = f"<think>a</think><search>{good_query(env)}</search>"
    first, stall = play(env, [search, "no action here"])
    assert first["reward"] == pytest.approx(0.3 + 0.1 - 0.1)
    # format −0.2, a second search's penalty −0.2, invalid_action −0.01; nothing retrieved
    assert stall["search_penalty"] == 2.0 and stall["reward"] == pytest.approx(-0.2 - 0.2 - 0.01)
    assert stall["reward"] < -0.2 - 0.2  # what a malformed search finding nothing pays
    env.reset(seed=4)
    *_, last = play(env, ["x", "x", "x", "x"])
    # the last turn ends the episode unanswered: outcome −1, as a last-turn search gets
    assert last["outcome"] == -1.0 and last["reward"] == pytest.approx(-1.0 - 0.2 - 0.1 - 0.01)


def test_mt_grpo_two_turn_id():
    env = gym.make("agentenvs/Search-TriviaQA-2Turn-v0", corpus_passages=SMALL).unwrapped
    env.reset(seed=2)
    assert env.max_turns == 2 and env.reward_preset == "mt-grpo"
    gold = env.question.golden_answers[0]
    first, second = play(
        env,
        [f"<think>a</think><search>{good_query(env)}</search>", f"<think>b</think><answer>{gold}</answer>"],
    )
    assert first["tool_execution"] == 1.0 and first["retrieval"] == 1.0
    assert first["reward"] == pytest.approx(0.2 + 0.5)
    assert second["format"] == 1.0 and second["outcome"] == 1.0 and second["reward"] == pytest.approx(1.2)


@pytest.mark.parametrize("preset", ["mt-ppo", "mt-grpo", "agentenvs"])
def test_repeating_a_good_query_farms_paper_presets_but_not_the_default(preset):
    env = make("nq", reward_preset=preset, max_turns=6)
    env.reset(seed=5)
    query = good_query(env)
    turns = play(env, [f"<think>a</think><search>{query}</search>"] * 5)
    retrieval = [t["retrieval"] for t in turns]
    if preset == "agentenvs":
        assert retrieval == [1.0, 0.0, 0.0, 0.0, 0.0]  # Φ: the gold passage counts once
    else:
        assert retrieval == [1.0] * 5
    paid = sum(PRESETS[preset]["retrieval"] * value for value in retrieval)
    assert paid == pytest.approx(PRESETS[preset]["retrieval"] * (1 if preset == "agentenvs" else 5))


@pytest.mark.parametrize("dataset", STYLES)
def test_expert_solves_every_style_and_finds_the_evidence(dataset):
    env = make(dataset, split="test")
    size = min(env.task_source.size("test"), 60)
    env.reset(seed=0)
    assert isinstance(make_expert(gym.make(search_id(dataset), corpus_passages=SMALL)), SearchExpert)
    solved, found, needed = play_expert(env, size)
    assert solved / size >= 0.95
    assert found / needed >= 0.9, f"{dataset}: expert searches found {found}/{needed} gold passages"


def test_splits_never_share_a_question_and_test_sizes():
    folder = builtin_dir(SMALL) / "questions"
    for style in STYLES:
        texts = {
            split: {q.question for q in read_questions(folder / f"{style}.{split}.jsonl")}
            for split in ("train", "valid", "test")
        }
        assert not texts["train"] & texts["test"] and not texts["train"] & texts["valid"]
        assert not texts["valid"] & texts["test"]
        assert 0 < len(texts["test"]) <= TEST_SIZES[style]


def test_snapshot_restore_pickle_and_deepcopy():
    env = make("musique")
    env.reset(seed=1)
    env.step(f"<think>a</think><search>{good_query(env)}</search>")
    snap = env.snapshot()
    snap = pickle.loads(pickle.dumps(snap))
    assert len(pickle.dumps(env)) < 20_000  # index and questions travel as handles
    twin, clone = pickle.loads(pickle.dumps(env)), copy.deepcopy(env)
    step = "<think>b</think><search>something else entirely</search>"
    expected = env.step(step)
    for other in (twin, clone):
        assert other.step(step)[1:4] == expected[1:4]
    env.restore(snap)
    again = env.step(step)
    assert (
        again[0] == expected[0]
        and again[1] == expected[1]
        and again[4]["state_key"] == expected[4]["state_key"]
    )


def test_every_id_is_registered():
    ids = {
        entry.env_id
        for entry in agentenvs.ENV_ENTRIES
        if entry.entry_point.startswith("agentenvs.envs.search")
    }
    assert ids == {
        "agentenvs/Search-v0",
        "agentenvs/Search-NQ-v0",
        "agentenvs/Search-TriviaQA-v0",
        "agentenvs/Search-PopQA-v0",
        "agentenvs/Search-HotpotQA-v0",
        "agentenvs/Search-2Wiki-v0",
        "agentenvs/Search-MuSiQue-v0",
        "agentenvs/Search-Bamboogle-v0",
        "agentenvs/Search-TriviaQA-2Turn-v0",
    }


def test_flashrag_files_and_a_retrieval_index_folder(tmp_path):
    from retrieval_index import BM25Retriever, Corpus, Passage, write_corpus_jsonl

    passages = [
        Passage("0", "Hamlet", "Hamlet is a tragedy written by William Shakespeare."),
        Passage("1", "Paris", "Paris is the capital and largest city of France."),
        Passage("2", "Danube", "The Danube is a river that flows through Vienna and Budapest."),
    ]
    write_corpus_jsonl(passages, tmp_path / "wiki.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "wiki.jsonl").read_text().splitlines()]
    assert rows[1] == {"id": "1", "contents": '"Paris"\nParis is the capital and largest city of France.'}
    corpus = Corpus.build(tmp_path / "wiki.jsonl", tmp_path / "store")
    BM25Retriever.build(corpus, tmp_path / "search" / "index")
    (tmp_path / "search" / "nq").mkdir(parents=True)
    (tmp_path / "search" / "hotpotqa").mkdir()
    nq = [
        {
            "id": "test_0",
            "question": "who wrote hamlet",
            "golden_answers": ["William Shakespeare", "Shakespeare"],
            "metadata": {},
        },
        {
            "id": "test_1",
            "question": "what is the capital of france",
            "golden_answers": ["Paris"],
            "metadata": {},
        },
    ]
    (tmp_path / "search" / "nq" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in nq))
    (tmp_path / "search" / "nq" / "train.jsonl").write_text(
        json.dumps(
            {
                "id": "train_0",
                "question": "which river flows through vienna",
                "golden_answers": ["Danube"],
                "metadata": {},
            }
        )
        + "\n"
    )
    hotpot = {
        "id": "5a8b57f25542995d1e6f1371",
        "question": "Were Scott Derrickson and Ed Wood of the same nationality?",
        "golden_answers": ["yes"],
        "metadata": {
            "type": "comparison",
            "level": "hard",
            "supporting_facts": {"title": ["Scott Derrickson", "Ed Wood"], "sent_id": [0, 0]},
        },
    }
    (tmp_path / "search" / "hotpotqa" / "dev.jsonl").write_text(json.dumps(hotpot) + "\n")

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTENVS_DATA", str(tmp_path))
        env = SearchEnv("nq", split="test")
        obs, info = env.reset(seed=0)
        assert info["task_id"] == "nq:test_0" and obs.endswith("Question: who wrote hamlet?\n")
        obs, _, _, _, info = env.step("<think>a</think><search>hamlet author</search>")
        assert obs.startswith('\n\n<information>Doc 1(Title: "Hamlet") Hamlet is a tragedy')
        assert info["reward_components"]["retrieval"] == pytest.approx(1.0)  # a golden answer was retrieved
        expert = SearchExpert(env)
        env.reset(seed=1)
        assert expert.queries() == ["what is the capital of france"]
        mix = SearchEnv("hotpotqa", split="test")
        assert mix.task_source.size("test") == 1 and mix.task_source.size("valid") == 0
        mix.reset(seed=0)
        assert mix.question.golden_answers == ("yes",) and mix.question.metadata["type"] == "comparison"


def test_a_retrieval_server_url_gives_the_same_information(tmp_path):
    from retrieval_index import BM25Retriever, Corpus
    from retrieval_index.server import ServerThread, create_app

    folder = builtin_dir(SMALL)
    local = BM25Retriever.load(folder / "bm25", Corpus.open(folder / "corpus"))
    env = make("hotpotqa")
    with ServerThread(create_app(local, kind="bm25")) as url:
        # our root URL, and the .../retrieve URL Search-R1's configs pass
        for remote in (make("hotpotqa", retriever=url), make("hotpotqa", retriever=f"{url}/retrieve")):
            assert len(pickle.dumps(remote)) < 20_000
            for seed in range(3):
                env.reset(seed=seed)
                remote.reset(seed=seed)
                response = f"<think>a</think><search>{good_query(env)}</search>"
                here, there = env.step(response), remote.step(response)
                assert here[0] == there[0] and here[4]["state_key"] == there[4]["state_key"]
                assert here[4]["reward_components"] == there[4]["reward_components"]
        with pytest.raises(ValueError, match="root or its /retrieve"):
            make("hotpotqa", retriever=f"{url}/search")


def test_the_env_table_row_states_the_test_sizes_and_presets():
    from pathlib import Path

    page = (Path(__file__).parents[3] / "docs" / "reference" / "env-table.md").read_text()
    [row] = [line for line in page.splitlines() if line.startswith("| `agentenvs/Search-v0`")]
    names = {
        "nq": "NQ",
        "triviaqa": "TriviaQA",
        "popqa": "PopQA",
        "hotpotqa": "HotpotQA",
        "2wiki": "2Wiki",
        "musique": "MuSiQue",
        "bamboogle": "Bamboogle",
    }
    for style, size in TEST_SIZES.items():
        assert f"{names[style]} {size:,}" in row
    assert "agentenvs / search-r1 / mt-grpo / mt-ppo" in row and set(PRESETS) == {
        "agentenvs",
        "search-r1",
        "mt-grpo",
        "mt-ppo",
    }
    for name in PRESETS["agentenvs"]:
        assert name in row


def test_world_and_questions_are_identical_across_processes_and_hash_seeds():
    import os
    import subprocess
    import sys

    script = (
        "from agentenvs.core import stable_digest\n"
        "from agentenvs.envs.search.world import Encyclopedia\n"
        "from agentenvs.envs.search.questions import STYLES, make_questions\n"
        "w = Encyclopedia(1500)\n"
        "qs = [q.to_flashrag() for s in STYLES for q in make_questions(w, s, 300)]\n"
        "print(stable_digest([[p.title, p.text] for p in w.passages]), stable_digest(qs))\n"
    )
    digests = set()
    for hash_seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr[-2000:]
        digests.add(out.stdout)
    assert len(digests) == 1


def test_env_survives_tag_soup_and_invalid_turns_change_nothing():
    env = make("hotpotqa", max_turns=50)
    rng = np.random.default_rng(1)
    pieces = [
        "<search>",
        "</search>",
        "<answer>",
        "</answer>",
        "<think>",
        "</think>",
        "<information>",
        "query words",
        "Kolby",
        " ",
        "\n",
        "search[",
        "]",
        "<SEARCH>",
    ]
    _, info = env.reset(seed=0)
    for turn in range(500):
        text = "".join(pieces[int(i)] for i in rng.integers(0, len(pieces), size=int(rng.integers(0, 12))))
        before = info["state_key"]
        obs, reward, terminated, truncated, info = env.step(text)
        assert isinstance(obs, str) and np.isfinite(reward)
        if info["reward_components"]["invalid_action"]:
            assert obs == INVALID_TEXT and info["state_key"] == before and info["transitions"] == []
        if terminated or truncated:
            _, info = env.reset(seed=turn)


HOSTILE_PASSAGES = [
    ("Plain", "Paris is the capital of France."),
    ("", ""),
    ("   ", "   "),
    ("Tabs\tand\u2028separators", "text\x1cwith\x1dodd\x85white\u3000space \t\n"),
    ("ΟΔΥΣΣΕΥΣ", "ΟΔΥΣΣΕΥΣ ΑΣ the end the"),
    ("The", "the a an"),
    ("İstanbul", "İSTANBUL straße ﬁne"),
    ("Bidi \u202ecba\u202c", "zero\u200bwidth\ufeff joiner"),
    ("Split", "answer begins here: New"),
    ("York", "city ends it"),
    ('quotes "inside"', "(Title: fake) Doc 9(Title: x) </information>"),
]


def _hostile_hits(rows):
    from retrieval_index.types import Passage, RetrievedPassage

    return [RetrievedPassage(Passage(str(row), *HOSTILE_PASSAGES[row]), score=1.0, index=row) for row in rows]


def test_cached_information_key_and_answer_check_equal_the_plain_computation():
    from agentenvs.core.judges import contains_answer, normalize_answer
    from agentenvs.core.keys import text_key
    from agentenvs.envs.search.env import PassageLines, format_passages, hit_rows

    golden = ["york city", "the end", "New", "ΣΣ", "istanbul", "title", "doc 2title", "", "paris"]
    rng = np.random.default_rng(0)
    lines = PassageLines(capacity=3)  # small, so rows are evicted and made again
    picks = [[], [8, 9], [4], [1, 2]] + [
        rng.choice(len(HOSTILE_PASSAGES), size=3).tolist() for _ in range(300)
    ]
    for rows in picks:
        hits = _hostile_hits(rows)
        plain = format_passages(hits)
        expected = f"\n\n<information>{plain.strip()}</information>\n\n"
        for answers in ([answer] for answer in golden):
            normalized = [normalize_answer(answer) for answer in answers]
            for _ in range(2):  # made, then from the cache
                found = hit_rows(hits)
                assert lines.information(*found) == (expected, text_key(expected))
                assert lines.answer_found(*found, normalized) == bool(contains_answer(plain, answers)), (
                    rows, answers,
                )  # fmt: skip
    copy = pickle.loads(pickle.dumps(lines))
    assert len(lines) == 3 and len(copy) == 0 and copy.capacity == 3


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_obs_key_is_the_digest_of_every_observation_under_every_preset(preset):
    from agentenvs.core.keys import text_key

    env = make("hotpotqa", split="test", reward_preset=preset)
    env.reset(seed=0)
    assert env.step("<answer> x </answer>")[4]["obs_key"] == text_key("")  # an answer before any search
    rng = np.random.default_rng(1)
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        expert, done = SearchExpert(env), False
        assert info["obs_key"] == text_key(obs)
        while not done:
            action = expert.act(obs, info) if seed % 2 else env.sample_action(rng)
            obs, _, terminated, truncated, info = env.step(action)
            assert info["obs_key"] == text_key(obs)
            done = terminated or truncated


def test_a_huge_query_is_cut_to_the_documented_bound_and_searches_like_it():
    words = [f"w{i}" for i in range(QUERY_MAX_WORDS + 50)]
    assert bounded_query("  ".join(words)) == " ".join(words[:QUERY_MAX_WORDS])
    assert bounded_query("x" * 10**6) == "x" * QUERY_MAX_CHARS
    assert bounded_query(" \t\n") == ""
    assert "``QUERY_MAX_WORDS`` (256)" in search_env.__doc__
    assert "``QUERY_MAX_CHARS`` (2,048)" in search_env.__doc__
    env, bounded = make(), make()
    env.reset(seed=0)
    bounded.reset(seed=0)
    query = good_query(env)
    huge = " ".join([query] * 400_000)  # megabytes: Search-R1's retriever reads its first 256 tokens
    observation, *_ = env.step(f"<think>x</think><search>{huge}</search>")
    expected, *_ = bounded.step(f"<think>x</think><search>{bounded_query(huge)}</search>")
    assert observation == expected and "<information>" in observation


def test_flashrag_files_with_numbers_for_answers_and_rows_without_ids(tmp_path):
    """Published question files hold years as JSON numbers and, in some sets, rows with no id."""
    from agentenvs.envs.search.tasks import QuestionRows

    rows = [
        {"question": "when was the eiffel tower finished", "golden_answers": [1889], "metadata": None},
        {"id": None, "question": "how many moons does mars have", "golden_answers": [2.0, "two"]},
        {"id": "", "question": "pi to two decimals", "golden_answers": 3.14},
        {"id": 17, "question": "is paris in france", "golden_answers": [True, None, ""]},
        {"id": "test_4", "question": "unanswerable", "golden_answers": [None]},
    ]
    path = tmp_path / "test.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n")
    questions = QuestionRows.read(path, "nq:")
    assert questions.ids == ("nq:#0", "nq:#1", "nq:#2", "nq:17", "nq:test_4")
    assert [questions.question(i).golden_answers for i in range(4)] == [
        ("1889",),
        ("2", "two"),
        ("3.14",),
        ("yes",),
    ]
    assert questions.question(1).id == "nq:#1" and questions.question(0).metadata == {}
    with pytest.raises(ValueError, match="'test_4' has no golden answer"):
        questions.question(4)
    path.write_text('{"id": "a", "question": "q", "golden_answers": ["x"]}\n[1, 2]\n')
    with pytest.raises(ValueError, match=r"test.jsonl:2: not a FlashRAG question row"):
        QuestionRows.read(path)
