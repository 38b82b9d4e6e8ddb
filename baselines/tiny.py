"""Small models built offline: a BPE tokenizer learnt locally and a randomly initialised causal LM.

Used by the CPU tests, the miniature learning experiment and the GPU device
check (a realistic-size random model). Nothing is downloaded: the tokenizer
is built from the texts it must cover, the model from a config.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import torch

SPECIAL_TOKENS = ("<pad>", "<unk>", "<eos>")
PROTOCOL_TOKENS = ("<think>", "</think>", "<action>", "</action>", "||")


def bpe_tokenizer(texts: Sequence[str], *, vocab_size: int = 512, words: Sequence[str] = ()) -> object:
    """A ``PreTrainedTokenizerFast`` with a byte-pair encoding learnt from ``texts``.

    Merges never cross a line break, so text that repeats (a legend line, an
    instruction) becomes a few tokens while a grid row stays a handful.
    ``words`` (e.g. the env's action names) and the protocol tags are single
    tokens matched before merging; an action word only matches as a whole
    word. The alphabet is printable ASCII plus every character of ``texts``;
    anything else maps to ``<unk>``. Deterministic for the same texts.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(set(string.printable) | {ch for text in texts for ch in text})
    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"\n"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=alphabet,
        show_progress=False,
    )
    backend.train_from_iterator(list(texts), trainer=trainer)
    backend.add_tokens([AddedToken(t, normalized=False) for t in PROTOCOL_TOKENS])
    backend.add_tokens([AddedToken(w, single_word=True, normalized=False) for w in words])
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>"
    )


def random_causal_lm(
    vocab_size: int,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    intermediate_size: int | None = None,
    max_positions: int = 4096,
    seed: int = 0,
    pad_token_id: int = 0,
    eos_token_id: int = 2,
) -> torch.nn.Module:
    """A Llama-architecture causal LM with random weights (initialised from ``seed``)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 4 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_positions,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(config)


# role-tagged turns, the assistant's header appended when a reply is wanted
# (vLLM's chat endpoint needs a template)
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def save_chat_model(
    folder: str, texts: Sequence[str], *, vocab_size: int = 600, max_positions: int = 4096
) -> int:
    """Save a random chat model that vLLM and transformers both serve; its parameter count.

    The tokenizer is :func:`bpe_tokenizer` over ``texts`` with
    :data:`CHAT_TEMPLATE`; the model has two heads of 64 dimensions (a head
    size vLLM's CPU attention supports) and ``max_positions`` positions.
    """
    tokenizer = bpe_tokenizer(texts, vocab_size=vocab_size)
    tokenizer.chat_template = CHAT_TEMPLATE
    model = random_causal_lm(
        len(tokenizer),
        hidden_size=128,
        num_heads=2,
        max_positions=max_positions,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return sum(parameter.numel() for parameter in model.parameters())
