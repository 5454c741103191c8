"""The context block: re-read each hit's whole source turn, cite it, fit a CJK-aware budget; record it; spot echoes."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Sequence
from typing import Any

from engine.memory.tokens import text_cost
from engine.settings import LifeSettings
from engine.store import memory as store
from engine.times import calendar_date

HEADER = "相关记忆（日期 · 对话）："
SPEAKER = {"user": "用户", "companion": "你"}
ECHO_SHINGLE = 8  # characters in common that make a reply an echo of an injected memory
ECHO_LOOKBACK_S = 86400.0
_CITE = re.compile(r"^\[[^\]]*\] ", re.MULTILINE)
_SQUASH = re.compile(r"[\s\W_]+", re.UNICODE)


def render_item(cite: str, lines: Sequence[tuple[str, str]]) -> str:
    body = " ／ ".join(f"{SPEAKER.get(role, role)}：{' '.join(text.split())}" for role, text in lines)
    return f"[{cite}] {body}"


def turn_messages(conn: Any, turn_ids: Sequence[str], as_of: float) -> dict[str, list[Any]]:
    """Each turn's sent messages (user side first), for all of a block's turns in one statement."""
    if not turn_ids:
        return {}
    out: dict[str, list[Any]] = {}
    for row in store.turns_messages(conn, turn_ids, as_of):
        out.setdefault(row["turn_id"], []).append(row)
    return out


def item_variants(conn: Any, hit: Any, reread: bool, as_of: float,
                  turns: dict[str, list[Any]] | None = None, tz: str = LifeSettings.tz) -> list[str]:
    """The ways one hit can be shown, fullest first: the whole turn, then the hit's own message.

    `turns` holds the re-read turns when the caller read them already (turn_messages); else one query."""
    if hit.source == "fact":
        # A consolidated fact (engine.consolidate.facts_recall): already a cited sentence in the user's words.
        return [f"[{hit.ts[:10] or 'fact'} · 事实] {' '.join(hit.text.split())}"]
    date = calendar_date(hit.ts_unix, tz)  # her zone, whatever offset the front end sent
    if hit.source == "self_life":
        return [render_item(f"{date} · 你的经历", [("life", hit.text)]).replace("life：", "")]
    cite = f"{date} · {hit.turn_id}"
    own = render_item(cite, [(hit.role or "user", hit.text)])
    if not reread or not hit.turn_id:
        return [own]
    rows = turns.get(hit.turn_id, []) if turns is not None else store.turn_messages(conn, hit.turn_id, as_of)
    whole = render_item(cite, [(r["role"], r["text"]) for r in rows]) if rows else own
    return [whole, own] if whole != own else [own]


def build_block(conn: Any, hits: Sequence[Any], budget: int, reread: bool,
                as_of: float, tz: str = LifeSettings.tz) -> tuple[str, list[int], list[int]]:
    """Fit cited items into `budget` (CJK-aware cost); an item goes in whole or not at all.

    Each turn is cited once: a fact (engine.consolidate.facts_recall.FactHit) and the turn it was
    written from say the same thing, so whichever ranks first is shown and the other is skipped
    (a fact whose evidence turns are all shown already adds nothing; a turn a shown fact rests on
    is not repeated). Returns the block, the memory ids and the fact ids it shows.
    """
    if not hits:
        return "", [], []
    used = text_cost(HEADER)
    parts: list[str] = []
    memory_ids: list[int] = []
    fact_ids: list[int] = []
    cited_turns: set[str] = set()
    wanted = [h.turn_id for h in hits if h.source not in ("fact", "self_life") and h.turn_id]
    reread_turns = turn_messages(conn, list(dict.fromkeys(wanted)), as_of) if reread else None
    for hit in hits:
        if hit.source == "fact":
            turns = set(hit.evidence_turn_ids)
            if turns and turns <= cited_turns:
                continue
        else:
            if hit.turn_id and hit.turn_id in cited_turns:
                continue
            turns = {hit.turn_id} if hit.turn_id else set()
        for variant in item_variants(conn, hit, reread, as_of, reread_turns, tz):
            cost = text_cost(variant) + 1  # +1 for the newline
            if used + cost <= budget:
                parts.append(variant)
                if hit.source == "fact":
                    fact_ids.append(hit.fact_id)
                else:
                    memory_ids.append(hit.memory_id)
                cited_turns |= turns
                used += cost
                break
    if not parts:
        return "", [], []
    return HEADER + "\n" + "\n".join(parts), memory_ids, fact_ids


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def record_injection(conn: Any, result: Any, turn_id: str | None, now: float) -> str:
    """Record what was injected into which turn (the anti-loop record); returns the injection id."""
    injection_id = "inj_" + uuid.uuid4().hex[:20]
    store.insert_injection(conn, injection_id=injection_id, ts=now, turn_id=turn_id, query_hash=_hash(result.query),
                           block_hash=_hash(result.context), block_text=result.context,
                           memory_ids=result.context_memory_ids, fact_ids=getattr(result, "fact_ids", []))
    return injection_id


def _shingles(text: str, n: int) -> set[str]:
    squashed = _SQUASH.sub("", text.lower())
    return {squashed[i : i + n] for i in range(len(squashed) - n + 1)}


def _block_body(block: str) -> str:
    """The memory text of a block without its header, citations and speaker labels."""
    body = block.replace(HEADER, "")
    body = _CITE.sub("", body)
    for label in SPEAKER.values():
        body = body.replace(label + "：", " ")
    return body


def echo_injection_id(conn: Any, turn_id: str, text: str, now: float) -> str | None:
    """The injection this reply repeats (>= 8 characters of an injected memory, punctuation ignored), else None."""
    rows = store.injections_for_turn(conn, turn_id)
    if not rows:
        rows = store.recent_injections(conn, now - ECHO_LOOKBACK_S, 5)
    reply = _shingles(text, ECHO_SHINGLE)
    if not reply:
        return None
    for row in rows:
        if reply & _shingles(_block_body(row["block_text"]), ECHO_SHINGLE):
            return str(row["id"])
    return None
