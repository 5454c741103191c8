"""A companions directory for bench/many.py: N companion files of M memories each, generated in minutes and cached.

Embedding a million texts one by one would take days on this CPU (20-45 ms a text), and recording a
million memories one file at a time still most of an hour. So: a pool of distinct Chinese chat
turns (MemoryBank's 566 companion chats, read from the shared evaldata at run time, plus built
sentences) is embedded ONCE with the real bundled model (cached beside the data); a few template
files are recorded from that pool with the real schema and ingest code (`record_turns_bulk`), each
template a different subset and order of the pool; every companion is then a byte copy of one
template, re-identified as a new companion (a fresh `companion.uid`, `handle` = the file's stem,
a name of her own). Vectors are real sqlite-vec rows of the real model; only their sharing is
synthetic.

The directory is kept under --data-dir, named by N, M, the template count and a key over the
schema (every migration's text), the pool and this generator's version; a `ready.json` is written
last, so a half-built directory is never reused.

Usage: python bench/many_data.py [--companions 1000] [--memories 1000] [--data-dir DIR] [--templates 8]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GENERATOR_VERSION = 2  # bump when what a generated file holds changes (2: templates consolidated)
CST = timezone(timedelta(hours=8))
HISTORY_DAYS = 180
SUBJECTS = ["我", "我妈", "我同事", "我朋友小李", "芝麻", "我室友", "我老板", "我表妹"]
EVENTS = ["今天去了趟超市买了草莓", "下班路上下起了大雨", "周末想去西湖边骑车", "最近在学做蛋糕", "晚上看了一部老电影",
          "早上起晚了差点迟到", "准备下个月去成都旅游", "在读一本关于宇宙的书", "中午吃了一碗牛肉面", "感冒了嗓子好疼",
          "换了一份新工作", "搬家到了城东", "报名了游泳课", "养的多肉终于开花了", "和家里人吵了一架", "拿到了驾照"]
TAILS = ["，挺开心的", "，有点累", "，你觉得怎么样？", "，想跟你说说", "。", "，好烦啊", "，哈哈哈"]
REPLIES = ["真好呀", "辛苦了，抱抱", "听起来很有意思", "要注意身体哦", "我也想去", "然后呢？", "慢慢来，不着急"]
NAMES = ["小安", "小雨", "阿宁", "小满", "念念", "晓晴", "若溪", "小禾"]
BIRTHS = ["1998-04-12 09:30", "1996-11-03 22:10", "2000-02-29 06:45", "1994-07-18 13:20",
          "1999-09-09 18:05", "1997-01-25 04:40", "1995-05-05 11:11", "2001-12-21 20:30"]


def evaldata_dir() -> Path | None:
    """$ANIMA_EVALDATA, else ../shared/evaldata beside the repo; None when neither exists."""
    for candidate in (os.environ.get("ANIMA_EVALDATA"), str(REPO.parent / "shared" / "evaldata")):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def pool_pairs() -> list[tuple[str, str]]:
    """Distinct (user, companion) turns: MemoryBank's Chinese chats when the evaldata is there, then built ones."""
    pairs: list[tuple[str, str]] = []
    root = evaldata_dir()
    bank = root / "memorybank" / "cn" / "memory_bank_cn.json" if root else None
    if bank is not None and bank.is_file():
        users = json.loads(bank.read_text(encoding="utf-8"))
        for user in users.values():
            for day in user.get("history", {}).values():
                for turn in day:
                    query, response = str(turn.get("query", "")).strip(), str(turn.get("response", "")).strip()
                    if query and response:
                        pairs.append((query, response))
    rng = random.Random(11)
    built = [(s + e + t, rng.choice(REPLIES)) for s in SUBJECTS for e in EVENTS for t in TAILS]
    pairs.extend(built)
    return list(dict.fromkeys(pairs))


