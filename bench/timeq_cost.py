"""Cost and reach of the time parser and the lexicon: import/load time, RSS, per-call p50/p95, and how often
the lexicon links a category question to its evidence. Prints one JSON object; never run by the tests.

    PYTHONPATH=. python bench/timeq_cost.py [--evaldata ../shared/evaldata] [--queries 1000]

Queries are real ones, in a fixed order: MemoryBank's probing questions (zh, en), the zh-dev2, zh-dev and
seed-probe probes, MADial-Bench zh's last user turns, then MemoryBank zh user turns up to --queries.
Cold numbers come from a fresh interpreter each (`sys.executable -c`), so nothing else is loaded yet.
jionlp is measured too when it is installed (pip install '.[lexicon-build]'), for comparison only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.memory import lexicon  # noqa: E402
from engine.memory.madial import madial_query, madial_rows  # noqa: E402
from engine.memory.timeq import time_window  # noqa: E402
from engine.memory.tokens import word_tokens  # noqa: E402

TZ = "Asia/Shanghai"
NOW = datetime(2026, 12, 1, 17, 0, tzinfo=ZoneInfo(TZ)).timestamp()

_COLD = {
    "timeq": "import engine.memory.timeq as t; t.time_window('大年三十晚上我在干嘛', 1796115600.0, 'Asia/Shanghai')",
    "lexicon": "import engine.memory.lexicon as l; l.lexicon(); l.expand(['乐器'], 20)",
    "jionlp": "import jionlp; jionlp.ner.extract_time('大年三十晚上我在干嘛', time_base=1796115600.0)",
}
# Peak RSS from /proc (VmHWM): ru_maxrss would carry over the forking parent's peak into the child.
_PROBE = """
import json, time
import gc
def kb(field):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field))
before_peak, before_now = kb("VmHWM:"), kb("VmRSS:")
start = time.perf_counter()
{code}
seconds = time.perf_counter() - start
gc.collect()
print(json.dumps({{"seconds": round(seconds, 3), "rss_peak_delta_mb": round((kb("VmHWM:") - before_peak) / 1024, 1),
                  "rss_kept_delta_mb": round((kb("VmRSS:") - before_now) / 1024, 1)}}))
