"""MADial-Bench helpers: read the zh dialogues and memories, and build a recall query from a dialogue."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_SPEAKER = re.compile(r'^<([^>]+)>:\s*"?(.*?)"?\s*$', re.DOTALL)


def _jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def madial_rows(folder: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    dialogues = _jsonl(folder / "ch" / "MADial-Bench-zh-dialogue.json")
    memories: dict[str, dict[str, Any]] = {}
    for row in _jsonl(folder / "ch" / "MADial-Bench-zh-memory.json"):
        for key, value in row.items():
            memories[str(key)] = value
    return dialogues, memories


def dialogue_turns(d: dict[str, Any]) -> list[tuple[str, str]]:
    """(speaker, text) of the dialogue history before the test turn (what the benchmark gives as dialog_history)."""
    lines = d["dialogue"]
    test_turn = d["test-turn"][0]
    out = []
    for line in lines[1:test_turn]:
        match = _SPEAKER.match(line.strip())
        if match:
            out.append((match.group(1), match.group(2)))
    return out


def madial_query(d: dict[str, Any], max_chars: int = 500) -> str:
    """The user's turns, one per line, most recent last, within max_chars.

    The assistant's lines add noise (-0.7 Recall@5); one turn per line lets recall score each turn
    on its own as well as the whole (see recall.lane_candidates).
    """
    turns = [text for speaker, text in dialogue_turns(d) if speaker != "Assistant"]
    kept: list[str] = []
    used = 0
    for text in reversed(turns):
        if used + len(text) > max_chars and kept:
            break
        kept.append(text[-max_chars:])
        used += len(text) + 1
    return "\n".join(reversed(kept))
