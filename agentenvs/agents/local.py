"""A local transformers model as a chat backend (CPU works for small models).

:class:`TransformersChat` answers ``complete(messages)`` like
:class:`agentenvs.core.chat.ChatClient` does for an endpoint, so ``agentenvs
eval --local-model PATH`` and the local OpenAI-compatible server
(:mod:`agentenvs.agents.openai_server`) run the same code. The prompt is the
tokenizer's chat template where it has one, else a plain role-tagged layout.
Generation is greedy by default (``temperature=0``); one ``generate`` runs at
a time (a lock), since one model instance is shared by every episode.
"""

from __future__ import annotations

import threading
from typing import Any

from agentenvs.core.chat import ChatReply


def plain_chat_prompt(messages: list[dict[str, str]]) -> str:
    """The layout used when a tokenizer has no chat template."""
    lines = [f"<|{message['role']}|>\n{message['content']}\n" for message in messages]
    return "".join(lines) + "<|assistant|>\n"


class TransformersChat:
    """Chat completions from a transformers causal LM.

    Args:
        model: a causal LM (``AutoModelForCausalLM``).
        tokenizer: its tokenizer.
        max_tokens: new tokens per reply.
        temperature: 0 for greedy decoding, else sampling.
        seed: torch seed of each sampled reply (replies are reproducible).
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, max_tokens: int = 128, temperature: float = 0.0, seed: int = 0
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self._lock = threading.Lock()

    @classmethod
    def from_pretrained(cls, path: str, **kwargs: Any) -> TransformersChat:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        return cls(AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path), **kwargs)

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        if getattr(self.tokenizer, "chat_template", None):
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        else:
            text = plain_chat_prompt(messages)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if limit is not None and len(ids) + self.max_tokens > limit:
            ids = ids[len(ids) + self.max_tokens - limit :]  # keep the latest context
        return list(ids)

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ChatReply:
        import torch

        ids = self.prompt_ids(messages)
        new_tokens = self.max_tokens if max_tokens is None else int(max_tokens)
        temperature = self.temperature if temperature is None else float(temperature)
        eos = self.tokenizer.eos_token_id
        with self._lock, torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            output = self.model.generate(
                torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                max_new_tokens=new_tokens,
                do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None,
                top_p=None,
                top_k=None,
                pad_token_id=self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos,
                eos_token_id=eos,
            )
        generated = output[0, len(ids) :].tolist()
        stopped = eos is not None and generated and generated[-1] == eos
        if stopped:
            generated = generated[:-1]
        return ChatReply(
            text=self.tokenizer.decode(generated, skip_special_tokens=True),
            finish_reason="stop" if stopped or len(generated) < new_tokens else "length",
            prompt_tokens=len(ids),
            completion_tokens=len(generated) + int(bool(stopped)),
            attempts=1,
            cached=False,
        )
