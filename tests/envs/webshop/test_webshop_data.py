"""WebShop data: the official files' loader rules, the generated catalog, the search index."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from agentenvs.envs.webshop.catalog import Catalog, GoalTasks, open_catalog
from agentenvs.envs.webshop.env import WebShopEnv
from agentenvs.envs.webshop.expert import WebShopExpert
from agentenvs.envs.webshop.official import (
    load_official,
    official_catalog,
    parse_pricing,
    price_cap,
    synthetic_goals,
)
from agentenvs.envs.webshop.search import BM25Index, analyze_words
from agentenvs.envs.webshop.tasks import PRODUCT_TYPES, generate, generated_catalog, write_official_files


def raw(asin: str, **fields) -> dict:
    entry = {
        "asin": asin, "name": f"Product {asin}", "full_description": "A thing.", "small_description": ["One"],
        "images": [f"http://img/{asin}.jpg", "http://img/second.jpg"], "category": "fashion",
        "query": "Things ", "product_category": "A › B › C", "pricing": "$10.00", "customization_options": {},
        "brand": "dropped", "product_information": {"dropped": True},
    }  # fmt: skip
    entry.update(fields)
    return entry


@pytest.fixture(scope="module")
def official_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("webshop-official")
    products = [
        raw(
            "B00000000A",
            pricing="$12.99",
            customization_options={
                "Color": [
                    {"value": " Black/White ", "image": "http://img/bw.jpg"},
                    {"value": "Dark Brown", "image": None},
                ],
                "Size": [{"value": "X-Large", "image": None}, {"value": "Small", "image": None}],
                "Style": None,
            },
        ),
        raw("nan"),
        raw("B00000000TOOLONG"),
        raw("B00000000A", name="duplicate, dropped"),
        raw("B00000000B", pricing="$10.99 - $25.99", small_description="single bullet"),
        raw("B00000000C", pricing="", customization_options=None),
        raw("B00000000D", pricing="$1,299.00 - $1,499.00 - $1,999.00"),
        raw("B00000000E"),
    ]
    notes = {
        "B00000000A": {"attributes": ["machine wash"], "instruction": "i want a shirt",
                       "instruction_attributes": ["machine wash"]},
        "B00000000B": {"attributes": ["open toe"], "instruction": "i need sandals",
                       "instruction_attributes": ["open toe"]},
        "B00000000C": {"attributes": [], "instruction": None},
        "B00000000D": {"attributes": ["gold plated"], "instruction": "a watch",
                       "instruction_attributes": ["gold plated"]},
    }  # fmt: skip
    human = {
        "B00000000A": [
            {"asin": "B00000000A", "instruction": "i want a black and white shirt.", "attributes": [],
             "options": [], "instruction_attributes": ["machine wash"],
             "instruction_options": ["black | white", "x-large"],
             "assignment_id": "x", "worker_id": "y"},
            {"asin": "B00000000A", "instruction": "no attributes: skipped", "instruction_attributes": [],
             "instruction_options": []},
        ],
        "B00000000E": [{"instruction": "any product e", "instruction_attributes": ["sturdy"],
                        "instruction_options": []}],
        "B0NOTLISTED": [{"instruction": "not in the catalog", "instruction_attributes": ["x"],
                         "instruction_options": []}],
    }  # fmt: skip
    (directory / "items_shuffle_1000.json").write_text(json.dumps(products))
    (directory / "items_ins_v2_1000.json").write_text(json.dumps(notes))
    (directory / "items_human_ins.json").write_text(json.dumps(human))
    return directory


def test_products_follow_the_original_loader_rules(official_dir):
    products, _ = load_official(official_dir)
    by_asin = {p.asin: p for p in products}
    assert [p.asin for p in products] == [
        "B00000000A",
        "B00000000B",
        "B00000000C",
        "B00000000D",
        "B00000000E",
    ]
    a = by_asin["B00000000A"]
    assert (
        a.title == "Product B00000000A"
        and a.query == "things"
        and a.main_image == "http://img/B00000000A.jpg"
    )
    assert a.options == (("color", ("black | white", "dark brown")), ("size", ("x-large", "small")))
    assert a.price_tag == "$12.99" and a.pricing == (12.99,) and a.price == 12.99
    assert a.attributes == ("machine wash",)
    b = by_asin["B00000000B"]
    assert b.bullet_points == ("single bullet",) and b.price_tag == "$10.99 to $25.99"
    assert 10.99 <= b.price <= 25.99 and b.attributes == ("open toe",)
    c = by_asin["B00000000C"]
    assert c.price_tag == "$100.0" and c.pricing == (100.0,) and c.options == () and c.attributes == ()
    assert by_asin["B00000000D"].price_tag == "$1299.0 to $1499.0"
    assert by_asin["B00000000E"].attributes == ("DUMMY_ATTR",)


def test_pricing_strings():
    assert parse_pricing("$7.5") == ((7.5,), "$7.5")
    assert parse_pricing(None) == ((100.0,), "$100.0")
    assert parse_pricing("$") == ((100.0,), "$100.0")


def test_synthetic_goals_one_per_option_combination(official_dir):
    _products, goals = load_official(official_dir)
    shirt_goals = [g for g in goals if g.asin == "B00000000A"]
    assert len(goals) == 4 + 1 + 1 and len(shirt_goals) == 4  # C has no instruction, E no note
    upper, price_text = price_cap(12.99, "B00000000A")
    assert upper in (30.0, 40.0, 50.0) and price_text == f", and price lower than {upper:.2f} dollars"
    texts = sorted(g.instruction_text for g in shirt_goals)
    assert texts[0] == f"i want a shirt with color: black | white, and size: small{price_text}"
    assert {g.goal_options for g in shirt_goals} == {
        (("color", c), ("size", s)) for c in ("black | white", "dark brown") for s in ("x-large", "small")
    }
    sandal = next(g for g in goals if g.asin == "B00000000B")
    assert sandal.goal_options == () and sandal.instruction_text.startswith(
        "i need sandals, and price lower than"
    )
    assert all(g.name == "Product " + g.asin and g.attributes for g in goals)


def test_goal_order_is_webshops_seed_233_shuffle(official_dir):
    products, goals = load_official(official_dir)
    notes = json.loads((official_dir / "items_ins_v2_1000.json").read_text())
    unshuffled = [
        goal
        for p in products
        if (notes.get(p.asin) or {}).get("instruction")
        for goal in synthetic_goals(p, notes[p.asin]["instruction"], notes[p.asin]["instruction_attributes"])
    ]
    expected = list(unshuffled)
    random.Random(233).shuffle(expected)  # the original's random.seed(233); random.shuffle(goals)
    assert goals == expected


def test_human_goals(official_dir):
    _, goals = load_official(official_dir, human=True)
    assert len(goals) == 2
    shirt = next(g for g in goals if g.asin == "B00000000A")
    assert shirt.instruction_text.startswith("i want a black and white shirt, and price lower than")
    assert shirt.goal_options == ("black | white", "x-large") and shirt.attributes == ("machine wash",)


def test_official_env_splits_and_expert(official_dir, tmp_path):
    env = WebShopEnv(split="test", data_dir=official_dir, human_goals=True, cache_dir=tmp_path)
    assert env.task_source.size("test") == 2 and env.task_source.size("valid") == 0
    for seed in range(2):
        obs, info = env.reset(seed=seed)
        expert, done = WebShopExpert(env), False
        while not done:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            done = terminated or truncated
        assert terminated and info["score"] > 0
    catalog = official_catalog(official_dir, human=True, cache_dir=tmp_path)
    assert catalog is env.catalog  # one shared instance per catalog directory


def test_split_ranges_are_webshops():
    catalog = generated_catalog()
    tasks = GoalTasks(catalog)
    assert (tasks.size("test"), tasks.size("valid"), tasks.size("train")) == (500, 1000, 8500)
    assert tasks.task_id("valid", 0) == f"{catalog.goal(500).asin}:500"
    with pytest.raises(ValueError):
        tasks.load("B000000000:3")


def test_loader_round_trips_generated_files(tmp_path):
    write_official_files(tmp_path, 300, seed=3, suffix="_1000")
    products, goals = load_official(tmp_path)
    generated, _ = generate(300, seed=3)
    assert list(generated) == products
    assert len(goals) > 300  # all option combinations


# ----------------------------------------------------------- generated catalog
def test_generated_catalog_is_deterministic_prefix_stable_and_covers_the_categories():
    catalog = generated_catalog()
    assert catalog.num_products == 10_000 and catalog.num_goals == 10_000
    small, _ = generate(1_200, seed=0)
    assert [p.asin for p in small] == [catalog.product_at(i).asin for i in range(1_200)]
    categories = {catalog.product_at(i).category for i in range(2_000)}
    assert categories == {"beauty", "electronics", "fashion", "food", "furniture"}
    assert {t.category for t in PRODUCT_TYPES} == categories
    goal = catalog.goal(0)
    product = catalog.product(goal.asin)
    assert set(goal.attributes) <= set(product.attributes)
    assert dict(goal.goal_options).keys() == dict(product.options).keys()
    assert (
        goal.instruction_text.endswith(f"{goal.price_upper:.2f} dollars") and product.price < goal.price_upper
    )
    GoalTasks(catalog)
    test_asins = {catalog.goal(i).asin for i in range(500)}
    assert len(test_asins) == 500 and not test_asins & {catalog.goal(i).asin for i in range(500, 10_000)}


def test_catalog_is_memory_mapped_and_shared_per_process():
    catalog = generated_catalog()
    assert isinstance(catalog._products.blob, np.memmap)
    assert open_catalog(catalog.directory) is catalog
    assert WebShopEnv().catalog is WebShopEnv(split="valid").catalog is catalog
    assert isinstance(Catalog(catalog.directory).product_at(5), type(catalog.product_at(5)))


# ------------------------------------------------------------------ search
def test_analyzer_follows_lucenes_english_chain():
    assert analyze_words("Men's T-Shirt, 3.4 oz; 1,000 pcs. The U.S. edition: it's NEW") == [
        "men", "t", "shirt", "3.4", "oz", "1,000", "pcs", "u.s", "edition", "new",
    ]  # fmt: skip


def test_search_finds_titles_and_ranks_like_a_full_sort():
    catalog = generated_catalog()
    index = catalog.search_index()
    for i in range(20):
        goal = catalog.goal(i)
        assert goal.asin in [catalog.product_at(row).asin for row in index.search(goal.name.lower())[:10]]
    assert index.search("zzzqqq") == []
    for query in [catalog.goal(i).instruction_text for i in range(30)] + ["shoes", "black black size"]:
        scores = index.scores(query)
        hits = np.flatnonzero(scores > 0)
        # best score first; equal scores in catalog order (Lucene's document-id order)
        assert index.search(query) == hits[np.lexsort((hits, -scores[hits]))][:50].tolist()


def test_a_saved_search_index_keeps_its_block_bounds_and_an_older_one_gets_them_computed(tmp_path):
    from retrieval_index.bm25 import BOUNDS_FILE, BOUNDS_META

    texts = [f"red shoes size {size} {'running' * (size % 3)}" for size in range(300)] + ["blue hat"] * 40
    BM25Index.build(texts).save(tmp_path / "bm25")
    saved = BM25Index.load(tmp_path / "bm25")
    assert (tmp_path / "bm25" / BOUNDS_META).exists()
    (tmp_path / "bm25" / BOUNDS_META).unlink()  # as catalogs cached before the bounds were stored
    (tmp_path / "bm25" / BOUNDS_FILE).unlink()
    older = BM25Index.load(tmp_path / "bm25")
    assert older.scorer.bounds.largest.tobytes() == saved.scorer.bounds.largest.tobytes()
    for query in ["red running shoes", "blue hat", "size 7", "hat hat"]:
        assert older.search(query) == saved.search(query) != []


def test_bm25_scores_are_lucenes_formula():
    index = BM25Index.build(["red shoes", "red red shoes for running", "blue hat"])
    n, avgdl = 3, (2 + 4 + 2) / 3  # "for" is a stop word; lengths count indexed words
    idf = np.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    tf, dl = 2, 4
    expected = idf * tf / (tf + 0.9 * (1 - 0.4 + 0.4 * dl / avgdl))
    assert index.scores("red")[1] == pytest.approx(expected, rel=1e-6)
    assert index.search("red") == [1, 0]


def test_pyserini_backend_gives_the_same_top_50(tmp_path):
    pytest.importorskip("pyserini")
    import subprocess
    import sys

    from agentenvs.envs.webshop.search import PyseriniIndex, write_pyserini_documents

    catalog = generated_catalog()
    documents = tmp_path / "docs"
    documents.mkdir()
    write_pyserini_documents(
        [(p.asin, p.search_text()) for p in catalog.products()], documents / "documents.jsonl"
    )
    subprocess.run(
        [sys.executable, "-m", "pyserini.index.lucene", "--collection", "JsonCollection",
         "--input", str(documents), "--index", str(tmp_path / "index"),
         "--generator", "DefaultLuceneDocumentGenerator", "--threads", "1", "--storeRaw"],
        check=True,
    )  # fmt: skip
    lucene = PyseriniIndex(tmp_path / "index", catalog.row_of)
    ours = catalog.search_index()
    queries = [catalog.goal(i).instruction_text.split(", and price")[0] for i in range(50)]
    same = sum(lucene.search(q) == ours.search(q) for q in queries)
    assert same >= 45, f"{same}/50 queries with identical top 50"


def test_the_quirks_of_published_product_files_load_without_a_rule_per_file(tmp_path):
    """Real items_shuffle rows: concatenated or empty prices, empty or null options, product_information as
    text."""
    products = [
        raw(
            "B0000000Q1",
            pricing="$19.99$27.99",
            customization_options="",
            product_information="Item model: X",
        ),
        raw(
            "B0000000Q2",
            pricing="",
            customization_options={"Color": None, "Size": [{"value": "M", "image": None}]},
        ),
        raw(
            "B0000000Q3",
            pricing=24.5,
            customization_options={"Color": [{"value": None}, {"image": "i"}, "bad"]},
        ),
        raw(
            "B0000000Q4",
            pricing="$1.2.3",
            product_information=["a", "list"],
            small_description=None,
            images=[],
        ),
        raw(1234567890),
        raw("B000000Ä01"),
    ]
    (tmp_path / "items_shuffle_1000.json").write_text(json.dumps(products))
    (tmp_path / "items_ins_v2_1000.json").write_text(json.dumps({
        "B0000000Q1": {"attributes": ["a"], "instruction": "i want q1", "instruction_attributes": ["a"]},
        "B0000000Q2": {"attributes": ["b"], "instruction": None, "instruction_attributes": None},
    }))  # fmt: skip
    skipped: dict = __import__("collections").Counter()
    loaded, goals = load_official(tmp_path, skipped=skipped)
    by_asin = {p.asin: p for p in loaded}
    assert list(by_asin) == ["B0000000Q1", "B0000000Q2", "B0000000Q3", "B0000000Q4"]
    q1, q2, q3, q4 = by_asin.values()
    assert q1.pricing == (19.99, 27.99) and q1.price_tag == "$19.99 to $27.99" and q1.options == ()
    assert q2.pricing == (100.0,) and q2.price_tag == "$100.0" and q2.options == (("size", ("m",)),)
    assert q3.pricing == (24.5,) and q3.price_tag == "$24.5" and q3.options == (("color", ()),)
    assert q4.pricing == (100.0,) and q4.bullet_points == ("",) and q4.main_image == ""
    assert [g.asin for g in goals] == ["B0000000Q1"]
    assert skipped == {
        "asin is not a string": 1,
        "asin is not ASCII": 1,
        "product without an instruction in items_ins_v2": 3,
    }
    catalog = official_catalog(tmp_path, cache_dir=tmp_path / "cache")
    assert GoalTasks(catalog).skipped == dict(skipped)


def test_human_goals_of_items_human_ins_json_are_played_by_the_expert(tmp_path):
    """items_human_ins.json as WebShop publishes it: ASIN -> list of annotations; WebShop's human_goals
    switch turns each annotation with instruction_attributes into one goal, for the products it loaded."""
    products = [
        raw("B0000000H1", name="Cotton Crew Neck T-Shirt", pricing="$14.99",
            customization_options={"Color": [{"value": "Navy Blue", "image": None},
                                             {"value": "Heather Grey", "image": None}],
                                   "Size": [{"value": "Large", "image": None},
                                            {"value": "Small", "image": None}]}),
        raw("B0000000H2", name="Stainless Steel Water Bottle", pricing="$8.00 - $30.00",
            customization_options=None),
        raw("B0000000H3", name="Leather Wallet", pricing="$985.00"),
    ]  # fmt: skip
    notes = {asin: {"attributes": ["durable"], "instruction": f"find {asin}",
                    "instruction_attributes": ["durable"]}
             for asin in ("B0000000H1", "B0000000H2", "B0000000H3")}  # fmt: skip
    annotation = {"asin": "", "instruction": "", "attributes": [], "options": [],
                  "instruction_attributes": [], "instruction_options": [],
                  "assignment_id": "3A1PQ49WVOHAPN8K6GAX4UZB0HJ1H5",
                  "worker_id": "A1KZ0KE93WNN5O"}  # fmt: skip
    human = {
        "B0000000H1": [
            {**annotation, "asin": "B0000000H1", "instruction": "i need a navy blue cotton t-shirt in large.",
             "instruction_attributes": ["cotton"], "instruction_options": ["navy blue", "large"]},
            {**annotation, "asin": "B0000000H1", "instruction": "a t-shirt, nothing else"},
        ],
        "B0000000H2": [{**annotation, "asin": "B0000000H2",
                        "instruction": "i want a stainless steel water bottle.",
                        "instruction_attributes": ["stainless steel"]}],
        "B0000000H3": [{**annotation, "asin": "B0000000H3", "instruction": "a leather wallet...",
                        "instruction_attributes": ["leather"]}],
        "B0MISSING0": [{**annotation, "instruction": "x", "instruction_attributes": ["y"]}],
    }  # fmt: skip
    (tmp_path / "items_shuffle_1000.json").write_text(json.dumps(products))
    (tmp_path / "items_ins_v2_1000.json").write_text(json.dumps(notes))
    (tmp_path / "items_human_ins.json").write_text(json.dumps(human))

    env = WebShopEnv(split="test", data_dir=tmp_path, human_goals=True, cache_dir=tmp_path / "cache")
    assert env.task_source.size("test") == 3 and env.task_source.size("train") == 0
    assert env.task_source.skipped == {
        "human instruction without instruction_attributes": 1,
        "human instruction for an ASIN not among the products": 1,
    }
    texts = set()
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        goal = env.goal
        texts.add(goal.instruction_text.split(", and price lower than")[0])
        if goal.asin == "B0000000H1":
            assert goal.goal_options == ("navy blue", "large") and goal.attributes == ("cotton",)
        if goal.asin == "B0000000H3":  # $985: fewer than two price steps above it, so no cap
            assert goal.price_upper == 1_000_000 and goal.instruction_text == "a leather wallet"
        expert, done = WebShopExpert(env), False
        while not done:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            done = terminated or truncated
        assert terminated and info["success"] and info["score"] == 1.0
    assert texts == {"i need a navy blue cotton t-shirt in large", "i want a stainless steel water bottle",
                     "a leather wallet"}  # fmt: skip
