"""WebShop: pages, actions and rewards as the original shows and scores them; the env contract."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.envs.webshop import pages
from agentenvs.envs.webshop.catalog import Goal, Product
from agentenvs.envs.webshop.env import WebShopEnv
from agentenvs.envs.webshop.expert import WebShopExpert
from agentenvs.envs.webshop.reward import (
    detect_noun_backend,
    fuzzy_score,
    get_reward,
    normalize_color,
    title_nouns,
)

# Two hand-written products in WebShop's published format (pages against the original:
# tests/envs/webshop/test_webshop_reference.py).
PRODUCTS = json.loads((Path(__file__).parents[2] / "fixtures" / "webshop" / "two_products.json").read_text())
RESULTS = ["B000000002", "B000000001"]


class FixedResults:
    """A search backend that always returns the same ASINs (to test pages apart from search)."""

    def __init__(self, env: WebShopEnv, asins: list[str]) -> None:
        self.rows = [env.catalog.row_of(a) for a in asins]

    def search(self, keywords: str, k: int = 50) -> list[int]:
        return self.rows[:k]


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("webshop-reference")
    (directory / "items_shuffle_1000.json").write_text(json.dumps(PRODUCTS["items_shuffle"]))
    (directory / "items_ins_v2_1000.json").write_text(json.dumps(PRODUCTS["items_ins_v2"]))
    return directory


def reference_env(reference_dir: Path, mode: str) -> tuple[WebShopEnv, str]:
    env = WebShopEnv(
        split="test",
        data_dir=reference_dir,
        obs_mode=mode,
        cache_dir=reference_dir / "cache",
        max_turns=30,
    )
    env.search_engine = FixedResults(env, RESULTS)
    source = env.task_source
    for index in range(source.size("test")):
        task_id = source.task_id("test", index)
        goal = source.load(task_id)
        if goal.asin == "B000000001" and goal.named_options == {"color": "black | white", "size": "10 wide"}:
            return env, task_id
    raise AssertionError("reference goal not found")


def test_clickables_follow_the_page_and_admissible_actions_render_like_verl_agent(reference_dir):
    env, task_id = reference_env(reference_dir, "text")
    _, info = env.reset(options={"task_id": task_id})
    assert info["admissible_actions"] == []  # searches cannot be listed; WebShop refuses click[search]
    _, _, _, _, info = env.step("search[running shoes]")
    assert info["admissible_actions"] == [
        "click[back to search]", "click[next >]", "click[b000000002]", "click[b000000001]",
    ]  # fmt: skip
    _, _, _, _, info = env.step("<think>open it</think><action>click[B000000001]</action>")
    assert info["reward_components"]["format"] == 1.0
    assert info["admissible_actions"] == [
        "click[back to search]", "click[< prev]", "click[description]", "click[features]", "click[reviews]",
        "click[buy now]", "click[black | white]", "click[dark brown]", "click[9]", "click[10 wide]",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "action",
    [
        "click[search]",
        "click[next >]",
        "Search[shoes]",
        "search[]",
        "buy now",
        "click[b000000002]",
        "search[<your query>]",
        "Click[Buy Now]",
    ],
)
def test_actions_webshop_ignores_are_invalid_and_change_nothing(reference_dir, action):
    env, task_id = reference_env(reference_dir, "text")
    env.reset(options={"task_id": task_id})
    env.step("search[shoes]")
    obs_before, _, _, _, info_before = env.step("click[b000000001]")
    obs, reward, terminated, _, info = env.step(action)
    assert info["reward_components"]["invalid_action"] == 1.0
    assert info["state_key"] == info_before["state_key"] and info["transitions"] == []
    assert obs.endswith(obs_before) and obs.startswith("Invalid action:")
    assert not terminated and reward == 0.0


def test_search_works_from_any_page_and_resets_product_and_options(reference_dir):
    env, task_id = reference_env(reference_dir, "text")
    env.reset(options={"task_id": task_id})
    for action in ("search[shoes]", "click[b000000001]", "click[dark brown]", "click[features]"):
        env.step(action)
    obs, _, _, _, _info = env.step("search[SANDALS]")
    assert env.session.keywords == "sandals" and env.session.page_number == 1
    assert env.session.asin is None and env.session.options == ()
    assert env.session.visited == ("B000000001",)
    assert "Page 1 (Total results: 2)" in obs
    env.step("click[back to search]")
    assert env.session == pages.Session()


def test_results_paging_and_empty_results():
    env = WebShopEnv(split="test")
    env.reset(seed=0)
    obs, _, _, _, info = env.step("search[shoes]")
    assert "Page 1 (Total results: 50)" in obs and "< Prev" not in obs
    assert sum(a.startswith("click[b0") for a in info["admissible_actions"]) == 10
    for _ in range(5):
        obs, _, _, _, info = env.step("click[next >]")
    assert "Page 6 (Total results: 50) [SEP] < Prev [SEP] Next >" in obs and obs.endswith("Next >")
    obs, _, _, _, _ = env.step("search[zzzqqq]")
    assert obs.endswith("Back to Search [SEP] Page 1 (Total results: 0) [SEP] Next >")


def test_state_key_covers_the_session_and_the_goal():
    env = WebShopEnv(split="test")
    _, info0 = env.reset(seed=0)
    _, info1 = env.reset(seed=1)
    assert info0["state_key"] != info1["state_key"]
    _, info = env.reset(seed=0)
    assert info["state_key"] == info0["state_key"]
    _, _, _, _, searched = env.step("search[shoes]")
    _, _, _, _, back = env.step("click[back to search]")
    assert back["state_key"] == info0["state_key"] and searched["state_key"] != info0["state_key"]


def test_privileged_holds_the_goal_and_never_reaches_the_observation():
    env = WebShopEnv(split="test")
    obs, info = env.reset(seed=3)
    privileged = info["privileged"]
    goal = env.goal
    assert privileged["goal_asin"] == goal.asin and privileged["price_upper"] == goal.price_upper
    assert privileged["goal_attributes"] == list(goal.attributes)
    assert privileged["goal_options"] == [list(o) for o in goal.goal_options]
    assert goal.asin not in obs


def test_expert_episode_outcome_score_success_and_progress():
    env = WebShopEnv(split="test", reward_weights={"progress": 1.0})
    obs, info = env.reset(seed=0)
    expert = WebShopExpert(env)
    progress, turns, done = [], 0, False
    while not done:
        obs, _reward, terminated, truncated, info = env.step(expert.act(obs, info))
        progress.append(info["reward_components"]["progress"])
        turns += 1
        done = terminated or truncated
    assert terminated and info["success"] and info["score"] == 1.0 and info["paper_score"] == 100.0
    assert info["reward_components"]["outcome"] == 1.0
    assert max(progress) > 0 and abs(sum(progress)) < 1e-12  # Φ(done) = 0: shaping sums to zero
    assert turns <= 6


def test_success_outcome_mode_pays_only_a_perfect_purchase(reference_dir):
    env, task_id = reference_env(reference_dir, "text")
    env.success_outcome = True
    env.reset(options={"task_id": task_id})
    for action in ("search[x]", "click[b000000001]", "click[dark brown]"):
        env.step(action)
    _, reward, terminated, _, info = env.step("click[buy now]")
    assert terminated and reward == 0.0 and info["score"] == 0.5 and info["paper_score"] == 50.0


@pytest.mark.parametrize("mode", ["text", "text_rich", "html"])
def test_observation_modes_and_html_render(mode):
    env = gym.make("agentenvs/WebShop-v0", split="test", obs_mode=mode, render_mode="html")
    obs, _ = env.reset(seed=0)
    env.step("search[shoes]")
    page = env.render()
    assert page.startswith("<!DOCTYPE html>") and '<button class="btn">Next &gt;</button>' in page
    assert ("[button] Search [button_]" in obs) == (mode == "text_rich")
    env.close()


# ------------------------------------------------------------------ reward
def product(**fields) -> Product:
    base = {
        "asin": "B000000001", "title": "Trail Running Shoes", "description": "",
        "bullet_points": ("rubber sole",), "category": "fashion", "query": "running shoes",
        "product_category": "Clothing › Men › Shoes", "price_tag": "$30.0", "pricing": (30.0,), "options": (),
        "attributes": ("lightweight",), "main_image": "", "price": 30.0,
    }  # fmt: skip
    return Product(**{**base, **fields})


def goal(**fields) -> Goal:
    base = {
        "asin": "B000000001", "instruction_text": "", "attributes": ("lightweight",), "goal_options": (),
        "price_upper": 40.0, "name": "Trail Running Shoes", "query": "running shoes", "category": "fashion",
        "product_category": "Clothing › Men › Shoes",
    }  # fmt: skip
    return Goal(**{**base, **fields})


def test_reward_is_webshops_formula():
    named = (("color", "navy blue"), ("size", "x-large"))
    assert (
        get_reward(product(), goal(goal_options=named), {"color": "navy blue", "size": "x-large"}).reward
        == 1.0
    )
    # one of two options, price over the cap: (1 attr + 1 option + 0) / 4
    result = get_reward(
        product(price=45.0), goal(goal_options=named), {"color": "navy blue", "size": "small"}
    )
    assert result.reward == 0.5 and not result.price_ok
    # attribute found as a substring of the bullet points
    assert get_reward(product(attributes=()), goal(attributes=("rubber sole",)), {}).attribute_matches == 1
    # unrelated title, query and category: r_type 0
    other = product(title="Ceramic Coffee Mug", query="mug", product_category="Kitchen › Mugs")
    assert get_reward(other, goal(), {}).reward == 0.0


def test_option_matching_keeps_webshops_quirks():
    assert normalize_color("dark brown") == "brown"  # first colour of the list, not the first word
    assert normalize_color(("color", "black")) == "black"  # a (name, value) pair: membership, not substring
    assert normalize_color(("color", "dark brown")) == ("color", "dark brown")
    assert fuzzy_score("brown", ("color", "dark brown")) == 100  # the pair reads "color dark brown"
    # 'tangerine' normalises to 'tan', which is not a word of the goal pair: the right option fails
    assert (
        get_reward(
            product(), goal(goal_options=(("color", "tangerine"),)), {"color": "tangerine"}
        ).option_matches
        == 0
    )
    # human goals list option strings
    assert (
        get_reward(product(), goal(goal_options=("dark brown",)), {"color": "dark brown"}).option_matches == 1
    )


def test_fuzzy_score_is_thefuzz_token_set_ratio():
    assert fuzzy_score("Machine Wash", "machine-wash") == 100
    assert fuzzy_score("high quality", "quality material") < 86
    assert fuzzy_score("café", "caf") == 100  # Latin-1 letters dropped first, as thefuzz's force_ascii does


def test_fallback_title_nouns_are_deterministic_content_words():
    assert title_nouns("Men's Trail Running Shoes for the Gym, Size 10", "fallback") == (
        "men's", "trail", "running", "shoes", "gym", "size",
    )  # fmt: skip


def test_spacy_nouns_when_installed():
    if detect_noun_backend() != "spacy":
        pytest.skip("spaCy with en_core_web_sm not installed")
    assert "shoes" in title_nouns("Trail Running Shoes", "spacy")


# ------------------------------------------------------------------ expert
def colour_quirk(goal: Goal) -> bool:
    """A goal option whose value contains a colour that is not one of its words ('tangerine' -> 'tan')."""
    for value in goal.named_options.values():
        color = normalize_color(value)
        if color != value and color not in value.replace("|", " ").split():
            return True
    return False


def test_expert_reward_is_one_on_95_percent_of_test_goals_and_failures_are_the_colour_quirk():
    env = WebShopEnv(split="test")
    failures = []
    for seed in range(env.task_source.size("test")):
        obs, info = env.reset(seed=seed)
        expert, done = WebShopExpert(env), False
        while not done:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            done = terminated or truncated
        assert terminated and env.session.asin == env.goal.asin
        if not info["success"]:
            failures.append(env.goal)
    assert len(failures) <= 25
    assert all(colour_quirk(goal) for goal in failures)


def test_observation_mode_is_a_deprecated_name_of_obs_mode():
    with pytest.warns(DeprecationWarning, match="obs_mode"):
        env = gym.make("agentenvs/WebShop-v0", split="test", observation_mode="text_rich")
    assert env.unwrapped.obs_mode == "text_rich"
    with pytest.warns(DeprecationWarning, match="obs_mode"):
        assert env.unwrapped.observation_mode == "text_rich"
    observation, _ = env.reset(seed=0)
    renamed = gym.make("agentenvs/WebShop-v0", split="test", obs_mode="text_rich")
    assert observation == renamed.reset(seed=0)[0]
