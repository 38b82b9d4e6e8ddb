"""WebShop: web shopping from an instruction (Yao et al., 2022), on a built-in or the official catalog.

See :mod:`agentenvs.webshop.env` for the env's table (observation, actions,
rewards, limits, state key). Needs the ``webshop`` extra (bm25s, PyStemmer,
rapidfuzz); spaCy with ``en_core_web_sm`` and pyserini are optional.

Lives here: ``env`` (the env), ``pages`` (the page flow and its renderings),
``catalog`` (products and goals on disk), ``search`` (BM25 product search),
``reward`` (the purchase reward), ``generator`` and ``official`` (the
built-in catalog and the published files), ``expert`` (buys the goal product).

The ``ENVS`` entries below name the env, its expert and its random policy
by import strings, so registering imports nothing of the family.

May import: ``agentenvs.core`` and this package and ``retrieval_index``; never a sibling
family, ``agentenvs.agents``/``eval``/``cli``, ``baselines`` or
``leaderboard``. The env side (env, pages, catalog, search, reward) never
imports the expert; the expert imports the env side.
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "WebShop"
EXPERT = "agentenvs.webshop.expert:WebShopExpert"

ENVS = (
    EnvEntry(
        name="WebShop",
        entry_point="agentenvs.webshop.env:WebShopEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Find and buy the product an instruction describes, with search[...] and click[...] "
        "on WebShop's pages.",
        extra="webshop",
    ),
)
