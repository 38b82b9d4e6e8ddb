"""Policy backends: token ids in, sampled response token ids out.

- :class:`TransformersPolicy` samples with ``model.generate`` of the model
  being trained (CPU tests, small runs); nothing to synchronise.
- :class:`VLLMPolicy` samples with a colocated vLLM engine (GPU runs) and
  takes the trained weights after every update (:meth:`VLLMPolicy.sync`).
  It is importable without vLLM; constructing it needs the ``vllm`` package.

Sampling is reproducible: every call takes a ``seed``; the transformers
backend draws inside ``torch.random.fork_rng`` so the process-wide torch RNG
is left as it was.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from typing import Any, Protocol

import torch


class PolicyBackend(Protocol):
    """What the rollout engine needs from a sampler."""

    def generate(
        self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, temperature: float, seed: int
    ) -> list[list[int]]:
        """One sampled response (token ids, ending with EOS when the model stopped) per prompt."""
        ...

    def sync(self, model: torch.nn.Module) -> None:
        """Make the sampler use ``model``'s current weights."""
        ...


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def _trim_response(tokens: Sequence[int], eos_ids: set[int], pad_id: int | None) -> list[int]:
    """Generated ids up to and including the first EOS; padding after it dropped."""
    response: list[int] = []
    for token in tokens:
        if token in eos_ids:
            response.append(int(token))
            break
        if pad_id is not None and token == pad_id and pad_id not in eos_ids:
            break
        response.append(int(token))
    return response


class TransformersPolicy:
    """Samples from a transformers causal LM with ``generate`` (left-padded batches).

    Args:
        model: the causal LM being trained (sampling uses it as it is now).
        tokenizer: its tokenizer (pad and EOS ids come from it).
        allowed_token_ids: restrict sampling to exactly these tokens, e.g. a
            small action vocabulary for a policy trained from scratch (add the
            EOS id to let it stop early).
        batch_size: prompts per ``generate`` call.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        allowed_token_ids: Sequence[int] | None = None,
        batch_size: int = 64,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.eos_ids = {int(tokenizer.eos_token_id)}
        self.pad_id = int(
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        self.allowed = sorted(set(allowed_token_ids)) if allowed_token_ids is not None else None

    def sync(self, model: torch.nn.Module) -> None:
        self.model = model

    @torch.no_grad()
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: int,
        temperature: float = 1.0,
        seed: int = 0,
    ) -> list[list[int]]:
        responses: list[list[int]] = []
        device = next(self.model.parameters()).device
        was_training = self.model.training
        self.model.eval()
        devices = [device] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed % 2**63)
            for start in range(0, len(prompts), self.batch_size):
                batch = prompts[start : start + self.batch_size]
                width = max(len(p) for p in batch)
                input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                for row, prompt in enumerate(batch):
                    input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
                    attention[row, width - len(prompt) :] = 1
                sampling = {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
                output = self.model.generate(
                    input_ids=input_ids.to(device),
                    attention_mask=attention.to(device),
                    max_new_tokens=max_new_tokens,
                    pad_token_id=self.pad_id,
                    eos_token_id=sorted(self.eos_ids),
                    prefix_allowed_tokens_fn=(lambda _b, _ids: self.allowed) if self.allowed else None,
                    **(sampling if temperature > 0 else {"do_sample": False}),
                )
                for row in output[:, width:].tolist():
                    responses.append(_trim_response(row, self.eos_ids, self.pad_id))
        self.model.train(was_training)
        return responses


class VLLMPolicy:
    """Samples with a colocated vLLM engine loaded from a local model path.

    The engine runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) so
    :meth:`sync` can hand it the trainer's weights directly through the
    worker's in-place ``reload_weights`` (vLLM >= 0.32).

    Args:
        model_path: local directory of the base model (never a hub download).
        gpu_memory_utilization: share of GPU memory the engine may take; the
            rest stays for training.
        dtype: engine dtype.
        max_model_len: prompt + response tokens.
        eos_token_id: the id that ends a response (the tokenizer's EOS), on top
            of the model's own stop ids; a response that stopped ends with it.
        allowed_token_ids: restrict sampling to exactly these tokens (as
            :class:`TransformersPolicy`; add the EOS id to let it stop early).
    """

    def __init__(
        self,
        model_path: str,
        *,
        gpu_memory_utilization: float = 0.4,
        dtype: str = "bfloat16",
        max_model_len: int = 4096,
        eos_token_id: int | None = None,
        allowed_token_ids: Sequence[int] | None = None,
    ) -> None:
        if not vllm_available():
            raise ImportError("VLLMPolicy needs the 'vllm' package (GPU only); use TransformersPolicy on CPU")
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        from vllm import LLM

        self.llm = LLM(
            model=model_path,
            dtype=dtype,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            enable_prefix_caching=True,
        )
        self.eos_token_id = eos_token_id
        self.allowed = sorted(set(allowed_token_ids)) if allowed_token_ids is not None else None

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: int,
        temperature: float = 1.0,
        seed: int = 0,
    ) -> list[list[int]]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        stops = [self.eos_token_id] if self.eos_token_id is not None else None
        params = [
            SamplingParams(
                temperature=temperature,
                top_p=1.0,
                max_tokens=max_new_tokens,
                seed=seed + index,
                stop_token_ids=stops,
                allowed_token_ids=self.allowed,
            )
            for index in range(len(prompts))
        ]
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=list(p)) for p in prompts], params, use_tqdm=False
        )
        eos_ids = set(stops or ())
        return [_trim_response(output.outputs[0].token_ids, eos_ids, None) for output in outputs]

    def sync(self, model: torch.nn.Module) -> None:
        # reload_weights re-runs the loaders' post-processing (the CPU backend repacks linear
        # weights into plain parameters that a bare load_weights can no longer write into)
        weights = [(name, tensor.detach()) for name, tensor in model.state_dict().items()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        self.llm.reset_prefix_cache()
