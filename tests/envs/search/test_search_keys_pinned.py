"""Search QA: state keys, obs keys and whole trajectories pinned for expert and random play.

The values were recorded before the search turn's caches (per-passage
answer match, per-episode answers, incremental keys) were added; a cache
that changes any key, observation, reward or info entry fails here. Runs on
a small built-in world (3,000 passages) in a private cache.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core.keys import stable_digest
from agentenvs.envs.search.env import SearchEnv
from agentenvs.envs.search.expert import SearchExpert

SMALL = 3000
NOT_AN_ACTION = "I will think about it first."

# The built-in worlds in a private cache, with no data folder.
pytestmark = pytest.mark.usefixtures("private_search_cache")


def random_response(env: SearchEnv, rng: np.random.Generator, previous: str | None) -> str:
    """A mix of what a policy writes: bare and tagged actions, repeats of the last one, and no action.

    Up to three draws of :meth:`SearchEnv.sample_action` until one searches, so that most
    episodes search several times before they answer.
    """
    choice = rng.random()
    if previous is not None and choice < 0.3:
        return previous
    if choice < 0.4:
        return NOT_AN_ACTION
    for _ in range(3):
        action = env.sample_action(rng)
        if action.startswith("search["):
            break
    return env.protocol.format(action) if choice < 0.7 else action


def play(
    env_id: str, kwargs: dict[str, Any], agent: str, seed: int
) -> tuple[list[list[str]], str, list[str]]:
    """Each turn's ``[state_key, obs_key]`` (reset first), a digest of every observation, reward and info,
    and the responses."""
    env = gym.make(env_id, corpus_passages=SMALL, **kwargs).unwrapped
    obs, info = env.reset(seed=seed)
    keys, record = [[info["state_key"], info["obs_key"]]], [obs, info]
    rng, previous, done = np.random.default_rng(seed), None, False
    expert = SearchExpert(env)
    while not done:
        response = expert.act(obs, info) if agent == "expert" else random_response(env, rng, previous)
        obs, reward, terminated, truncated, info = env.step(response)
        keys.append([info["state_key"], info["obs_key"]])
        record.append([response, obs, reward, terminated, truncated, info])
        previous, done = response, terminated or truncated
    return keys, stable_digest(record), [turn[0] for turn in record[2:]]


CASES = {
    ("agentenvs/Search-NQ-v0", "{}", "expert", 0): (
        [
            ["fd30cacdad210b222ba9c248110ff652", "a5806956ab5219553d49f70a31c095a6"],
            ["d3ba5a66a865687eb9b9c6df6fbc040d", "9d8003058f63ecca05159ad840eb235b"],
            ["d3ba5a66a865687eb9b9c6df6fbc040d", "cae66941d9efbd404e4d88758ea67670"],
        ],
        "e11a350c0ab3b65e6b9cc802b03bf7e4",
    ),
    ("agentenvs/Search-NQ-v0", "{}", "random", 1): (
        [
            ["55c2d221ba424defa8d17a2abfcf0a46", "9a68d11a059b257424513b45835cacdf"],
            ["5dbed23d2713c15a23e68d1541805e30", "2db83f6e3a6cda688e0448e84c717bcc"],
            ["e283b6b856839da6b7a7376a55a59fb2", "f7b1bd299a5ed24cc89613fd8dfa60bb"],
            ["3fa9e9134cc3a221c0cca76f634d482b", "50b6399979bae1aa397f16684d905ba9"],
            ["8d00c5b6809e8adcdce406a1c4cdf6e3", "3e38493de33483bf276da129bc0324d3"],
        ],
        "80ad284e050ce2590930d1a6a86d05db",
    ),
    ("agentenvs/Search-HotpotQA-v0", "{}", "expert", 2): (
        [
            ["2d552227f6539a353f195a99800883fd", "e1310f425744c0d531c89722a137153a"],
            ["c4ad08139b735cb66f02cdb4c0a1321f", "09db9dd13ea417306b1bd2594ba7d9ca"],
            ["0b9149382ca322aa7f3ae47aab0c264e", "b2407d2e3707e1d75d5df1115aa55586"],
            ["0b9149382ca322aa7f3ae47aab0c264e", "cae66941d9efbd404e4d88758ea67670"],
        ],
        "1f55b040a9d73a67540c2b53cf57757f",
    ),
    ("agentenvs/Search-HotpotQA-v0", '{"reward_preset": "search-r1"}', "random", 3): (
        [
            ["6405e406f6178215f68be37e700784ac", "64e1e3a57817fbc501243f596e17370e"],
            ["6405e406f6178215f68be37e700784ac", "dd18562d103fa431ce78bdfd952b0220"],
            ["6405e406f6178215f68be37e700784ac", "dd18562d103fa431ce78bdfd952b0220"],
            ["677b97fd8af47155fe593daa5a243e9e", "3c334784c548b622cff792ab66740d4a"],
            ["1cc437b98652017568c2ca3ec4e75f53", "c521c8d4f1a4c191589fe0a2a646f47c"],
        ],
        "465c28fe2d39df747671fb5b639c1da9",
    ),
    ("agentenvs/Search-HotpotQA-v0", '{"reward_preset": "search-r1"}', "expert", 4): (
        [
            ["d8f6c938efbe46f29426ddced786f810", "1cbf57c69033134bbc5feeb56979f649"],
            ["661202e167a6d81717d5e11b96ff398b", "091a741596e7a8bee7693bae657eb29a"],
            ["6bcf75cc6a7cb9c7ea02eb8cae85676d", "2589f3a16ae3f78426ea6b0963de3a90"],
            ["41758987a1fda1717db1eefcacbba5d1", "cae66941d9efbd404e4d88758ea67670"],
        ],
        "cc5008e53733cadbbb78b5fce16c1515",
    ),
    ("agentenvs/Search-MuSiQue-v0", '{"reward_preset": "mt-ppo"}', "random", 5): (
        [
            ["72dd3ff79cf7ffe52045f3ade46757ec", "6d7212238f65701a29817b2d3e1404a5"],
            ["1e3d42dfad08e8b8fe3440a08ba93b05", "8b67a229e5998d9da8d6c4d3e6e74b59"],
            ["27d9b4efa17ada2a7e63da44f617577a", "c521c8d4f1a4c191589fe0a2a646f47c"],
            ["ee0e84ec2ca82c1d198e02ab32dafa5a", "c521c8d4f1a4c191589fe0a2a646f47c"],
            ["19775e2cdc1ccebee5b30ff0811c1b9e", "c521c8d4f1a4c191589fe0a2a646f47c"],
        ],
        "d84dba34ad81c4de2fe26d12b694b7d9",
    ),
    ("agentenvs/Search-MuSiQue-v0", '{"max_turns": 6}', "expert", 6): (
        [
            ["e828fde65ee618e3c774995d53e14df7", "5a6a9b81b5f1575c448c83418f4e2314"],
            ["86b8a24a3114e8db0f0981efec849896", "67ff48e869d87416d106444534098a38"],
            ["7fada0749ba6c69095263c3164f150f1", "c92af7beccbf2918984461ac46d5cccb"],
            ["220c3469bc800bb9f8b4b168c34f1260", "6402989e1dadaafa4551a8d8cb749f7e"],
            ["4e28cdcf968b5e525badb84335c6379b", "57d1afec913cdf441cfe0c5dbf782da2"],
            ["4e28cdcf968b5e525badb84335c6379b", "cae66941d9efbd404e4d88758ea67670"],
        ],
        "8cee63a9b9c7cc9ca7962a8fca3bf8b4",
    ),
    ("agentenvs/Search-2Wiki-v0", '{"max_turns": 6, "reward_preset": "mt-ppo"}', "random", 7): (
        [
            ["f5582c22aeca800052de0749caf3e03e", "cb9618cea6c0290572fc28bb957ccb35"],
            ["e7ea0d722b553701b5f4b4ebe5201011", "a151dd71ca078ef23932ee5c44c3481b"],
            ["531754507cfbf0ae20e63b8dc28fa4c8", "a151dd71ca078ef23932ee5c44c3481b"],
            ["d9a84dc8c48e0c5b44d8eedf21c30f00", "c521c8d4f1a4c191589fe0a2a646f47c"],
            ["9b0b49ca580b198917eaddd8fcea5634", "c521c8d4f1a4c191589fe0a2a646f47c"],
            ["ec0144a4e1965986f7dd919e306178b3", "103868f6db811447f70c967cfb14aaf8"],
            ["6292b7c7903814a21d873b9847cf7bfc", "a151dd71ca078ef23932ee5c44c3481b"],
        ],
        "606e814052f8a39a288b0560ad498b08",
    ),
    ("agentenvs/Search-TriviaQA-2Turn-v0", "{}", "expert", 8): (
        [
            ["1aa401d87e85fafece3b7e268af03b50", "1073c6e9f73d104b02aa6b38065a106a"],
            ["454d4d11448d499d63eb08cc23fbb0c0", "61a89f5c434ea010cab35ffc628cd904"],
            ["78a008c5a4a9fe58652e0bfe347965bd", "cae66941d9efbd404e4d88758ea67670"],
        ],
        "752dae0ddcf6bc7138fb4fb5fce9b9bf",
    ),
    ("agentenvs/Search-TriviaQA-2Turn-v0", "{}", "random", 9): (
        [
            ["34061c5f0e2074ef5daddcfc0778c5ec", "27e3fde60aa324fb41f264cb61b56b13"],
            ["bcb58ad217a6397ec4fc2778bfbd2b0a", "da408423fa332aa725e6b57639f7e835"],
            ["9f9b98ff5a51e0237e6766343c7849c9", "cae66941d9efbd404e4d88758ea67670"],
        ],
        "42aaa3b8d35b8473ed5f8cdd2127e429",
    ),
    ("agentenvs/Search-PopQA-v0", '{"max_turns": 5, "reward_preset": "mt-grpo"}', "random", 10): (
        [
            ["5bed0a5d8958fa3238047b8c5c2d03d1", "bdcd93054e735836ad8e9a5492502913"],
            ["69fcaedd8d2556422e74f500f7a025b5", "625eb0b72fc75c80345eb1bc9371def3"],
            ["a67adff1c42e6a1d81bed775d088923a", "625eb0b72fc75c80345eb1bc9371def3"],
            ["5e8b8b7aa4d28547a772ee6f3b9efb3a", "6a709dd3a262c0f3ea43be36fa72facc"],
            ["5e8b8b7aa4d28547a772ee6f3b9efb3a", "dd18562d103fa431ce78bdfd952b0220"],
            ["371f81866ffe51cdafa55d2595818986", "da49309dcdee6062420adfba25b41308"],
        ],
        "adf7282b4468fbf7d88f00ffb365f17f",
    ),
    ("agentenvs/Search-Bamboogle-v0", '{"max_turns": 8}', "random", 11): (
        [
            ["782928d758f2ef62945d32775290e25b", "36207cd96e20a6722861a6a58c5180f8"],
            ["782928d758f2ef62945d32775290e25b", "dd18562d103fa431ce78bdfd952b0220"],
            ["e68ecfd17ca1b836a57daf784fb201fa", "c521c8d4f1a4c191589fe0a2a646f47c"],
            ["cf4f9f76cf4e3d5cc12247ee1e5e43e4", "c521c8d4f1a4c191589fe0a2a646f47c"],
            ["4207a90e077d74f912ffbc7834b4fec9", "c521c8d4f1a4c191589fe0a2a646f47c"],
            ["7727fd1525e4e57b056bbc1b2a3fb835", "c521c8d4f1a4c191589fe0a2a646f47c"],
            ["2853aca846edf7ddbd6be4bc2979422d", "7357dd8fd6f942581c149987af673c25"],
            ["931a0358096cd439c53e93c3a0f83823", "7b3a26a4d37ff8d467cc14982d1e5f55"],
            ["3cc3b6411478b85035c81aa7c3bb528e", "eb7abeefde2109cb0addad93b37e6cc2"],
        ],
        "ac5a5b597270ac83b97df66a65d4d9f6",
    ),
    ("agentenvs/Search-v0", '{"split": "test"}', "random", 12): (
        [
            ["690c904cd717259238c815d74619c8f1", "29045c4f1f5744307c54304737d2847f"],
            ["690c904cd717259238c815d74619c8f1", "dd18562d103fa431ce78bdfd952b0220"],
            ["95b869efd6f2351165234c086b3e5843", "c521c8d4f1a4c191589fe0a2a646f47c"],
            ["95b869efd6f2351165234c086b3e5843", "dd18562d103fa431ce78bdfd952b0220"],
            ["95b869efd6f2351165234c086b3e5843", "dd18562d103fa431ce78bdfd952b0220"],
        ],
        "e990971d13ad24a6f9d1de4342d94307",
    ),
}


@pytest.mark.parametrize(("env_id", "kwargs", "agent", "seed"), list(CASES))
def test_keys_and_trajectory_are_the_recorded_ones(env_id: str, kwargs: str, agent: str, seed: int) -> None:
    keys, digest, _ = play(env_id, json.loads(kwargs), agent, seed)
    recorded_keys, recorded_digest = CASES[env_id, kwargs, agent, seed]
    assert keys == recorded_keys
    assert digest == recorded_digest


def test_the_random_play_covers_invalid_turns_and_repeated_searches() -> None:
    """The pinned random episodes reach the paths the caches touch: no action, and a search repeated."""
    invalid = repeated = 0
    for env_id, kwargs, agent, seed in CASES:
        if agent == "random":
            responses = play(env_id, json.loads(kwargs), agent, seed)[2]
            invalid += responses.count(NOT_AN_ACTION)
            repeated += sum(a == b and "search" in a for a, b in zip(responses, responses[1:], strict=False))
    assert invalid >= 3 and repeated >= 2, (invalid, repeated)
