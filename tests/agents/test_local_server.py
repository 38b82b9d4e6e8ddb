"""End to end on CPU: a tiny local model behind the OpenAI-compatible server, evaluated, submitted,
verified by replay and shown on the board."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from agentenvs.agents.local import TransformersChat
from agentenvs.agents.openai_server import create_app as create_model_server
from agentenvs.cli import main as agentenvs_main
from agentenvs.core.chat import ChatClient
from agentenvs.eval.bundle import read_bundle
from baselines.tiny import bpe_tokenizer, random_causal_lm
from leaderboard.app import create_app as create_board
from leaderboard.cli import main as leaderboard_main
from leaderboard.store import Store

from fixtures.app_server import serving

ENV_ID = "agentenvs/Sokoban-v0"


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Llama and a BPE tokenizer learnt from the env's own texts, saved like any model."""
    env = gym.make(ENV_ID, split="test")
    texts = [env.unwrapped.instructions] + [str(env.reset(seed=i)[0]) for i in range(4)]
    tokenizer = bpe_tokenizer(texts, vocab_size=300, words=["up", "down", "left", "right"])
    torch.manual_seed(0)
    model = random_causal_lm(
        len(tokenizer),
        hidden_size=32,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    folder = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_local_chat_is_deterministic_and_counts_tokens(tiny_model_dir):
    chat = TransformersChat.from_pretrained(str(tiny_model_dir), max_tokens=8)
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "#####\n#P_O#"}]
    first, second = chat.complete(messages), chat.complete(messages)
    assert first == second and first.prompt_tokens == len(chat.prompt_ids(messages))
    assert 1 <= first.completion_tokens <= 8 and first.finish_reason in ("stop", "length")
    sampled = chat.complete(messages, temperature=1.0)
    assert sampled == chat.complete(messages, temperature=1.0)  # seeded sampling


def test_model_server_speaks_the_openai_api(tiny_model_dir):
    chat = TransformersChat.from_pretrained(str(tiny_model_dir), max_tokens=8)
    with serving(create_model_server(chat, "tiny")) as url:
        client = ChatClient(f"{url}/v1", "tiny", max_retries=0)
        reply = client.complete([{"role": "user", "content": "#P_O#"}])
        local = chat.complete([{"role": "user", "content": "#P_O#"}])
        assert (reply.text, reply.prompt_tokens, reply.completion_tokens, reply.finish_reason) == (
            local.text,
            local.prompt_tokens,
            local.completion_tokens,
            local.finish_reason,
        )
        assert reply.prompt_tokens > 0
        wrong = ChatClient(f"{url}/v1", "another-model", max_retries=0)
        with pytest.raises(Exception, match="404"):
            wrong.complete([{"role": "user", "content": "x"}])


def test_eval_to_verified_row_on_the_board(tiny_model_dir, tmp_path, capsys, monkeypatch):
    chat = TransformersChat.from_pretrained(str(tiny_model_dir), max_tokens=12)
    bundle = tmp_path / "bundle"
    with serving(create_model_server(chat, "tiny-llama")) as model_url:
        command = ["eval", "Sokoban-v0", "--model", "tiny-llama", "--base-url", f"{model_url}/v1"]
        code = agentenvs_main([*command, "--panel", "smoke", "--out", str(bundle), "--model-size", "0.1M"])
        assert code == 0, capsys.readouterr()
    episodes = read_bundle(bundle)["episodes"]
    assert len(episodes) == 3 and all(e["completion_tokens"] > 0 for e in episodes)

    store = Store(tmp_path / "board.sqlite")
    app = create_board(store, ["board-token"])
    monkeypatch.setenv("LEADERBOARD_TOKEN", "board-token")
    with serving(app) as board_url:
        assert leaderboard_main(["submit", str(bundle), "--url", board_url, "--wait", "--poll-s", "0.1"]) == 0
        assert "verified" in capsys.readouterr().out
        import urllib.request

        page = urllib.request.urlopen(f"{board_url}/").read().decode()
    assert "tiny-llama" in page and "0.1M" in page  # the board lists verified rows only


def test_eval_with_the_local_backend_marks_the_endpoint_kind(tiny_model_dir, tmp_path):
    bundle = tmp_path / "bundle"
    command = [
        "eval",
        "Sokoban-v0",
        "--model",
        "tiny",
        "--local-model",
        str(tiny_model_dir),
        "--max-tokens",
        "6",
    ]
    assert agentenvs_main([*command, "--panel", "smoke", "--out", str(bundle), "--concurrency", "2"]) == 0
    assert read_bundle(bundle)["metadata"]["endpoint"] == "transformers"


@pytest.mark.slow
def test_the_readme_eval_command_finishes_a_verifiable_bundle_on_a_small_context(tmp_path, capsys):
    """Default flags against a server with a 1,024-token context: fitted prompts, overflows as failures."""
    from agentenvs.core.prompting import observation_text
    from baselines.tiny import save_chat_model
    from leaderboard.verify import verify_submission

    env_ids = ["agentenvs/Sokoban-v0", "agentenvs/TextCraft-v0", "agentenvs/Search-NQ-v0"]
    texts = []
    for env_id in env_ids:
        env = gym.make(env_id, split="test")
        texts += [env.unwrapped.instructions, observation_text(env.reset(seed=0)[0])]
    save_chat_model(str(tmp_path / "model"), texts)
    chat = TransformersChat.from_pretrained(str(tmp_path / "model"), max_model_len=1024)
    with serving(create_model_server(chat, "tiny")) as url:
        command = ["eval", *env_ids, "--model", "tiny", "--base-url", f"{url}/v1", "--panel", "smoke"]
        assert agentenvs_main([*command, "--out", str(tmp_path / "bundle")]) == 0, capsys.readouterr()
    document = read_bundle(tmp_path / "bundle")
    assert document["metadata"]["settings"]["context_length"] == 1024
    assert document["metadata"]["settings"]["token_count"] == "server"
    verdict = verify_submission(document)
    assert verdict.verified, verdict.problems
