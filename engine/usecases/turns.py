"""Record a chat turn: messages and memories, the used context block confirmed, her mood and activity, in one transaction.

The acknowledged write is the chat text (messages, memories, FTS); vectors are written only when
`embed` is true (the caller computed them off the DB thread), else left to the memory indexer
(engine/memory/ingest.py says why). The turn also confirms the context block its reply used (its
`injection_id`, or the block asked for this turn_id): only then are those memories strengthened
(engine/memory/usage.py). New text moves her (appraisal) and interrupts what she was doing; a
replay of a recorded turn confirms a late block but moves nothing twice.

Switches are read once, at the start of the transaction, and decide every step of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine import inner
from engine.memory.ingest import TurnInput
from engine.memory.ingest import record_turn as write_turn
from engine.memory.usage import UseConfirmed, confirm_use
from engine.persona import Persona
from engine.settings import Settings
from engine.store import transaction
from engine.store.api import turn_roles
from engine.store.core import read_switches


@dataclass(frozen=True)
class TurnRecorded:
    turn_id: str
    created: bool  # False: every message of the turn was already recorded (a replay)
    memory_ids: tuple[int, ...]
    message_ids: tuple[int, ...]
    mood: dict[str, Any]  # her mood after the turn (v, a, d, e, label)
    interrupted: bool  # her activity was suspended (or her chat extended) for this turn
    use: UseConfirmed  # the context block this turn's reply used, and how many memories it strengthened


def record_turn(conn: Any, settings: Settings, persona: Persona | None, embedder: Any, turn: TurnInput, now: float,
                *, embed: bool = True, injection_id: str | None = None, origin: str = "api",
                passages: Mapping[str, Any] | None = None) -> TurnRecorded:
    """One transaction: messages, memories, the used block confirmed, and (for new text) appraisal and interruption.

    With `embed`, `passages` should hold the vectors of the turn's texts (computed off the DB thread): the
    model must not run while this transaction holds the write lock. `embedder` is the real one (its name
    is checked against the stored model).
    """
    with transaction(conn):
        switches = read_switches(conn)
        seen = turn_roles(conn, turn.turn_id)
        new_user = turn.user if turn.user and turn.user.strip() and "user" not in seen else None
        new_companion = turn.companion if turn.companion and turn.companion.strip() and "companion" not in seen else None
        written = write_turn(conn, embedder, turn, now, origin=origin, max_text_chars=settings.memory.max_text_chars,
                             embed=embed, passages=passages)
        # Before the replay check: a replay confirms nothing twice, but a first confirmation may come late.
        use = confirm_use(conn, turn.turn_id, injection_id, now)
        mood: dict[str, Any] | None = None
        interrupted = False
        if new_user is not None or new_companion is not None:  # else a replay: the turn already moved her
            if switches.appraisal:
                mood = inner.appraise_turn(conn, settings, persona, new_user, new_companion, turn.affect, now,
                                           switches)
            if switches.life:
                inner.interrupt_for_chat(conn, turn.turn_id, now, quiet_after_chat_s=settings.life.quiet_after_chat_s,
                                        switches=switches)
                interrupted = True
        if mood is None:
            mood = inner.inner_snapshot(conn, settings, persona, now, switches)["mood"]
    return TurnRecorded(turn_id=turn.turn_id, created=written.created, memory_ids=tuple(written.memory_ids),
                        message_ids=tuple(written.message_ids), mood=mood, interrupted=interrupted, use=use)
