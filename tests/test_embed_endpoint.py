"""The OpenAI-compatible embedding option, against a real HTTP server on loopback speaking /v1/embeddings."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from engine.errors import ConfigError, StoreError
from engine.memory.embed import OpenAIEmbedder, make_embedder
from engine.settings import MemorySettings

DIM = 8


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict] = []
    dim = DIM

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        data = [{"index": i, "embedding": [float(len(t))] + [1.0] * (self.dim - 1)}
                for i, t in reversed(list(enumerate(body["input"])))]  # out of order on purpose
        out = json.dumps({"object": "list", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_embeddings_come_back_in_input_order_normalised_with_prefixes_and_key(server: str) -> None:
    embedder = OpenAIEmbedder(server, "test-model", DIM, "sekret", query_prefix="query: ", passage_prefix="passage: ")
    rows = embedder.embed_passages(["a", "bbbb"])
    assert rows.shape == (2, DIM)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    assert rows[1, 0] > rows[0, 0]  # "passage: bbbb" is longer: its first component is larger, order kept
    embedder.embed_queries(["q"])
    assert _Handler.seen[0]["path"] == "/v1/embeddings"
    assert _Handler.seen[0]["auth"] == "Bearer sekret"
    assert _Handler.seen[0]["body"] == {"model": "test-model", "input": ["passage: a", "passage: bbbb"]}
    assert _Handler.seen[1]["body"]["input"] == ["query: q"]


def test_a_wrong_dimension_is_a_clear_error(server: str) -> None:
    embedder = OpenAIEmbedder(server, "test-model", DIM + 1, None)
    with pytest.raises(StoreError, match="embedding_dim"):
        embedder.embed_passages(["x"])


def test_an_unreachable_endpoint_is_a_clear_error() -> None:
    embedder = OpenAIEmbedder("http://127.0.0.1:9/v1", "m", DIM, None, timeout_s=2)
    with pytest.raises(StoreError, match="check \\[memory\\] embedding_url"):
        embedder.embed_queries(["x"])


def test_openai_provider_needs_a_url() -> None:
    with pytest.raises(ConfigError, match="embedding_url"):
        make_embedder(MemorySettings(embedding_provider="openai", embedding_url=""))
