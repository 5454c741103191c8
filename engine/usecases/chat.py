"""A chat reply's two steps around the model call: prepare (her prompt and the offer) and finish (record the turn).

`prepare_chat` runs before the upstream call, in one transaction: which turn this conversation is (a
digest of the user id and the messages so far; the same conversation sent again within [chat]
repeat_window_s is the same turn), the context for its last user message (the same build_context as
POST /v1/context: recall, the injection record, her state, the relationship), at most one offer of her
untold day (the same policy as POST /v1/share), how she feels once she has read the message (appraised in a
savepoint that is rolled back), and her system prompt. Nothing of the conversation is written here.

`finish_chat` runs after the whole reply arrived, in one transaction: the turn (the last user message and
her reply) through the same record_turn as POST /v1/turns (appraisal, interruption, the mood push, the
context block confirmed), and, when the prompt offered an event and the reply tells it
(engine/chat/told.py), the receipt that makes it told. A failed or abandoned reply never reaches it:
nothing is recorded and the offer expires untold.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine import inner
from engine.chat import feelings
from engine.chat.prompt import PromptFacts, compose
from engine.chat.request import ChatMessage, ChatRequest
from engine.chat.told import reply_tells
from engine.life.catalogue import catalogue
from engine.memory.ingest import TurnInput
from engine.memory.recall import query_lines
from engine.persona import Persona
from engine.settings import Settings
from engine.store import transaction
from engine.store.api import chat_turn_latest, turn_recorded
from engine.store.core import read_switches
from engine.usecases import share
from engine.usecases.context import ContextBuilt, build_context
from engine.usecases.turns import TurnRecorded, record_turn

SHORT_QUERY_CHARS = 12  # a last message this short ("真的吗？") is read with the turn before it
FOLLOW_UP = "嗯"  # a short next message stands in for the one not sent yet (next_lines)


@dataclass(frozen=True)
class PreparedChat:
    turn_id: str
    repeat: bool  # this conversation was recorded within the repeat window: finish records nothing
    system_prompt: str
    injection_id: str | None
    share_id: str | None  # the offer her prompt carries (None: nothing offered, or trimmed by the budget)
    offer_text: str | None  # untold text: only in her prompt, and compared with her reply
    life_event_id: int | None
    context: ContextBuilt


@dataclass(frozen=True)
class ChatFinished:
    turn: TurnRecorded | None  # None: a repeat, nothing recorded
    told_life_event_id: int | None


def conversation_id(user: str | None, messages: tuple[ChatMessage, ...]) -> str:
    """The turn id base of a conversation: a digest of the end user and every message so far (no text kept)."""
    canon = json.dumps([user or "", [[m.role, m.content] for m in messages]], ensure_ascii=False,
                       separators=(",", ":"))
    return "chat-" + hashlib.sha256(canon.encode("utf-8")).hexdigest()[:32]


def recall_query(dialogue: list[ChatMessage]) -> str:
    """The recall query: the last user message, with the turn before it when it is short ("真的吗？")."""
    last = dialogue[-1].content.strip()
    if len(last) >= SHORT_QUERY_CHARS or len(dialogue) < 2:
        return last
    before = [m.content.strip() for m in dialogue[-3:-1] if m.content.strip()]
    return "\n".join([*before, last])


def next_lines(user_text: str, reply: str) -> list[str]:
    """The lines a short next message's recall query holds before that message's own line.

    recall_query and query_lines applied to this exchange followed by a stand-in short message, less the
    stand-in's line: the API embeds these after a reply, so that a follow-up like 真的吗？ finds them held.
    """
    query = recall_query([ChatMessage("user", user_text), ChatMessage("assistant", reply), ChatMessage("user", FOLLOW_UP)])
    return query_lines(query)[:-1]


def turn_for(conn: Any, base: str, now: float, window_s: float) -> tuple[str, bool]:
    """(turn id, repeat): the newest turn of this conversation when recorded within `window_s`, else a new id."""
    latest = chat_turn_latest(conn, base)
    if latest is None:
        return base, False
    turn_id, at = latest
    if now - at <= window_s:
        return turn_id, True
    suffix = turn_id[len(base) + 1:] if turn_id != base else "1"
    number = int(suffix) + 1 if suffix.isdigit() else 2
    return f"{base}-{number}", False


def feeling_after(conn: Any, settings: Settings, persona: Persona | None, user_text: str, now: float
                  ) -> dict[str, Any] | None:
    """Her mood once she has read `user_text`, without keeping it: the message is appraised inside a savepoint
    that is rolled back (finish_chat records the turn, and with it the same push, only when the reply is
    complete). None when appraisal is switched off: then her mood as it is."""
    switches = read_switches(conn)
    if not switches.appraisal:
        return None
    conn.execute("SAVEPOINT chat_feeling_after")
    try:
        return inner.appraise_turn(conn, settings, persona, user_text, None, None, now, switches)
    finally:
        conn.execute("ROLLBACK TO chat_feeling_after")
        conn.execute("RELEASE chat_feeling_after")


def _facts(built: ContextBuilt, name: str, persona: Persona | None, offer_text: str | None,
           mood_after: dict[str, Any] | None) -> PromptFacts:
    snapshot = built.snapshot
    mood = mood_after or snapshot["mood"]
    activity = snapshot.get("activity") or None
    spec = catalogue().get(activity["kind"]) if activity else None
    woke = bool(spec is not None and spec.asleep)
    # Already chatting (an earlier turn interrupted her): no activity line. A `why` that is an internal code
    # ("chat", "plan") says nothing to her; a Chinese reason does.
    chatting = activity is not None and activity.get("kind") == "chat"
    why = str(activity.get("why") or "") if activity else ""
    why = why if re.search(r"[\u4e00-\u9fff]", why) else ""
    entries = []
    for entry in built.relationship:
        statement = str(entry.get("statement", "")).strip()
        if statement:
            entries.append(f"禁忌（一定要遵守）：{statement}" if entry.get("kind") == "taboo" else statement)
    return PromptFacts(
        name=name or "她", persona=feelings.persona_words(persona),
        mood_words="、".join(feelings.mood_words(mood)), mood_cause=feelings.mood_cause(mood),
        energy_words=feelings.energy_words(float(snapshot.get("energy", mood.get("e", 0.5)))),
        activity=None if activity is None or woke or chatting else str(activity.get("label") or ""),
        activity_why=f"（{why}）" if why and len(why) <= 40 else "",
        woke=woke, memories=[line for line in built.result.context.splitlines() if line.strip()],
        relationship=entries, offer=offer_text)


def prepare_chat(conn: Any, settings: Settings, persona: Persona | None, embedder: Any, request: ChatRequest,
                 name: str, parts: dict[str, str], query_vecs: Mapping[str, Any] | None, now: float,
                 fresh: tuple[list[int], Any] | None = None) -> PreparedChat:
    """One transaction: the turn, the context of its last user message, at most one offer, her system prompt."""
    query = recall_query(request.dialogue())
    with transaction(conn):
        turn_id, repeat = turn_for(conn, conversation_id(request.user, request.messages), now,
                                   settings.chat.repeat_window_s)
        built = build_context(conn, settings, persona, embedder, query, None, None if repeat else turn_id,
                              query_vecs, now, fresh)
        mood_after = None if repeat else feeling_after(conn, settings, persona, request.last_user, now)
        # She decides whether to bring up her day as she feels after reading the message (not in the mood
        # to chat about her sketch right after the user's bad news).
        offered = None if repeat else share.offer(conn, settings, persona, turn_id, query, now, mood_after)
        offer_text = offered.text if offered is not None and offered.share_id is not None else None
        prompt, kept = compose(parts, _facts(built, name, persona, offer_text, mood_after),
                               settings.chat.prompt_budget_chars)
    if offered is None or offered.share_id is None or not kept:
        return PreparedChat(turn_id, repeat, prompt, built.injection_id, None, None, None, built)
    return PreparedChat(turn_id, repeat, prompt, built.injection_id, offered.share_id, offered.text,
                        offered.life_event_id, built)


def finish_chat(conn: Any, settings: Settings, persona: Persona | None, embedder: Any, prepared: PreparedChat,
                user_text: str, reply: str, ts_iso: str, now: float, *, embed: bool,
                passages: Mapping[str, Any] | None = None) -> ChatFinished:
    """One transaction: the turn recorded as POST /v1/turns records it, and the offer told if the reply tells it."""
    with transaction(conn):
        if prepared.repeat or turn_recorded(conn, prepared.turn_id):
            return ChatFinished(None, None)
        turn = TurnInput(turn_id=prepared.turn_id, user=user_text, companion=reply or None, ts_iso=ts_iso)
        done = record_turn(conn, settings, persona, embedder, turn, now, embed=embed,
                           injection_id=prepared.injection_id, origin="chat", passages=passages)
        told = None
        if (prepared.share_id is not None and prepared.offer_text
                and reply_tells(prepared.offer_text, reply, settings.chat.told_min_overlap)):
            told = share.receipt(conn, embedder, prepared.share_id, prepared.turn_id, now, passages).life_event_id
    return ChatFinished(done, told)
