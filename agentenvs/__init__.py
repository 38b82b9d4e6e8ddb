"""agentenvs: multi-turn Gymnasium environments for training LLM agents with RL.

``import agentenvs`` registers every ``agentenvs/<Name>-v<version>`` id with gymnasium;
``ENV_ENTRIES`` and ``ENV_IDS`` are what it registered. The registry itself and
every query about it (an id's entry, family, expert; main ids; missing extras)
live in :mod:`agentenvs.core.registration`.

May import: ``agentenvs.core.registration`` only, so that registering imports
no env and no agent (third-party: gymnasium and what it imports, numpy).
"""

from agentenvs.core.registration import register_all

__version__ = "0.1.0"

ENV_ENTRIES = register_all()
ENV_IDS = [entry.env_id for entry in ENV_ENTRIES]

__all__ = ["ENV_ENTRIES", "ENV_IDS", "__version__"]