"""


def cold(name: str) -> dict[str, Any] | None:
    """Import + first use in a fresh interpreter: seconds and RSS growth (the best of three runs)."""
    runs = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", _PROBE.format(code=_COLD[name])], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            return None if "ModuleNotFoundError" in done.stderr else {"error": done.stderr.strip()[-300:]}
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return min(runs, key=lambda r: r["seconds"])


def _jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def queries(evaldata: Path, count: int) -> list[str]:
    out: list[str] = []
    for lang in ("cn", "en"):
        for row in _jsonl(evaldata / "memorybank" / lang / f"probing_questions_{lang}.jsonl"):
            for questions in row.values():
                out.extend(questions)
    for name in ("zh-dev2", "zh-dev", "seed-probe"):
        out.extend(p["q"] for p in json.loads((evaldata / name / "probes.json").read_text(encoding="utf-8")))
    dialogues, _ = madial_rows(evaldata / "madial-bench")
    out.extend(madial_query(d).splitlines()[-1] for d in dialogues if madial_query(d))
    bank = json.loads((evaldata / "memorybank" / "cn" / "memory_bank_cn.json").read_text(encoding="utf-8"))
    for user in bank.values():
        for day in sorted(user["history"]):
            out.extend(turn["query"] for turn in user["history"][day] if turn.get("query"))
    return out[:count]


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 4),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 4),
            "max_ms": round(ordered[-1] * 1000, 4)}


def time_costs(qs: list[str]) -> dict[str, Any]:
    time_window("热身", NOW, TZ)  # festival table and lunar-python loaded: measured cold above
    found, without = [], []
    windows = 0
    for q in qs:
        start = time.perf_counter()
        window = time_window(q, NOW, TZ)
        spent = time.perf_counter() - start
        (found if window else without).append(spent)
        windows += window is not None
    return {"all": _ms(found + without), "with_window": _ms(found) if found else None,
            "without_window": _ms(without), "windows_found": windows}


def jionlp_costs(qs: list[str]) -> dict[str, Any] | None:
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints a banner on import
            import jionlp  # type: ignore[import-untyped]
    except ImportError:
        return None
    logging.disable(logging.CRITICAL)  # it logs a traceback for every string it cannot parse
    jionlp.ner.extract_time("热身", time_base=NOW)
    samples, resolved = [], 0
    for q in qs:
        start = time.perf_counter()
        with contextlib.suppress(Exception):  # it raises on some inputs: one reason it is not used
            resolved += bool(jionlp.ner.extract_time(q, time_base=NOW))
        samples.append(time.perf_counter() - start)
    return {"extract_time": _ms(samples), "queries_with_a_time_entity": resolved}


def lexicon_costs(qs: list[str]) -> dict[str, Any]:
    lexicon.lexicon()
    samples, sizes = [], []
    for q in qs:
        words = word_tokens(q)
        start = time.perf_counter()
        out = lexicon.expand(words, 20)
        samples.append(time.perf_counter() - start)
        sizes.append(len(out))
    warm = []
    for q in qs:  # the same queries again: the per-word caches are filled, as in a running daemon
        words = word_tokens(q)
        start = time.perf_counter()
        lexicon.expand(words, 20)
        warm.append(time.perf_counter() - start)
    return {"expand_limit_20": _ms(samples), "expand_limit_20_warm": _ms(warm),
            "mean_terms": round(statistics.mean(sizes), 2), "queries_with_terms": sum(1 for s in sizes if s)}


def _related_words(words: list[str]) -> set[str]:
    out: set[str] = set()
    for word in words:
        out |= lexicon.related(word)
    return out - set(words)


def zhdev2_links(evaldata: Path) -> dict[str, Any]:
    """For each hypernym probe: does a word related to a question word occur among its evidence turns'
    words, and how often among the other user turns (the noise the same link would add)."""
    folder = evaldata / "zh-dev2"
    turns: dict[str, str] = {}
    for row in _jsonl(folder / "history.jsonl"):
        if row["role"] == "user":
            turns[row["turn_id"]] = turns.get(row["turn_id"], "") + row["text"]
    turn_words = {tid: set(word_tokens(text)) for tid, text in turns.items()}
    probes = [p for p in json.loads((folder / "probes.json").read_text(encoding="utf-8")) if p.get("cat") == "hypernym"]
    linked, expanded, members_only, noise, members_noise = [], [], [], [], []
    for probe in probes:
        words = word_tokens(probe["q"])
        near = _related_words(words)
        members = {m for w in words for m in lexicon.hyponyms(w)} - set(words)
        expansion = set(lexicon.expand(words, 20))
        evidence = set().union(*(turn_words.get(e, set()) for e in probe["ev"]))
        linked.append(bool(near & evidence))
        expanded.append(bool(expansion & evidence))
        members_only.append(bool(members & evidence))
        others = [ws for tid, ws in turn_words.items() if tid not in probe["ev"]]
        noise.append(sum(1 for ws in others if near & ws) / max(1, len(others)))
        members_noise.append(sum(1 for ws in others if members & ws) / max(1, len(others)))
    return {"probes": len(probes), "linked_by_related": sum(linked), "linked_by_expand_20": sum(expanded),
            "linked_by_hyponyms": sum(members_only), "linked_probe_indexes": [i for i, hit in enumerate(linked) if hit],
            "other_turns_linked_by_related_mean": round(statistics.mean(noise), 4),
            "other_turns_linked_by_hyponyms_mean": round(statistics.mean(members_noise), 4)}


def zhdev2_links_by_category(evaldata: Path) -> dict[str, Any]:
    """Every zh-dev2 category: probes whose evidence shares a word with expand(question words, 20) that
    the question itself lacks, and the share of other user turns the same terms reach (noise)."""
    folder = evaldata / "zh-dev2"
    turns: dict[str, str] = {}
    for row in _jsonl(folder / "history.jsonl"):
        if row["role"] == "user":
            turns[row["turn_id"]] = turns.get(row["turn_id"], "") + row["text"]
    turn_words = {tid: set(word_tokens(text)) for tid, text in turns.items()}
    out: dict[str, dict[str, float]] = {}
    for probe in json.loads((folder / "probes.json").read_text(encoding="utf-8")):
        if not probe.get("ev"):
            continue
        words = word_tokens(probe["q"])
        terms = set(lexicon.expand(words, 20)) - set(words)
        evidence = set().union(*(turn_words.get(e, set()) for e in probe["ev"]))
        others = [ws for tid, ws in turn_words.items() if tid not in probe["ev"]]
        row = out.setdefault(probe.get("cat", "?"), {"probes": 0, "bridged": 0, "other_turns_reached": 0.0})
        row["probes"] += 1
        row["bridged"] += bool(terms & evidence)
        row["other_turns_reached"] += sum(1 for ws in others if terms & ws) / max(1, len(others))
    for row in out.values():
        row["other_turns_reached"] = round(row["other_turns_reached"] / row["probes"], 4)
    return dict(sorted(out.items()))


def zhdev2_time_probes(evaldata: Path) -> dict[str, Any]:
    """zh-dev2's "time" probes asked at the last turn's time: how many get a window, and for how many
    every evidence turn lies inside it."""
    folder = evaldata / "zh-dev2"
    rows = _jsonl(folder / "history.jsonl")
    when = {row["turn_id"]: datetime.fromisoformat(row["ts"]).timestamp() for row in rows if row["role"] == "user"}
    asked_at = max(when.values()) + 3600
    probes = [p for p in json.loads((folder / "probes.json").read_text(encoding="utf-8")) if p.get("cat") == "time"]
    with_window = inside = 0
    for probe in probes:
        window = time_window(probe["q"], asked_at, TZ)
        if window is not None:
            with_window += 1
            inside += all(window.start <= when[e] < window.end for e in probe["ev"] if e in when)
    return {"probes": len(probes), "with_window": with_window, "evidence_inside_window": inside}


def madial_links(evaldata: Path) -> dict[str, Any]:
    """MADial-Bench zh: how often expand() adds a word (not in the query) that occurs in a gold memory,
    against how often it does so for a non-gold memory (the lift is what a bridge is worth)."""
    dialogues, memories = madial_rows(evaldata / "madial-bench")
    memory_words = {mid: set(word_tokens(m["event"])) for mid, m in memories.items()}
    gold_hits, other_rates = [], []
    for d in dialogues:
        words = word_tokens(madial_query(d))
        expansion = set(lexicon.expand(words, 20)) - set(words)
        gold = {str(i) for i in d["relevant-id"]}
        gold_hits.append(any(expansion & memory_words.get(g, set()) for g in gold))
        others = [ws for mid, ws in memory_words.items() if mid not in gold]
        other_rates.append(sum(1 for ws in others if expansion & ws) / max(1, len(others)))
    return {"dialogues": len(dialogues), "gold_memory_reached_by_an_expansion_term": round(sum(gold_hits) / len(gold_hits), 4),
            "non_gold_memory_reached_mean": round(statistics.mean(other_rates), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaldata", type=Path, default=ROOT.parent / "shared" / "evaldata")
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    qs = queries(args.evaldata, args.queries)
    report = {
        "queries": len(qs),
        "cold": {name: cold(name) for name in _COLD},
        "time_window": time_costs(qs),
        "jionlp": jionlp_costs(qs),
        "lexicon": lexicon_costs(qs),
        "time_probes_zh_dev2": zhdev2_time_probes(args.evaldata),
        "links_zh_dev2_hypernym": zhdev2_links(args.evaldata),
        "links_zh_dev2_by_category": zhdev2_links_by_category(args.evaldata),
        "links_madial_zh": madial_links(args.evaldata),
    }
    print(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
