"""Her narration over a simulated year: distinct texts, most repeated sentence, story progress, CPU per sentence; JSON out.

Evidence for issue 12 ("narration from state"): the synthetic year of tests/life_year.py (a stand-in for her day
machine: workdays and rest days on the real world of each date, companions, chats that interrupt, disappointments)
is narrated in order with one running StoryState. Reports how varied the sentences are (target >= 60 % distinct),
how far each story got (books finished, pieces made smooth, storylines ended, projects delivered, plant stages),
and the CPU cost of one sentence (narrate is called for every life event, so a simulated year pays it ~7,000 times).

Usage: python bench/narrate_year.py [--city 杭州] [--start 2026-01-05] [--days 365] [--seed narr-bench]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.life.narrate import StoryState, narrate  # noqa: E402
from tests.life_year import year_of_scenes  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--city", default="杭州")
    parser.add_argument("--start", default="2026-01-05", type=dt.date.fromisoformat)
    parser.add_argument("--days", default=365, type=int)
    parser.add_argument("--seed", default="narr-bench")
    args = parser.parse_args()
    scenes = year_of_scenes(args.start, args.days, args.city, args.seed)
    story = StoryState()
    texts: list[str] = []
    events: Counter[str] = Counter()
    started = time.process_time()
    for scene in scenes:
        before = story.data
        text, story = narrate(scene, story, args.seed)
        if text is not None:
            texts.append(text)
        if story.data.get("book", {}).get("index", 0) > before.get("book", {}).get("index", 0):
            events["books_finished"] += 1
        if story.data.get("project", {}).get("index", 0) > before.get("project", {}).get("index", 0):
            events["projects_delivered"] += 1
        if story.data.get("show", {}).get("index", 0) > before.get("show", {}).get("index", 0):
            events["shows_finished"] += 1
    cpu_s = time.process_time() - started
    counts = Counter(texts)
    top, top_n = counts.most_common(1)[0]
    lines = story.data.get("lines", {})
    skills = story.data.get("skills", {})
    print(json.dumps({
        "city": args.city, "start": args.start.isoformat(), "days": args.days, "scenes": len(scenes),
        "sentences": len(texts), "distinct": len(counts), "distinct_share": round(len(counts) / len(texts), 3),
        "most_repeated": {"times": top_n, "length": len(top)},
        "story": {**events, "pieces_smooth": {k: v["index"] for k, v in skills.items()},
                  "storylines_ended": sum(len(v["done"]) for v in lines.values()),
                  "people_with_storylines": len(lines), "course_index": story.data.get("course", {}).get("index", 0)},
        "cpu_s": round(cpu_s, 3), "cpu_us_per_sentence": round(cpu_s / max(1, len(scenes)) * 1e6, 1),
    }, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
