"""verl integration: estimators on verl's tensors, the agent-loop episode layout, registration when verl is
present."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines.advantages import gigpo_advantages, grpo_advantages, mt_grpo_advantages
from baselines.policy import TransformersPolicy
from baselines.prompts import PromptTemplate
from baselines.tiny import bpe_tokenizer, random_causal_lm
from baselines.verl import ESTIMATOR_NAMES, verl_available
from baselines.verl.agent_loop import play_episode, task_rows
from baselines.verl.estimators import make_estimators, turn_spans

ENV_ID = "agentenvs/Sokoban-Verl-v0"
ENV_KWARGS = {"dim_room": (5, 5), "min_solution_length": 3, "max_turns": 4}

# two trajectories of one group: τ0 has turns at tokens [0,2) and [4,5); τ1 at [0,1), [3,5) and [6,7)
MASK = torch.tensor([[1, 1, 0, 0, 1, 0, 0], [1, 0, 0, 1, 1, 0, 1]])
TURN_REWARDS = np.array([[0.0, 1.0], [0.0, 0.0, -0.5]], dtype=object)
STATE_KEYS = np.array([["s0", "s1"], ["s0", "s1", "s1"]], dtype=object)


def _batch():
    return {
        "agentenvs_turn_rewards": TURN_REWARDS,
        "agentenvs_state_keys": STATE_KEYS,
        "agentenvs_obs_keys": STATE_KEYS,
    }


def test_turn_spans_are_runs_of_policy_tokens():
    assert turn_spans(np.array([1, 1, 0, 0, 1, 0, 0])) == [(0, 2), (4, 5)]
    assert turn_spans(np.array([0, 0])) == []
    assert turn_spans(np.array([1, 1, 1])) == [(0, 3)]


def test_gigpo_on_verl_tensors_matches_the_numpy_estimator():
    gigpo = make_estimators(omega=0.5)["agentenvs_gigpo"]
    advantages, returns = gigpo(
        torch.zeros(2, 7), MASK, index=np.array(["u", "u"]), config=None, non_tensor_batch=_batch()
    )
    expected = gigpo_advantages(
        [[0.0, 1.0], [0.0, 0.0, -0.5]], [["s0", "s1"], ["s0", "s1", "s1"]], ["u", "u"], gamma=0.95, omega=0.5
    )
    np.testing.assert_allclose(
        advantages[0, [0, 1, 4]].numpy(), np.repeat(expected.advantages[0], [2, 1]), rtol=1e-6
    )
    np.testing.assert_allclose(
        advantages[1, [0, 3, 4, 6]].numpy(), np.repeat(expected.advantages[1], [1, 2, 1]), rtol=1e-6
    )
    assert advantages[MASK == 0].abs().sum() == 0
    assert torch.equal(advantages, returns)
    with pytest.raises(ValueError, match="anchor keys"):
        gigpo(torch.zeros(2, 7), MASK, index=np.array(["u", "u"]), config=None, non_tensor_batch=None)


def test_every_option_comes_from_the_hydra_config_block():
    from omegaconf import OmegaConf

    from baselines.advantages import reference_preset

    gigpo = make_estimators(omega=0.5)["agentenvs_gigpo"]
    config = OmegaConf.create(
        {"norm_adv_by_std_in_grpo": True, "gamma": 0.9, "agentenvs": {"preset": "reference", "omega": 2.0}}
    )
    advantages, _ = gigpo(
        torch.zeros(2, 7), MASK, index=np.array(["u", "u"]), config=config, non_tensor_batch=_batch()
    )
    # verl-agent's arithmetic: episode statistics over the 5 turns (step rows), torch.std, std + 1e-6
    expected = gigpo_advantages(
        [[0.0, 1.0], [0.0, 0.0, -0.5]],
        [["s0", "s1"], ["s0", "s1", "s1"]],
        ["u", "u"],
        gamma=0.9,
        omega=2.0,
        **reference_preset("gigpo"),
    )
    np.testing.assert_allclose(
        advantages[0, [0, 1, 4]].numpy(), np.repeat(expected.advantages[0], [2, 1]), rtol=1e-6
    )
    np.testing.assert_allclose(
        advantages[1, [0, 3, 4, 6]].numpy(), np.repeat(expected.advantages[1], [1, 2, 1]), rtol=1e-6
    )
    paper, _ = gigpo(
        torch.zeros(2, 7), MASK, index=np.array(["u", "u"]), config=None, non_tensor_batch=_batch()
    )
    assert not torch.allclose(paper, advantages)
    # single options too, and verl's own switch for the std
    mt_grpo = make_estimators()["agentenvs_mt_grpo"]
    options = {"norm_adv_by_std_in_grpo": False, "agentenvs": {"mt_grpo_form": "released", "alpha": 0.5}}
    released, _ = mt_grpo(
        torch.zeros(2, 7),
        MASK,
        index=np.array(["u", "u"]),
        config=OmegaConf.create(options),
        non_tensor_batch=_batch(),
    )
    by_hand = mt_grpo_advantages(
        [[0.0], [0.0, 0.0]], [1.0, -0.5], ["u", "u"], alpha=0.5, mt_grpo_form="released", normalize="none"
    )
    np.testing.assert_allclose(released[0, [0, 1, 4]].numpy(), np.repeat(by_hand[0], [2, 1]), rtol=1e-6)
    with pytest.raises(ValueError, match="unknown agentenvs settings"):
        gigpo(
            torch.zeros(2, 7),
            MASK,
            index=np.array(["u", "u"]),
            config=OmegaConf.create({"agentenvs": {"omgea": 1}}),
            non_tensor_batch=_batch(),
        )
    with pytest.raises(ValueError, match="unknown settings"):
        make_estimators(episode="steps")


def test_grpo_and_mt_grpo_read_turn_rewards_from_token_rewards_without_extra_fields():
    rewards = torch.zeros(2, 7)
    rewards[0, 4] = 1.0  # τ0's second turn
    rewards[1, 6] = -0.5  # τ1's last turn
    estimators = make_estimators(alpha=0.5)
    grpo, _ = estimators["agentenvs_grpo"](rewards, MASK, index=np.array(["u", "u"]))
    np.testing.assert_allclose(grpo[0, 0].item(), grpo_advantages([1.0, -0.5], ["u", "u"])[0])
    mt, _ = estimators["agentenvs_mt_grpo"](rewards, MASK, index=np.array(["u", "u"]))
    expected = mt_grpo_advantages([[0.0], [0.0, 0.0]], [1.0, -0.5], ["u", "u"], alpha=0.5)
    np.testing.assert_allclose(mt[1, [0, 3, 6]].numpy(), expected[1], rtol=1e-6)
    np.testing.assert_allclose(mt[0, [0, 4]].numpy(), expected[0], rtol=1e-6)


def test_play_episode_lays_out_policy_and_environment_tokens():
    env = gym.make(ENV_ID, **ENV_KWARGS)
    texts = [str(env.reset(seed=i)[0]) for i in range(4)]
    tokenizer = bpe_tokenizer(texts, vocab_size=300, words=["up", "down", "left", "right"])
    torch.set_num_threads(1)
    model = random_causal_lm(
        len(tokenizer),
        hidden_size=16,
        num_layers=1,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    policy = TransformersPolicy(
        model,
        tokenizer,
        allowed_token_ids=[tokenizer.convert_tokens_to_ids(w) for w in ["up", "down", "left", "right"]],
    )
    calls = []

    async def generate(prompt_ids):
        calls.append(len(calls))
        return policy.generate([prompt_ids], max_new_tokens=1, seed=len(calls))[0], None

    [row] = task_rows(ENV_ID, "train", 1, env_kwargs=ENV_KWARGS)
    template = PromptTemplate.for_env(env, style="compact")
    episode = asyncio.run(
        play_episode(generate, tokenizer, env, template, row["extra_info"]["task_id"], response_length=512)
    )
    assert len(turn_spans(np.array(episode.response_mask))) == len(episode.turn_rewards) == len(calls)
    assert len(episode.response_ids) == len(episode.response_mask) == len(episode.response_logprobs)
    # replaying the policy tokens reproduces the rewards
    env.reset(options={"task_id": row["extra_info"]["task_id"]})
    ids = np.array(episode.response_ids)
    for (start, end), reward in zip(
        turn_spans(np.array(episode.response_mask)), episode.turn_rewards, strict=False
    ):
        assert env.step(tokenizer.decode(ids[start:end].tolist()))[1] == pytest.approx(reward)
    short = asyncio.run(
        play_episode(generate, tokenizer, env, template, row["extra_info"]["task_id"], response_length=3)
    )
    assert short.cut and len(short.response_ids) <= 3


@pytest.mark.skipif(not verl_available(), reason="verl is not installed")
def test_install_registers_estimators_and_agent_loop_with_verl():
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    from verl.trainer.ppo import core_algos, ray_trainer

    import baselines.verl

    baselines.verl.install(omega=1.0)
    for name in ESTIMATOR_NAMES:
        assert core_algos.get_adv_estimator_fn(name) is not None
    assert "agentenvs" in _agent_loop_registry
    # the reference preset of verl's code equals verl's own GRPO and RLOO, the singleton group included
    rewards = torch.zeros(4, 3)
    rewards[:, -1] = torch.tensor([1.0, 0.0, 0.0, 2.0])
    mask = torch.ones(4, 3)
    index = np.array(["a", "a", "a", "b"])
    installed = baselines.verl.install(preset="reference", reference_code="verl")
    for ours_name, theirs in (
        ("agentenvs_grpo", core_algos.compute_grpo_outcome_advantage),
        ("agentenvs_rloo", core_algos.compute_rloo_outcome_advantage),
    ):
        verl_adv, _ = theirs(rewards.clone(), mask, index)
        ours, _ = installed[ours_name](rewards, mask, index=index)
        np.testing.assert_allclose(ours.numpy(), verl_adv.numpy(), atol=1e-5)
    # the wrapped compute_advantage hands non_tensor_batch to agentenvs estimators (latest install's settings)
    from verl import DataProto

    baselines.verl.install(omega=1.0)

    data = DataProto.from_dict(
        tensors={"token_level_rewards": torch.zeros(2, 7), "response_mask": MASK},
        non_tensors={"uid": np.array(["u", "u"], dtype=object), **_batch()},
    )
    out = ray_trainer.compute_advantage(data, "agentenvs_gigpo", config=None)
    expected = gigpo_advantages(
        [[0.0, 1.0], [0.0, 0.0, -0.5]], [["s0", "s1"], ["s0", "s1", "s1"]], ["u", "u"], gamma=0.95
    )
    np.testing.assert_allclose(
        out.batch["advantages"][0, [0, 1, 4]].numpy(), np.repeat(expected.advantages[0], [2, 1]), rtol=1e-6
    )
