"""The default built-in encyclopedia (100k passages): its size, its test splits, the expert on every set.

Slow: the first run builds the world and its BM25 index (minutes); later runs read the cache.
"""

from __future__ import annotations

import json

import pytest
from test_search import play_expert

from agentenvs.envs.search.env import SearchEnv
from agentenvs.envs.search.questions import STYLES, TEST_SIZES
from agentenvs.envs.search.tasks import DEFAULT_PASSAGES, builtin_dir, builtin_questions
from retrieval_index import Corpus

pytestmark = pytest.mark.slow


def test_default_world_has_100k_passages_and_the_originals_test_sizes():
    assert len(Corpus.open(builtin_dir() / "corpus")) >= DEFAULT_PASSAGES
    for style in STYLES:
        splits = {
            split: builtin_questions(style, split, DEFAULT_PASSAGES, 0)
            for split in ("train", "valid", "test")
        }
        assert len(splits["test"].ids) == TEST_SIZES[style], style
        assert len(splits["train"].ids) > 0 and len(splits["valid"].ids) > 0
        texts = [
            {json.loads(line)["question"] for line in splits[split].lines}
            for split in ("train", "valid", "test")
        ]
        assert not (texts[0] & texts[1] or texts[0] & texts[2] or texts[1] & texts[2])


@pytest.mark.parametrize("dataset", STYLES)
def test_expert_on_the_default_world(dataset):
    env = SearchEnv(dataset, split="test")
    episodes = min(200, env.task_source.size("test"))
    solved, found, needed = play_expert(env, episodes)
    assert solved / episodes >= 0.95
    assert found / needed >= 0.9, f"{dataset}: the expert's searches found {found}/{needed} gold passages"
