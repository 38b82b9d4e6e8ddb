"""WebShop: web shopping from an instruction (Yao et al., 2022), on a built-in or the official catalog.

See :mod:`agentenvs.envs.webshop.env` for the env's table (observation, actions,
rewards, limits, state key). Needs the ``webshop`` extra (bm25s, PyStemmer,
rapidfuzz); spaCy with ``en_core_web_sm`` and pyserini are optional.

Lives here: ``env`` (the env), ``pages`` (the page flow and its renderings),
``catalog`` (products and goals on disk), ``search`` (BM25 product search),
``reward`` (the purchase reward), ``tasks`` and ``official`` (the
built-in catalog and the published files), ``expert`` (buys the goal product).

May import: ``agentenvs.core`` and this package and ``retrieval_index``, by the rule every
family follows (see :mod:`agentenvs.core.registration`).
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "WebShop"
EXPERT = "agentenvs.envs.webshop.expert:WebShopExpert"

ENVS = (
    EnvEntry(
        name="WebShop",
        entry_point="agentenvs.envs.webshop.env:WebShopEnv",
        family=FAMILY,
        expert=EXPERT,
        summary="Find and buy the product an instruction describes, with search[...] and click[...] "
        "on WebShop's pages.",
        extra="webshop",
    ),
)
