"""agentenvs: multi-turn Gymnasium environments for training LLM agents with RL.

``import agentenvs`` registers every ``agentenvs/<Name>-v0`` id with gymnasium.
"""

from agentenvs.core.registration import register_all

__version__ = "0.1.0"

ENV_ENTRIES = register_all()
ENV_IDS = [entry.env_id for entry in ENV_ENTRIES]

__all__ = ["ENV_ENTRIES", "ENV_IDS", "__version__"]
