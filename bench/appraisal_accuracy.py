"""Accuracy of the text appraisal (engine/appraisal/events.py) per class, as JSON.

Two sets: our own labelled lines (tests/fixtures/appraisal_lines.jsonl, written by hand: every
response class and the distractors) and an independent one we did not write or tune on:
MADial-Bench's 171 labelled memory events (MIT; /work/shared/evaldata/madial-bench, read at run time),
whose `emotion` maps to her response: 开心/兴奋/期待 -> gladness, 焦虑/失望/悲伤/愤怒/害怕/挫败 ->
concern, 中性 -> neutral. Those events name the feeling ("…感到非常开心"), so the bench also scores
them with that clause removed ("stripped": only the event itself is left), the harder reading.

Usage: python bench/appraisal_accuracy.py [--evaldata DIR]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from engine.appraisal import classify

ROOT = Path(__file__).resolve().parent.parent
MADIAL_TO_RESPONSE = {"开心": "gladness", "兴奋": "gladness", "期待": "gladness", "焦虑": "concern",
                      "失望": "concern", "悲伤": "concern", "愤怒": "concern", "害怕": "concern",
                      "挫败": "concern", "中性": "neutral"}
_FEELING = re.compile(r"[，,]?[^，,。]*(感到|感觉|觉得|心情)[^，,。]*")


def score(pairs: list[tuple[str, str]]) -> dict[str, object]:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for text, gold in pairs:
        per[gold][classify(text)] += 1
    classes = {gold: {"n": sum(c.values()), "accuracy": round(c[gold] / sum(c.values()), 3),
                      "predicted": dict(c.most_common())} for gold, c in sorted(per.items())}
    correct = sum(c[g] for g, c in per.items())
    return {"n": len(pairs), "accuracy": round(correct / max(1, len(pairs)), 3), "classes": classes}


def own_set() -> list[tuple[str, str]]:
    path = ROOT / "tests" / "fixtures" / "appraisal_lines.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(r["text"], r["label"]) for r in rows]


def madial(evaldata: Path, strip_feeling: bool) -> list[tuple[str, str]]:
    path = evaldata / "madial-bench" / "ch" / "MADial-Bench-zh-memory.json"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        (row,) = json.loads(line).values()
        text = _FEELING.sub("", row["event"]) if strip_feeling else row["event"]
        out.append((text, MADIAL_TO_RESPONSE[row["emotion"]]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaldata", type=Path, default=Path("/work/shared/evaldata"))
    args = parser.parse_args()
    report: dict[str, object] = {"own_lines": score(own_set())}
    if (args.evaldata / "madial-bench").is_dir():
        report["madial_events"] = score(madial(args.evaldata, strip_feeling=False))
        report["madial_events_stripped"] = score(madial(args.evaldata, strip_feeling=True))
    print(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
