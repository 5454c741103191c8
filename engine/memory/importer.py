"""Import a history.jsonl file (ts, turn_id, role, text; optional salience): validated whole, then written in one go."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.errors import InputError
from engine.memory.embed import Embedder
from engine.memory.ingest import ROLES, TurnInput, record_turns_bulk
from engine.times import parse_client_instant

MAX_FILE_BYTES = 512 * 1024 * 1024
# OpenAI-style histories (issue 25): her messages are the assistant's.
ROLE_ALIASES = {"assistant": "companion"}


def _line_error(path: Path, number: int, problem: str) -> InputError:
    return InputError(f"{path}: line {number}: {problem}; nothing from this file was written")


def load_history_turns(path: str | Path, max_text_chars: int = 8000, now: float | None = None) -> list[TurnInput]:
    """Parse and check every line; the messages of one turn_id are joined into one TurnInput.

    `ts` follows the API's rule (engine/times.parse_client_instant): an explicit offset, not before
    2000, not more than a day ahead of `now`; a line that breaks it is named and nothing is written.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(f"{path}: file is larger than {MAX_FILE_BYTES} bytes; split it")
    order: list[str] = []
    turns: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            text_line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _line_error(path, number, f"not valid UTF-8 (byte {exc.start}); re-save the file as UTF-8") from None
        try:
            record = json.loads(text_line)
        except json.JSONDecodeError as exc:
            raise _line_error(path, number, f"not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise _line_error(path, number, "expected a JSON object with ts, turn_id, role, text")
        if "text" not in record and "content" in record:  # OpenAI-style chat exports say content
            record["text"] = record["content"]
        for key in ("ts", "turn_id", "role", "text"):
            if key not in record:
                raise _line_error(path, number, f"missing key {key!r}")
        role = ROLE_ALIASES.get(record["role"], record["role"]) if isinstance(record["role"], str) else record["role"]
        if role not in ROLES:
            raise _line_error(path, number, f"unknown role {role!r} (expected 'user' or 'companion'; "
                                            "'assistant' is read as 'companion')")
        turn_id = record["turn_id"]
        if isinstance(turn_id, int) and not isinstance(turn_id, bool):
            turn_id = str(turn_id)
        if not isinstance(turn_id, str) or not turn_id.strip():
            raise _line_error(path, number, f"turn_id must be a non-empty string, got {turn_id!r}")
        text = record["text"]
        if not isinstance(text, str):
            raise _line_error(path, number, "text must be a string")
        if len(text) > max_text_chars:
            raise _line_error(path, number, f"text is {len(text)} characters, over the limit of {max_text_chars}")
        try:
            parse_client_instant(record["ts"], "ts", now)
        except InputError as exc:
            raise _line_error(path, number, str(exc)) from None
        salience = record.get("salience")
        if salience is not None and (isinstance(salience, bool) or not isinstance(salience, int | float)
                                     or not 0 <= salience <= 1):
            raise _line_error(path, number, f"salience must be a number from 0 to 1, got {salience!r}")
        turn = turns.get(turn_id)
        if turn is None:
            turn = turns[turn_id] = {"ts": record["ts"], "user": None, "companion": None, "salience": None}
            order.append(turn_id)
        if turn[role] is not None:
            raise _line_error(path, number, f"turn {turn_id} already has a {role} message")
        turn[role] = text
        if salience is not None and role == "user":
            turn["salience"] = float(salience)
        if role == "user":
            turn["ts"] = record["ts"]
    out = []
    for turn_id in order:
        t = turns[turn_id]
        if not ((t["user"] or "").strip() or (t["companion"] or "").strip()):
            raise InputError(f"{path}: turn {turn_id} has only empty text; nothing from this file was written")
        out.append(TurnInput(turn_id=turn_id, user=t["user"], companion=t["companion"], ts_iso=t["ts"],
                             salience=t["salience"]))
    return out


def progress_bar(stream: Any = None) -> Callable[[int, int], None]:
    """A one-line progress bar on stderr (redrawn in place)."""
    out = stream or sys.stderr
    started = time.monotonic()

    def show(done: int, total: int) -> None:
        width = 30
        filled = int(width * done / max(total, 1))
        rate = done / max(time.monotonic() - started, 1e-6)
        out.write(f"\rembedding [{'#' * filled}{'.' * (width - filled)}] {done}/{total} ({rate:.0f}/s)")
        if done >= total:
            out.write("\n")
        out.flush()

    return show


def import_history(conn: Any, embedder: Embedder, path: str | Path, now: float, *, max_text_chars: int = 8000,
                   progress: Callable[[int, int], None] | None = None, embed: bool = True) -> dict[str, Any]:
    """Validate the whole file, embed in batches, write in one transaction; a summary dict.

    `embed=False` (anima ingest --defer-embedding) commits the messages keyword-searchable but without
    vectors; the running daemon's indexer, or `anima reembed --pending`, fills them in later."""
    started = time.monotonic()
    turns = load_history_turns(path, max_text_chars, now)
    result = record_turns_bulk(conn, embedder, turns, now, origin="import", max_text_chars=max_text_chars,
                               progress=progress, embed=embed)
    messages = sum(1 for t in turns for x in (t.user, t.companion) if x and x.strip())
    elapsed = time.monotonic() - started
    return {
        "file": str(path), "turns": len(turns), "messages": messages, "new_memories": len(result.memory_ids),
        "skipped_existing": messages - len(result.memory_ids), "seconds": round(elapsed, 2),
        "messages_per_s": round(messages / elapsed, 1) if elapsed > 0 else None,
        "vectors_pending": 0 if embed else len(result.memory_ids),
    }
