"""WebShop's pages against the original's, turn by turn, on recorded random walks.

``tests/fixtures/webshop/pages_reference.json`` holds what WebShop's own text env
(@64fa2a5, with its Lucene search engine) showed for 20 of its goals over the
built-in generator's products, in the ``text``, ``text_rich`` and ``html``
modes; ``scripts/record_webshop_reference.py`` regenerates it. The env loads
the same products as official data, searches them with its own BM25 engine,
replays the same actions and must show the same pages and pay the same reward.
The ``html`` pages are compared by what a person sees on them: every visible
text in order, with whether it is a button, an option or a product link.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agentenvs.envs.webshop.env import WebShopEnv
from retrieval_index.analysis import analyze

RECORDING = json.loads(
    (Path(__file__).parents[2] / "fixtures" / "webshop" / "pages_reference.json").read_text(encoding="utf-8")
)
EPISODES = RECORDING["episodes"]
MODES = ("text", "text_rich", "html")


class VisibleTexts(HTMLParser):
    """Every visible text of a page, in order, as (kind, text)."""

    HIDDEN = frozenset({"head", "title", "style", "script", "meta"})
    VOID = frozenset(
        {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
    )

    def __init__(self) -> None:
        super().__init__()
        self.open: list[tuple[str, str]] = []
        self.items: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.open.append((tag, dict(attrs).get("class") or ""))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.open) - 1, -1, -1):
            if self.open[depth][0] == tag:
                del self.open[depth:]
                return

    def handle_data(self, data: str) -> None:
        text = data.strip()
        if not text or any(tag in self.HIDDEN for tag, _ in self.open):
            return
        tag, classes = self.open[-1] if self.open else ("", "")
        if tag == "button":
            kind = "button"
        elif tag == "label":
            kind = "option"
        elif "product-link" in classes.split():
            kind = "product"
        else:
            kind = "text"
        self.items.append((kind, text))


def visible_texts(page: str) -> list[tuple[str, str]]:
    parser = VisibleTexts()
    parser.feed(page)
    parser.close()
    return parser.items


def test_the_recording_is_wide():
    assert len(EPISODES) >= 20 and all(set(MODES) <= set(episode) for episode in EPISODES)
    actions = [turn[0] for episode in EPISODES for turn in episode["text"]]
    for kind in ("search[", "click[b", "click[buy now]", "click[description]", "click[next >]"):
        assert any(action.startswith(kind) for action in actions), kind
    assert sum(episode["text"][-1][3] for episode in EPISODES) >= 5  # episodes ending in a purchase


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("webshop-recorded")
    (directory / "items_shuffle_1000.json").write_text(json.dumps(RECORDING["items_shuffle"]))
    (directory / "items_ins_v2_1000.json").write_text(json.dumps(RECORDING["items_ins_v2"]))
    return directory


class RecordedSearch:
    """The original's Lucene hits per query, as recorded, so that the pages are checked
    apart from the ranking (which ``test_bm25_ranks_as_lucene_but_for_near_ties`` checks)."""

    def __init__(self, env: WebShopEnv) -> None:
        results = RECORDING["search_results"].items()
        self.rows = {keywords: [env.catalog.row_of(asin) for asin in asins] for keywords, asins in results}

    def search(self, keywords: str, k: int = 50) -> list[int]:
        return self.rows[keywords][:k]


def recorded_env(data_dir: Path, mode: str = "text") -> WebShopEnv:
    return WebShopEnv(
        split="test",
        data_dir=data_dir,
        cache_dir=data_dir / "cache",
        obs_mode=mode,
        noun_backend="fallback",  # as recorded: see the recording script
        max_turns=100,
    )


@pytest.fixture(scope="module", params=MODES)
def env(request, data_dir) -> WebShopEnv:
    env = recorded_env(data_dir, request.param)
    env.search_engine = RecordedSearch(env)
    return env


def task_id_of(env: WebShopEnv, goal: dict) -> str:
    """Our task for the original's goal: same product and options, same instruction and price cap."""
    catalog = env.catalog
    for index in range(catalog.num_goals):
        ours = catalog.goal(index)
        if ours.asin == goal["asin"] and ours.named_options == goal["goal_options"]:
            assert (ours.instruction_text, ours.price_upper) == (
                goal["instruction_text"],
                goal["price_upper"],
            )
            return f"{ours.asin}:{index}"
    raise AssertionError(f"no goal for {goal}")


def same_page(mode: str, ours: str, theirs: str) -> bool:
    return visible_texts(ours) == visible_texts(theirs) if mode == "html" else ours == theirs


@pytest.mark.parametrize("index", range(len(EPISODES)))
def test_each_page_and_reward_is_the_originals(env, index):
    episode = EPISODES[index]
    mode = env.obs_mode
    (_, first, _, _), *turns = episode[mode]
    obs, _ = env.reset(options={"task_id": task_id_of(env, episode["goal"])})
    assert same_page(mode, obs, first)
    for action, page, reward, done in turns:
        obs, _, terminated, _, info = env.step(action)
        assert same_page(mode, obs, page), action
        assert terminated == done
        if done:
            assert info["reward_components"]["outcome"] == pytest.approx(reward)


def test_bm25_ranks_as_lucene_but_for_near_ties(data_dir):
    """Measured on the recorded queries: the BM25 engine finds the same hits as WebShop's
    Lucene index, and orders them alike except where scores nearly tie (Lucene keeps each
    document's length in one byte, so close lengths score alike there but not here)."""
    env = recorded_env(data_dir)
    queries = RECORDING["search_results"]
    agree = {"first hit": 0, "top 10 as a set": 0, "top 50 as a set": 0}
    for keywords, lucene in queries.items():
        ours = [env.catalog.product_at(row).asin for row in env.search_engine.search(keywords)]
        assert len(ours) == len(lucene)
        agree["first hit"] += ours[:1] == lucene[:1]
        agree["top 10 as a set"] += set(ours[:10]) == set(lucene[:10])
        agree["top 50 as a set"] += set(ours) == set(lucene)
    assert len(queries) >= 50
    shares = {name: count / len(queries) for name, count in agree.items()}
    assert (
        shares["first hit"] >= 0.95 and shares["top 10 as a set"] >= 0.9 and shares["top 50 as a set"] >= 0.8
    )


def test_each_document_and_its_terms_are_what_lucene_indexes(data_dir):
    """Our text of every product is the document WebShop indexes, and our analyzer makes
    the same terms of it as Lucene's English analyzer (pyserini's default)."""
    env = recorded_env(data_dir)
    documents = RECORDING["documents"]
    assert len(documents) == env.catalog.num_products
    for product in env.catalog.products():
        document = documents[product.asin]
        assert product.search_text() == document["contents"]
        assert analyze(document["contents"]) == document["terms"], product.asin
