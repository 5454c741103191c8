"""Record a chat turn (or a told life event) as messages, episodic memories, FTS tokens and vectors in one transaction.

Vectors may lag the acknowledged write (`embed=False`, used by POST /v1/turns and `anima ingest
--defer-embedding`). What a front end needs acknowledged is the chat text: once the transaction commits
the message is durable and keyword-searchable (FTS is written with it). A vector is derived data, like
the FTS tokens, but it costs 20-40 ms per text on the bundled CPU model, which made embedding the whole
cost of a turn and starved /v1/context under load. Deferred rows simply have no mem_vec/mem_embedding
row yet; engine/memory/indexer.py finds and embeds them (the daemon drains them right after each turn
and on every heartbeat), so whatever was pending at a crash is found again on the next start.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.errors import ConflictError, InputError
from engine.memory.context import HEADER, echo_injection_id
from engine.memory.embed import Embedder, check_model, passage_vectors, vec_blob
from engine.memory.ranking import importance_from_salience
from engine.memory.tokens import fts_tokens
from engine.store import memory as store
from engine.store.connect import transaction
from engine.times import parse_instant

ROLES = ("user", "companion")


@dataclass(frozen=True)
class TurnInput:
    turn_id: str
    user: str | None
    companion: str | None
    ts_iso: str
    salience: float | None = None
    affect: dict[str, Any] | None = None


@dataclass(frozen=True)
class IngestResult:
    memory_ids: list[int] = field(default_factory=list)
    message_ids: list[int] = field(default_factory=list)
    created: bool = False


def parse_ts(ts_iso: str, where: str = "ts") -> float:
    """ISO 8601 to Unix seconds; a time without an offset is taken as UTC."""
    return parse_instant(ts_iso, where)


def heuristic_salience(text: str, role: str) -> float:
    """A cheap salience guess when the caller gives none: longer, exclaimed, first-person news weighs more."""
    length = len(text.strip())
    score = 0.35 + 0.25 * min(1.0, length / 40.0)
    if any(mark in text for mark in ("!", "！")):
        score += 0.1
    if role == "companion":
        score *= 0.8  # her reply re-states; the user's news is what is remembered
    return round(min(1.0, score), 3)


def check_text(text: str | None, where: str, max_chars: int) -> str | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise InputError(f"{where} must be a string, got {type(text).__name__}")
    if "\x00" in text:
        raise InputError(f"{where} contains a NUL character; send plain text")
    if len(text) > max_chars:
        raise InputError(f"{where} is {len(text)} characters, more than the limit of {max_chars} ([memory] max_text_chars)")
    return text if text.strip() else None


def validate_turn(turn: TurnInput, max_text_chars: int) -> tuple[float, list[tuple[str, str]]]:
    """Check a turn; return its Unix time and the (role, text) pairs to record."""
    if not isinstance(turn.turn_id, str) or not turn.turn_id.strip() or len(turn.turn_id) > 200:
        raise InputError(f"turn_id must be a non-empty string of at most 200 characters, got {turn.turn_id!r}")
    ts = parse_ts(turn.ts_iso, f"turn {turn.turn_id} ts")
    if turn.salience is not None and (not isinstance(turn.salience, int | float) or not 0 <= turn.salience <= 1
                                      or math.isnan(turn.salience)):
        raise InputError(f"turn {turn.turn_id} salience must be a number from 0 to 1, got {turn.salience!r}")
    pairs = []
    for role, text in (("user", turn.user), ("companion", turn.companion)):
        checked = check_text(text, f"turn {turn.turn_id} {role} text", max_text_chars)
        if checked is not None:
            pairs.append((role, checked))
    if not pairs:
        raise InputError(f"turn {turn.turn_id} has no text: give a user message, a companion reply, or both")
    return ts, pairs


def write_message(conn: Any, turn_id: str, role: str, text: str, ts: float, ts_iso: str, salience: float | None,
                  vector: np.ndarray | None, now: float, origin: str, echo: str | None) -> tuple[int, int | None]:
    """Insert one message and its memory row; returns (message_id, memory_id or None when it existed).

    With `vector` None the memory is left pending for engine/memory/indexer.py (keyword-searchable now)."""
    existing = store.message_of(conn, turn_id, role)
    if existing is not None:
        if existing["text"] != text:
            raise ConflictError(
                f"turn {turn_id} already has a different {role} message; messages are never rewritten "
                "(send a new turn_id for a new message)"
            )
        return existing["id"], None
    message_id = store.insert_message(conn, turn_id=turn_id, role=role, text=text, ts=ts, ts_iso=ts_iso,
                                      origin=origin, now=now)
    sal = heuristic_salience(text, role) if salience is None else float(salience)
    # Only a caller's salience moves importance: on MADial-Bench the length-based guess cost 2 points of
    # Recall@5, so a guessed salience stays neutral (importance 5 -> multiplier 1.0).
    importance = 5.0 if salience is None else importance_from_salience(sal)
    memory_id = store.insert_chat_memory(conn, message_id=message_id, turn_id=turn_id, role=role, ts=ts, raw=text,
                                         salience=sal, importance=importance, echo=echo, now=now)
    store.insert_fts(conn, memory_id, fts_tokens(text))
    if vector is not None:
        write_vector(conn, memory_id, vector)
    return message_id, memory_id


def write_vector(conn: Any, memory_id: int, vector: np.ndarray) -> None:
    """The two vector rows of a memory: mem_vec (sqlite-vec lane) and mem_embedding (rescoring, RAM index)."""
    blob = vec_blob(vector)
    store.insert_vector(conn, memory_id, blob)
    store.insert_embedding(conn, memory_id, blob)


def record_turn(conn: Any, embedder: Embedder, turn: TurnInput, now: float, *, origin: str = "api",
                max_text_chars: int = 8000, on_recorded: Callable[[Any], Any] | None = None,
                embed: bool = True, passages: Mapping[str, np.ndarray] | None = None) -> IngestResult:
    """Record one turn in one transaction; idempotent by (turn_id, role).

    `embed=False` writes no vectors: the memories stay pending for the indexer (see the module docstring).
    `passages`: vectors of the turn's texts the caller computed already (off the DB thread)."""
    ts, pairs = validate_turn(turn, max_text_chars)
    vectors: list[np.ndarray | None] = (
        list(passage_vectors(embedder, [text for _, text in pairs], passages)) if embed  # outside the write lock
        else [None] * len(pairs)
    )
    with transaction(conn):
        result = _write_messages(conn, embedder, [(turn, ts, role, text) for role, text in pairs], vectors, now, origin)
        if on_recorded is not None:
            on_recorded(conn)
    return result


