"""Write, offline, a tiny random llama-architecture GGUF model that llama.cpp can serve.

::

    python scripts/make_tiny_gguf.py OUT.gguf [--seed N] [--context-length N]

Needs the ``gguf`` package (``pip install gguf``) and numpy. The model: 2 layers, width 64, 4 heads
(2 key/value heads), random float32 weights, so it loads in a second and answers at once (with noise).
Its tokenizer is SentencePiece-style ("llama" in GGUF terms) with about 330 tokens: ``<unk>``,
``<s>``, ``</s>``, the 256 byte tokens ``<0x00>``..``<0xFF>`` that any text falls back on, and a few
letter pieces. ``tokenizer.chat_template`` holds a plain role-tagged Jinja template, so an
OpenAI-compatible server (``python -m llama_cpp.server``) answers ``/v1/chat/completions`` with it.
Used by ``scripts/llamacpp_eval_e2e.sh``.
"""

from __future__ import annotations

import argparse
import string
import sys

import numpy as np

LAYERS, WIDTH, HEADS, KV_HEADS, FFN = 2, 64, 4, 2, 128
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
SPACE = "\u2581"  # SentencePiece's word-boundary mark


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and token types (gguf.TokenType values) of the tiny SPM vocabulary."""
    import gguf

    tokens = ["<unk>", "<s>", "</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    tokens += [f"<0x{byte:02X}>" for byte in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    # pieces: the boundary mark, single letters, letters after a boundary, a few common pairs; SPM merges
    # adjacent symbols into the highest-scoring piece, so every longer piece is reachable from shorter ones
    pieces = [SPACE, *string.ascii_lowercase, *(SPACE + c for c in string.ascii_lowercase)]
    pieces += ["th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "or", "es", "st", "to", "it"]
    pieces += [SPACE + "th", SPACE + "the", SPACE + "to", SPACE + "an", SPACE + "and"]
    tokens += pieces
    types += [gguf.TokenType.NORMAL] * len(pieces)
    scores = [0.0] * (3 + 256) + [-float(rank) for rank in range(len(pieces))]
    return tokens, scores, [int(t) for t in types]


def write(path: str, seed: int = 0, context_length: int = 32768) -> int:
    """Write the model to ``path``; returns its parameter count."""
    import gguf

    tokens, scores, types = vocabulary()
    vocab = len(tokens)
    writer = gguf.GGUFWriter(path, arch="llama")
    writer.add_name("agentenvs-tiny-random")
    writer.add_context_length(context_length)
    writer.add_embedding_length(WIDTH)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(WIDTH // HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    rng = np.random.default_rng(seed)

    def matrix(rows: int, cols: int) -> np.ndarray:  # numpy shape (out, in): GGUF stores it as {in, out}
        return (rng.standard_normal((rows, cols)) * 0.02).astype(np.float32)

    kv_width = WIDTH // HEADS * KV_HEADS
    tensors = {"token_embd.weight": matrix(vocab, WIDTH), "output_norm.weight": np.ones(WIDTH, np.float32)}
    for layer in range(LAYERS):
        block = f"blk.{layer}."
        tensors |= {
            block + "attn_norm.weight": np.ones(WIDTH, np.float32),
            block + "attn_q.weight": matrix(WIDTH, WIDTH),
            block + "attn_k.weight": matrix(kv_width, WIDTH),
            block + "attn_v.weight": matrix(kv_width, WIDTH),
            block + "attn_output.weight": matrix(WIDTH, WIDTH),
            block + "ffn_norm.weight": np.ones(WIDTH, np.float32),
            block + "ffn_gate.weight": matrix(FFN, WIDTH),
            block + "ffn_up.weight": matrix(FFN, WIDTH),
            block + "ffn_down.weight": matrix(WIDTH, FFN),
        }
    tensors["output.weight"] = matrix(vocab, WIDTH)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return sum(array.size for array in tensors.values())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the .gguf file to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--context-length", type=int, default=32768, help="llama.context_length")
    args = parser.parse_args(argv)
    count = write(args.out, args.seed, args.context_length)
    tokens = len(vocabulary()[0])
    print(f"wrote a {count:,}-parameter llama GGUF with a {tokens}-token vocabulary to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