def schema_key() -> str:
    """A hash of every migration file: a schema change regenerates the data."""
    digest = hashlib.sha256()
    for path in sorted((REPO / "engine" / "store" / "migrations").glob("*.sql")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def pool_key(pairs: list[tuple[str, str]], model: str) -> str:
    digest = hashlib.sha256(model.encode())
    for user, reply in pairs:
        digest.update(user.encode() + b"\x00" + reply.encode() + b"\x01")
    return digest.hexdigest()[:12]


class PoolEmbedder:
    """The real model's vectors for the pool, computed once; a text outside the pool goes to the model (counted)."""

    def __init__(self, model: Any, texts: list[str], vectors: np.ndarray):
        self.name, self.dim = model.name, model.dim
        self._model = model
        self._by_text = dict(zip(texts, vectors, strict=True))
        self.outside_pool = 0

    def embed_passages(self, texts: Any) -> np.ndarray:
        missing = [t for t in texts if t not in self._by_text]
        if missing:
            self.outside_pool += len(missing)
            self._by_text.update(zip(missing, self._model.embed_passages(missing), strict=True))
        return np.stack([self._by_text[t] for t in texts])

    def embed_queries(self, texts: Any) -> np.ndarray:
        return self._model.embed_queries(texts)  # type: ignore[no-any-return]


def pool_embedder(data_dir: Path, pairs: list[tuple[str, str]]) -> tuple[PoolEmbedder, dict[str, Any]]:
    """The pool's vectors from the cache beside the data, or embedded now with the configured model."""
    from engine.memory.embed import make_embedder
    from engine.settings import Settings

    model = make_embedder(Settings().memory)
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    cache = data_dir / f"pool-{pool_key(pairs, model.name)}.npy"
    began = time.monotonic()
    if cache.is_file():
        vectors = np.load(cache)
        embedded = False
    else:
        chunks = []
        for start in range(0, len(texts), 64):
            chunks.append(model.embed_passages(texts[start : start + 64]))
            print(f"  pool: embedded {start + len(chunks[-1])}/{len(texts)} "
                  f"({time.monotonic() - began:.0f} s)", file=sys.stderr)
        vectors = np.concatenate(chunks).astype(np.float32)
        data_dir.mkdir(parents=True, exist_ok=True)
        np.save(cache.with_suffix(".tmp.npy"), vectors)
        os.replace(cache.with_suffix(".tmp.npy"), cache)
        embedded = True
    return PoolEmbedder(model, texts, vectors), {"pool_texts": len(texts), "pool_pairs": len(pairs),
                                                 "pool_embedded_now": embedded,
                                                 "pool_s": round(time.monotonic() - began, 1)}


def build_template(path: Path, embedder: PoolEmbedder, pairs: list[tuple[str, str]], memories: int,
                   seed: int, now: float) -> int:
    """One companion file of `memories` memories (memories/2 turns) from a seeded subset and order of the pool."""
    from engine.companion import create_companion
    from engine.memory.ingest import TurnInput, record_turns_bulk
    from engine.store import connect, migrate

    rng = random.Random(seed)
    turns_wanted = max(1, memories // 2)
    order = rng.sample(pairs, len(pairs)) if turns_wanted <= len(pairs) else [rng.choice(pairs) for _ in range(turns_wanted)]
    start = now - HISTORY_DAYS * 86400
    turns = []
    for i, (user, reply) in enumerate(order[:turns_wanted]):
        ts = datetime.fromtimestamp(start + i * HISTORY_DAYS * 86400 / turns_wanted, CST).isoformat(timespec="seconds")
        turns.append(TurnInput(f"hist-{seed}-{i}", user, reply, ts))
    conn = connect(path)
    try:
        migrate(conn, now=start)
        create_companion(conn, name=NAMES[seed % len(NAMES)], birth_local=BIRTHS[seed % len(BIRTHS)],
                         tz="Asia/Shanghai", place="杭州", sect=2, now=start)
        record_turns_bulk(conn, embedder, turns, now)  # type: ignore[arg-type]
        count = int(conn.execute("SELECT count(*) FROM mem_episodic").fetchone()[0])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    consolidate(path)
    return count


def consolidate(path: Path) -> None:
    """Her episodes made facts, by `anima consolidate --now` (the real job, in the foreground).

    A companion at rest has no backlog: without this every copy starts with 1,000 unconsolidated
    episodes, the daemon queues a consolidation for each (~1.8 s of CPU apiece, ~30 CPU-minutes
    for 1,000), and an "idle" window measures that backlog instead of idling.
    """
    subprocess.run([sys.executable, "-m", "daemon", "--db", str(path), "consolidate", "--now"], cwd=REPO,
                   check=True, stdout=subprocess.DEVNULL)


def reidentify(path: Path, handle: str, name: str) -> None:
    """Make a template copy a companion of her own: a new uid (made once, here, at her creation), her handle."""
    from engine.store import connect
    from engine.store.core import set_companion_handle

    conn = connect(path)
    try:
        conn.execute("UPDATE companion SET uid = lower(hex(randomblob(16))), name = ?", (name,))
        set_companion_handle(conn, handle)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def handle_of(i: int) -> str:
    return f"c{i:04d}"


def dataset(companions: int, memories: int, data_dir: Path, templates: int = 8) -> tuple[Path, dict[str, Any]]:
    """The cached directory for (companions, memories, templates, schema), generated first when missing."""
    pairs = pool_pairs()
    key = f"n{companions}-m{memories}-t{templates}-s{schema_key()}-v{GENERATOR_VERSION}"
    folder = data_dir / f"many-{key}"
    ready = folder / "ready.json"
    if ready.is_file():
        return folder / "companions", {**json.loads(ready.read_text()), "cached": True}
    began = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "templates").mkdir(parents=True)
    target = folder / "companions"
    target.mkdir()
    embedder, pool_info = pool_embedder(data_dir, pairs)
    now = time.time()
    t0 = time.monotonic()
    counts = []
    for n in range(templates):
        counts.append(build_template(folder / "templates" / f"t{n}.db", embedder, pairs, memories, seed=n, now=now))
        print(f"  template {n + 1}/{templates}: {counts[-1]} memories ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    templates_s = time.monotonic() - t0
    t0 = time.monotonic()
    for i in range(companions):
        handle = handle_of(i)
        shutil.copyfile(folder / "templates" / f"t{i % templates}.db", target / f"{handle}.db")
        reidentify(target / f"{handle}.db", handle, f"{NAMES[i % len(NAMES)]}{i}")
        if (i + 1) % 200 == 0:
            print(f"  companions: {i + 1}/{companions} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    copies_s = time.monotonic() - t0
    size = sum(p.stat().st_size for p in target.glob("*.db"))
    info = {"key": key, "companions": companions, "memories_per_companion": sorted(set(counts)),
            "templates": templates, **pool_info, "texts_embedded_outside_pool": embedder.outside_pool,
            "templates_s": round(templates_s, 1), "copies_s": round(copies_s, 1),
            "generate_s": round(time.monotonic() - began, 1), "bytes": size,
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds")}
    ready.write_text(json.dumps(info))
    return target, {**info, "cached": False}


def default_data_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "anima-bench"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--companions", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--templates", type=int, default=8)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    args = parser.parse_args()
    if args.companions < 1 or args.memories < 2 or args.templates < 1:
        parser.error("--companions and --templates must be >= 1, --memories >= 2")
    folder, info = dataset(args.companions, args.memories, args.data_dir, args.templates)
    print(json.dumps({"dir": str(folder), **info}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
