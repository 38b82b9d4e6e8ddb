"""WebShop: web shopping from an instruction (Yao et al., 2022), on a built-in or the official catalog.

See :mod:`agentenvs.webshop.env` for the env's table (observation, actions,
rewards, limits, state key). Needs the ``webshop`` extra (bm25s, PyStemmer,
rapidfuzz); spaCy with ``en_core_web_sm`` and pyserini are optional.
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
