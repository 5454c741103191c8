"""Keyword-weight ideas for zh-dev2's multi and number R@1 (issue 27), measured and not shipped; JSON out.

zh-dev2 R@1 is below its vector lane in two categories, multi 5 vs 6 and number 6 vs 7 of 7 and 9. Read
probe by probe, each loss is a near-tie that the keyword lane or the recency decay tips (vector scores
within 0.005): "我妹学的啥专业" (jieba cuts the query into 妹学, an unknown word, so 我妹 never matches and
专业 in an unrelated turn wins), "我买车花了多少" (花 matches 花呗 in a salary turn), "我多高" (cosines
0.591 vs 0.590, the newer weight turn wins on decay). The ideas below are the general rules those
probes suggest, each applied to the shipped ranking's query term weights (a patch of this process only):

- `single_char_half` / `single_char_quarter`: a one-character CJK query word (花, 高: most polysemous)
  weighs half / a quarter;
- `oov_context_bigrams`: a two-character query word jieba's dictionary does not know (妹学: a cut of the
  HMM, not a word) adds the bigrams with its neighbours (我妹, 学的) at half weight, as a bigram inside a
  word does.

Measured 2026-12-05 (e5-small q4; zh-dev2 R@1/R@5, multi and number R@1 of 7 and 9; MADial zh R@1/R@5):
shipped 72.97/85.14, 5, 6; MADial 33.83/62.88. single_char_half 72.97/85.14, 5, 7; MADial 34.17/62.10.
single_char_quarter 72.97/85.14, 5, 7; MADial 34.49/61.60. oov_context_bigrams 74.32/85.14, 6, 6; MADial
33.52/62.75. zh-dev and heldout-updates: unchanged for all three. Each gains one zh-dev2 probe (the one it
was read from) and loses R@5 on MADial, which it was not read from: none is shipped.
Usage: python bench/recall_rank_ideas.py [--evaldata DIR] [--sets zh-dev2,zh-dev,madial-bench] [--ideas a,b]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import engine.memory.recall as recall_module  # noqa: E402
from bench import recall_quality as rq  # noqa: E402
from engine.memory import tokens  # noqa: E402

Weights = Callable[[str, float], dict[str, float]]
SHIPPED: Weights = recall_module.query_term_weights


def single_char(factor: float) -> Weights:
    def weights(text: str, idf_floor: float) -> dict[str, float]:
        return {t: w * factor if len(t) == 1 and tokens.is_cjk(t) else w for t, w in SHIPPED(text, idf_floor).items()}
    return weights


def oov_context_bigrams(text: str, idf_floor: float) -> dict[str, float]:
    out = dict(SHIPPED(text, idf_floor))
    table, _ = tokens.general_idf()
    for word in tokens.word_tokens(text):
        if len(word) != 2 or not all(tokens.is_cjk(c) for c in word) or table.get(word, None) is not None:
            continue
        at = text.find(word)
        for bigram in (text[at - 1:at + 1] if at > 0 else "", text[at + 1:at + 3]):
            if len(bigram) == 2 and all(tokens.is_cjk(c) for c in bigram) and bigram not in out:
                w = 0.5 * (tokens.term_idf(bigram) - idf_floor)
                if w > 0:
                    out[bigram] = w
    return out


IDEAS: dict[str, Weights] = {"shipped": SHIPPED, "single_char_half": single_char(0.5),
                             "single_char_quarter": single_char(0.25), "oov_context_bigrams": oov_context_bigrams}


def run(evaldata: str, sets: str, idea: str) -> dict[str, Any]:
    recall_module.query_term_weights = IDEAS[idea]  # type: ignore[assignment]
    try:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            rq.main(["--evaldata", evaldata, "--sets", sets, "--variants", "shipped"])
        report = json.loads(printed.getvalue())
    finally:
        recall_module.query_term_weights = SHIPPED
    out = {}
    for name, rows in report.items():
        if isinstance(rows, dict) and "shipped" in rows:
            row = rows["shipped"]
            out[name] = {k: row[k] for k in ("R@1", "R@5", "MRR", "by_category_R1_R5_n", "newer_above_stale")
                         if k in row}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evaldata", default=str(rq.DEFAULT_EVALDATA))
    parser.add_argument("--sets", default="zh-dev2,zh-dev,madial-bench")
    parser.add_argument("--ideas", default=",".join(IDEAS))
    args = parser.parse_args(argv)
    if not (Path(args.evaldata) / "zh-dev2").is_dir():
        print(json.dumps({"skipped": f"no evaluation data at {args.evaldata}"}))
        return 0
    out = {idea: run(args.evaldata, args.sets, idea) for idea in args.ideas.split(",") if idea}
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
