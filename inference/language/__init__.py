"""Language models and sentence embedders behind small interfaces (see base.py and embedding.py).

The backends import torch and transformers, so they are imported from their own modules
(`inference.language.local`, `inference.language.openai_compatible`), not from here.
"""

from inference.language.base import GenerationSettings, LanguageModel, Message, complete
from inference.language.embedding import EMBEDDING_DIMENSIONS, Embedder

__all__ = ["EMBEDDING_DIMENSIONS", "Embedder", "GenerationSettings", "LanguageModel", "Message", "complete"]
