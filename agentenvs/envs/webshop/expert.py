"""The WebShop expert: buys the goal product with the goal options.

It reads the hidden goal (ASIN, options) from the env and acts like a careful
shopper who knows what to buy:

1. search the goal product's title (then, if the product is not among the
   50 hits, the instruction, then the product's query + the goal attributes);
2. page through the results to the goal product and open it;
3. on any other product or sub-page, go back (``< prev``);
4. select each wanted option value, then ``buy now``.

Wanted values are the goal's ``(name, value)`` pairs for synthetic goals;
for human goals (free-text options) the product's option value that best
matches each goal option under WebShop's option rule, one per option name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentenvs.envs.webshop import pages
from agentenvs.envs.webshop.catalog import Goal, Product
from agentenvs.envs.webshop.reward import MATCH_THRESHOLD, fuzzy_score, normalize_color

if TYPE_CHECKING:
    from agentenvs.envs.webshop.env import WebShopEnv


class WebShopExpert:
    """``act(observation, info) -> response`` for one :class:`WebShopEnv`."""

    def __init__(self, env: WebShopEnv) -> None:
        self.env = env

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        return self.env.protocol.format(self.next_action())

    def next_action(self) -> str:
        env = self.env
        goal, session = env.goal, env.session
        assert goal is not None
        if session.page == pages.SEARCH:
            return f"search[{self.queries(goal)[0]}]"
        if session.page == pages.RESULTS:
            asins = [p.asin for p in env.search_results(session.keywords or "")]
            if goal.asin not in asins:
                return f"search[{self._next_query(goal, session.keywords)}]"
            wanted_page = asins.index(goal.asin) // pages.PRODUCT_WINDOW + 1
            if wanted_page == session.page_number:
                return f"click[{goal.asin.lower()}]"
            return "click[next >]" if wanted_page > session.page_number else "click[< prev]"
        if session.page == pages.ITEM and session.asin == goal.asin:
            product = env.catalog.product(goal.asin)
            selected = session.selected
            for name, value in wanted_options(goal, product).items():
                if selected.get(name) != value:
                    return f"click[{value}]"
            return "click[buy now]"
        return "click[< prev]"

    def queries(self, goal: Goal) -> list[str]:
        product = self.env.catalog.product(goal.asin)
        instruction = goal.instruction_text.split(", and price lower than")[0]
        by_attributes = " ".join([product.query, *goal.attributes])
        return [q.lower() for q in (product.title, instruction, by_attributes) if q.strip()]

    def _next_query(self, goal: Goal, tried: str | None) -> str:
        queries = self.queries(goal)
        position = queries.index(tried) + 1 if tried in queries else 0
        return queries[min(position, len(queries) - 1)]


def wanted_options(goal: Goal, product: Product) -> dict[str, str]:
    """Option name -> the value to select on ``product`` for ``goal``."""
    named = goal.named_options
    if named:
        offered = dict(product.options)
        return {name: value for name, value in named.items() if value in offered.get(name, ())}
    chosen: dict[str, str] = {}
    for wanted in goal.goal_options:
        target = normalize_color(wanted)
        best: tuple[int, str, str] | None = None
        for name, values in product.options:
            if name in chosen:
                continue
            for value in values:
                score = fuzzy_score(normalize_color(value), target)
                if score > MATCH_THRESHOLD and (best is None or score > best[0]):
                    best = (score, name, value)
        if best is not None:
            chosen[best[1]] = best[2]
    return chosen
