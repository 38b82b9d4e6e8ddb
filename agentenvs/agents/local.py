"""A local transformers model as a chat backend (CPU works for small models).

:class:`TransformersChat` answers ``complete(messages)`` like
:class:`agentenvs.core.chat.ChatClient` does for an endpoint, so ``agentenvs
eval --local-model PATH`` and the local OpenAI-compatible server
(:mod:`agentenvs.agents.openai_server`) run the same code. The prompt is the
tokenizer's chat template where it has one, else a plain role-tagged layout.
Generation is greedy by default (``temperature=0``); one ``generate`` runs at
a time (a lock), since one model instance is shared by every episode.

As vLLM does, a prompt that leaves no room for the reply inside the context
(``max_position_embeddings``, or ``max_model_len``) is refused with
:class:`~agentenvs.core.chat.ContextLengthError`, never cut; a request
without ``max_tokens`` may fill the rest of the context; a reply stops at the
first of its ``stop`` strings, which is left out of the text and named in
``stop_reason``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from agentenvs.core.chat import ChatReply, ContextLengthError


def plain_chat_prompt(messages: list[dict[str, str]]) -> str:
    """The layout used when a tokenizer has no chat template."""
    lines = [f"<|{message['role']}|>\n{message['content']}\n" for message in messages]
    return "".join(lines) + "<|assistant|>\n"


class _StopStrings:
    """Ends generation once the reply's text (the prompt excluded, as in vLLM) holds a stop string.

    (transformers' own ``stop_strings`` also match across the end of the
    prompt: a reply opening with "\n\n" would stop at "\n\n\n".)
    """

    def __init__(self, tokenizer: Any, prompt_length: int, stop: Sequence[str]) -> None:
        self.tokenizer, self.prompt_length, self.stop = tokenizer, prompt_length, stop

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        text = self.tokenizer.decode(input_ids[0, self.prompt_length :], skip_special_tokens=True)
        return torch.tensor([any(s in text for s in self.stop)], dtype=torch.bool, device=input_ids.device)


class TransformersChat:
    """Chat completions from a transformers causal LM.

    Args:
        model: a causal LM (``AutoModelForCausalLM``).
        tokenizer: its tokenizer.
        max_tokens: new tokens per reply when a request names none (None: the rest of the context).
        temperature: 0 for greedy decoding, else sampling.
        seed: torch seed of each sampled reply when a request names none (replies are reproducible).
        max_model_len: the context in tokens (default: the model's ``max_position_embeddings``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        seed: int = 0,
        max_model_len: int | None = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.max_model_len = max_model_len or int(model.config.max_position_embeddings)
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
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def context_length(self) -> int:
        return self.max_model_len

    def count_prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        return len(self.prompt_ids(messages))

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
        streamer: Any = None,
    ) -> ChatReply:
        """One reply; :class:`ContextLengthError` when prompt + ``max_tokens`` exceed the context.

        ``streamer``: transformers' streamer hook, handed to ``generate``: its ``put`` gets the prompt ids,
        then each new token as it is made, and ``end`` when generation stops.
        """
        import torch

        ids = self.prompt_ids(messages)
        room = self.max_model_len - len(ids)
        wanted = max_tokens if max_tokens is not None else self.max_tokens
        new_tokens = room if wanted is None else int(wanted)
        if room < 1 or new_tokens > room:
            raise ContextLengthError(
                f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                f"requested {len(ids) + new_tokens} tokens ({len(ids)} in the messages, {new_tokens} "
                "in the completion)"
            )
        temperature = self.temperature if temperature is None else float(temperature)
        stop = [s for s in stop or () if s]
        eos = self.tokenizer.eos_token_id
        with self._lock, torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed if seed is None else int(seed))
            output = self.model.generate(
                torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                max_new_tokens=new_tokens,
                do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None,
                top_p=top_p if temperature > 0 and top_p is not None and top_p < 1 else None,
                top_k=None,
                pad_token_id=self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos,
                eos_token_id=eos,
                stopping_criteria=[_StopStrings(self.tokenizer, len(ids), stop)] if stop else None,
                streamer=streamer,
            )
        generated = output[0, len(ids) :].tolist()
        stopped = eos is not None and generated and generated[-1] == eos
        text = self.tokenizer.decode(generated[:-1] if stopped else generated, skip_special_tokens=True)
        hits = sorted((text.find(s), s) for s in stop if s in text)
        stop_reason = hits[0][1] if hits else None
        if hits:
            text = text[: hits[0][0]]
        return ChatReply(
            text=text,
            finish_reason="stop" if stopped or hits or len(generated) < new_tokens else "length",
            prompt_tokens=len(ids),
            completion_tokens=len(generated),
            attempts=1,
            cached=False,
            stop_reason=stop_reason,
        )