def _write_messages(conn: Any, embedder: Embedder, plan: Sequence[tuple[TurnInput, float, str, str]],
                    vectors: Sequence[np.ndarray | None], now: float, origin: str) -> IngestResult:
    """Write validated (turn, ts, role, text) messages inside the caller's transaction, with the anti-loop rule."""
    check_model(conn, embedder, now)
    memory_ids: list[int] = []
    message_ids: list[int] = []
    for (turn, ts, role, text), vector in zip(plan, vectors, strict=True):
        # Anti-loop: a reply that repeats an injected memory block is marked, never re-extracted.
        echo = echo_injection_id(conn, turn.turn_id, text, now) if role == "companion" else None
        if echo is None and HEADER in text:
            echo = "pasted_block"  # a front end (or an imported history) holds our own block as a message
        message_id, memory_id = write_message(conn, turn.turn_id, role, text, ts, turn.ts_iso, turn.salience,
                                              vector, now, origin, echo)
        message_ids.append(message_id)
        if memory_id is not None:
            memory_ids.append(memory_id)
    return IngestResult(memory_ids=memory_ids, message_ids=message_ids, created=bool(memory_ids))


def _already_recorded(conn: Any, turn_id: str, role: str, text: str) -> bool:
    existing = store.message_of(conn, turn_id, role)
    if existing is None:
        return False
    if existing["text"] != text:
        raise ConflictError(f"turn {turn_id} already has a different {role} message; messages are never rewritten "
                            "(send a new turn_id for a new message)")
    return True


def record_turns_bulk(conn: Any, embedder: Embedder, turns: Sequence[TurnInput], now: float, *, origin: str = "import",
                      max_text_chars: int = 8000, batch: int = 64,
                      progress: Callable[[int, int], None] | None = None, embed: bool = True) -> IngestResult:
    """Record many validated turns in ONE transaction (all or nothing), embedding in batches.

    `embed=False` writes no vectors: every new memory stays pending for the indexer."""
    plan: list[tuple[TurnInput, float, str, str]] = []
    for turn in turns:
        ts, pairs = validate_turn(turn, max_text_chars)
        plan.extend((turn, ts, role, text) for role, text in pairs)
    # Messages already recorded (a file ingested again) are checked now and never embedded: a re-run of a
    # big import took 52 s to write nothing (issue 25). A different text under a known (turn, role) is
    # the same ConflictError write_message would raise, before any embedding.
    known = {(p[0].turn_id, p[2]) for p in plan if _already_recorded(conn, p[0].turn_id, p[2], p[3])}
    # Chat logs repeat themselves ("好的", "晚安"): each distinct text is embedded once.
    distinct = list(dict.fromkeys(p[3] for p in plan if (p[0].turn_id, p[2]) not in known)) if embed else []
    by_text: dict[str, np.ndarray] = {}
    for start in range(0, len(distinct), batch):
        chunk = distinct[start : start + batch]
        by_text.update(zip(chunk, embedder.embed_passages(chunk), strict=True))
        if progress:
            progress(start + len(chunk), len(distinct))
    vectors = [by_text.get(p[3]) for p in plan]
    with transaction(conn):
        return _write_messages(conn, embedder, plan, vectors, now, origin)


def index_life_event(conn: Any, embedder: Embedder, life_event_id: int, now: float,
                     passages: Mapping[str, np.ndarray] | None = None) -> int:
    """The memory row of a TOLD life event (idempotent); an untold event is refused, nothing written.
    `passages` may hold its text's vector, computed by the caller off the DB thread."""
    row = store.life_event(conn, life_event_id)
    if row is None:
        raise InputError(f"life event {life_event_id} does not exist")
    if row["told"] != 1:
        # Untold life never becomes recallable memory; its text is not in this message on purpose.
        raise InputError(f"life event {life_event_id} is untold (told=0); only told life events become memories")
    existing = store.memory_of_life_event(conn, life_event_id)
    if existing is not None:
        return existing
    (vector,) = passage_vectors(embedder, [row["text"]], passages)
    with transaction(conn):
        check_model(conn, embedder, now)
        sal = 0.6
        memory_id = store.insert_life_memory(conn, life_event_id=life_event_id, ts=row["ts"], raw=row["text"],
                                             salience=sal, importance=importance_from_salience(sal), now=now)
        store.insert_fts(conn, memory_id, fts_tokens(row["text"]))
        write_vector(conn, memory_id, vector)
    return int(memory_id)
