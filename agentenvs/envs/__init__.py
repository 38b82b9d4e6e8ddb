"""The env families: one package per family, each listing its ids in a module-level ``ENVS``.

The registry (:mod:`agentenvs.core.registration`) finds every subpackage here
and registers its entries; nothing outside this folder is scanned for envs.

May import: nothing; each family imports ``agentenvs.core`` and itself (Search
and WebShop also ``retrieval_index``), never a sibling.
"""
