"""Forget turns: remove their text from every place it lives, in one transaction, then from the file's free pages.

The one exception to "nothing is deleted" (DESIGN section 4). A forgotten turn's text lives in more
places than its two chat_message rows: the memory rows made from them, the FTS5 index (its content
table, and the segment b-trees and vocabulary, where a delete only writes a marker until the
segments are merged), the two vector tables, facts and relational entries that cite them as
evidence (active and superseded alike: bitemporal history holds text too), injection records that
quoted them, share offers made or receipted in the turn, and job scratch. Everything goes in ONE
transaction, with `PRAGMA secure_delete` on so freed cells and pages are zeroed rather than
unlinked; afterwards a TRUNCATE checkpoint copies the WAL into the file and cuts it to zero bytes,
so no old frame still holds a forgotten page.

Derived entries with other evidence survive: the host writes every statement from evidence
(memory/statement.statement_for), so a statement whose sentence came from the forgotten turn is
rewritten from the oldest remaining evidence (with that episode's vector), and an entry that only
the forgotten turn had closed (superseded or lifted) is reopened, as if the turn was never said.

The schema refuses every other delete (migration 0007): the triggers on chat_message, mem_episodic,
mem_semantic and mem_relational let a delete through only while the forget-in-progress marker row
exists, and this transaction sets it first and clears it before it commits. What is recorded is an
event_log row `forget` with turn ids and counts, never text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from engine.errors import InputError, NotFoundError
from engine.memory.statement import sentence_of, statement_for
from engine.settings import LifeSettings
from engine.store import forget as store
from engine.store.connect import transaction
from engine.store.core import events, log_event
from engine.store.facts import write_fact_vector
from engine.store.memory import max_memory_id
from engine.times import calendar_date, sent_date

EVENT_KIND = "forget"
TEXT_SEARCH_MAX_TEXTS = 200


@dataclass(frozen=True)
class Selection:
    """Which turns to forget: one turn id, the turns said in [since, until), or every turn."""

    turn_id: str | None = None
    since: float | None = None
    until: float | None = None
    everything: bool = False

    @property
    def is_bulk(self) -> bool:
        """A range or everything: asked for confirmation, since it may take much at once."""
        return self.turn_id is None

    def describe(self, tz: str | None = None) -> str:
        """For prompts and messages (ids and times only); with `tz`, times as dates in her zone (issue 25: the
        prompt spoke Unix seconds)."""
        if self.turn_id is not None:
            return f"turn {self.turn_id}"
        if self.everything:
            return "every turn"
        if tz is None:
            return f"turns from {self.since} to {self.until} (Unix seconds)"
        start = "the first" if self.since is None or not math.isfinite(self.since) else _local(self.since, tz)
        end = "now" if self.until is None or not math.isfinite(self.until) else f"before {_local(self.until, tz)}"
        return f"turns said from {start} to {end} ({tz})"


def _local(ts: float, tz: str) -> str:
    return datetime.fromtimestamp(ts, ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M:%S")


def selection(turn_id: str | None = None, since: float | None = None, until: float | None = None,
              everything: bool = False) -> Selection:
    """A checked Selection: exactly one of a turn id, a time range (either end may be open), or everything."""
    given = sum([turn_id is not None, since is not None or until is not None, bool(everything)])
    if given != 1:
        raise InputError("say what to forget: one turn id, a time range (since and/or until), or all")
    if turn_id is not None:
        if not isinstance(turn_id, str) or not turn_id.strip() or len(turn_id) > 200:
            raise InputError(f"turn id must be a non-empty string of at most 200 characters, got {turn_id!r}")
        return Selection(turn_id=turn_id)
    if everything:
        return Selection(everything=True)
    low = -math.inf if since is None else float(since)
    high = math.inf if until is None else float(until)
    if math.isnan(low) or math.isnan(high) or low >= high:
        raise InputError(f"the time range to forget is empty: since {since} is not before until {until}")
    return Selection(since=low, until=high)


@dataclass(frozen=True)
class ForgetReport:
    """What one forget removed or changed: ids and counts only (this is what is logged and returned)."""

    turn_ids: tuple[str, ...]
    messages: int = 0
    memories: int = 0
    facts_deleted: int = 0
    facts_rewritten: int = 0
    facts_reopened: int = 0
    relations_deleted: int = 0
    relations_rewritten: int = 0
    relations_reopened: int = 0
    injections: int = 0
    share_offers: int = 0
    jobs_scrubbed: int = 0
    snapshots_removed: int = 0  # nightly snapshots beside her file (engine/usecases/forget.py)
    already_forgotten: bool = False
    wal_truncated: bool = False
    max_memory_id: int = 0  # for the daemon's indexer watermark (ids above it may be reused)

    def counts(self) -> dict[str, int]:
        skip = {"turn_ids", "already_forgotten", "wal_truncated", "max_memory_id"}
        return {k: v for k, v in asdict(self).items() if k not in skip}

    def to_json(self) -> dict[str, Any]:
        return {"turn_ids": list(self.turn_ids), "turns": len(self.turn_ids), **self.counts(),
                "already_forgotten": self.already_forgotten, "wal_truncated": self.wal_truncated}


def forget(conn: Any, chosen: Selection, now: float, *, actor: str = "cli", tz: str = LifeSettings.tz) -> ForgetReport:
    """Forget the selected turns in one transaction, then truncate the WAL; see the module docstring.

    An unknown turn id raises NotFoundError; a turn forgotten before reports already_forgotten and
    changes nothing (idempotent). A range that holds no turn changes nothing either.
    """
    previous = store.secure_delete_state(conn)
    store.secure_delete_on(conn)
    try:
        with transaction(conn):
            turn_ids = _selected_turns(conn, chosen)
            if turn_ids:
                report = _forget_in_transaction(conn, turn_ids, now, actor, tz)
            else:
                report = ForgetReport(turn_ids=(), already_forgotten=chosen.turn_id is not None,
                                      max_memory_id=max_memory_id(conn))
    finally:
        store.restore_secure_delete(conn, previous)
    # Also when nothing was left to forget: a forget whose truncation a reader blocked is finished by
    # running it again (the WAL's old frames, beyond where it restarts, would otherwise linger).
    return replace(report, wal_truncated=store.truncate_wal(conn))


def _selected_turns(conn: Any, chosen: Selection) -> list[str]:
    """The turn ids to forget, read inside the write transaction (a turn arriving meanwhile is not half-seen)."""
    if chosen.turn_id is not None:
        if store.turn_exists(conn, chosen.turn_id):
            return [chosen.turn_id]
        if _was_forgotten(conn, chosen.turn_id):
            return []
        raise NotFoundError(f"no turn {chosen.turn_id!r} in this database, and none forgotten by that id; "
                            "nothing changed (check the turn id the front end sent)")
    if chosen.everything:
        return store.all_turn_ids(conn)
    return store.turn_ids_between(conn, chosen.since, chosen.until)  # None: an open end (selection() says so)


def _was_forgotten(conn: Any, turn_id: str) -> bool:
    return any(turn_id in event["detail"].get("turn_ids", ()) for event in events(conn, EVENT_KIND))


def _forget_in_transaction(conn: Any, turn_ids: Sequence[str], now: float, actor: str, tz: str) -> ForgetReport:
    store.set_marker(conn, now)
    messages = store.messages_of_turns(conn, turn_ids)
    message_ids = [int(m["id"]) for m in messages]
    texts = sorted({m["text"] for m in messages})
    memory_ids = store.memories_of_messages(conn, message_ids)
    gone = set(memory_ids)
    facts = _forget_facts(conn, gone, tz)
    relations = _forget_relations(conn, gone, tz)
    # A block cites its memories and facts by id, and those ids catch every block that quoted the turns.
    # The text search is insurance for small forgets only: it costs (injections x texts) instr() calls.
    quoted = texts if len(texts) <= TEXT_SEARCH_MAX_TEXTS else []
    injections = store.delete_injections(conn, turn_ids=turn_ids, memory_ids=memory_ids, fact_ids=facts["affected"],
                                         texts=quoted)
    offers = store.delete_offers(conn, turn_ids)
    store.unlink_told_turn(conn, turn_ids)
    jobs = _scrub_jobs(conn, _needles(texts))
    store.delete_memories(conn, memory_ids, message_ids)
    report = ForgetReport(
        turn_ids=tuple(turn_ids), messages=len(message_ids), memories=len(memory_ids),
        facts_deleted=len(facts["deleted"]), facts_rewritten=len(facts["rewritten"]),
        facts_reopened=len(facts["reopened"]), relations_deleted=len(relations["deleted"]),
        relations_rewritten=len(relations["rewritten"]), relations_reopened=len(relations["reopened"]),
        injections=injections, share_offers=offers, jobs_scrubbed=jobs, max_memory_id=max_memory_id(conn))
    log_event(conn, now, EVENT_KIND, actor=actor, turn_ids=list(turn_ids), **report.counts())
    store.clear_marker(conn)
    return report


def _needles(texts: Sequence[str]) -> list[str]:
    """Each text as it may sit inside stored JSON: raw, and JSON-escaped both ways (ASCII-escaped or not)."""
    found: set[str] = set()
    for text in texts:
        found.add(text)
        found.add(json.dumps(text, ensure_ascii=False)[1:-1])
        found.add(json.dumps(text, ensure_ascii=True)[1:-1])
    return sorted(t for t in found if t.strip())


class _Holds:
    """Does a stored value contain any needle? Needles sorted by length, each distinct value checked once:
    job rows repeat the same few payloads and details, so --all over a long history stays seconds, where
    a SQL instr() per (row, needle) pair was billions of calls."""

    def __init__(self, needles: Sequence[str]):
        self.needles = sorted(needles, key=len)
        self.seen: dict[str, bool] = {}

    def __call__(self, value: str | None) -> bool:
        if not value or not self.needles or len(value) < len(self.needles[0]):
            return False
        if value not in self.seen:
            self.seen[value] = any(n in value for n in self._fitting(len(value)))
        return self.seen[value]

    def _fitting(self, size: int) -> Any:
        for needle in self.needles:
            if len(needle) > size:
                return
            yield needle


def _scrub_jobs(conn: Any, needles: Sequence[str]) -> int:
    """Empty job payload/scratch/result/error and job_event details that hold a forgotten text; the jobs changed."""
    holds = _Holds(needles)
    changed = 0
    for row in store.job_texts(conn):
        fields = {"payload_json": row["payload_json"], "scratch_json": row["scratch_json"],
                  "result_json": row["result_json"], "error": row["error"]}
        hit = {k for k, v in fields.items() if holds(v)}
        if not hit:
            continue
        scrubbed = {"payload_json": "{}", "scratch_json": "{}", "result_json": None, "error": "scrubbed by anima forget"}
        store.scrub_job(conn, row["id"], {k: scrubbed[k] if k in hit else v for k, v in fields.items()})
        changed += 1
    for event in store.job_event_texts(conn):
        if holds(event["detail_json"]):
            store.scrub_job_event(conn, event["id"])
    return changed


def _remaining_episodes(conn: Any, evidence: Sequence[int], gone: set[int]) -> list[Any]:
    left = [i for i in evidence if i not in gone]
    if not left:
        return []
    return store.evidence_episodes(conn, left)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _rewritten(statement: str, subject: str, episodes: Sequence[Any], tz: str) -> tuple[str, int | None]:
    """(statement, source memory id): kept when a remaining episode is its source (same sentence, same date),
    else written from the oldest remaining one the way consolidation writes it (date + sentence, nothing else).

    The date counts: "2026-07-22 用户说：…" kept on a later restatement would still date the forgotten turn."""
    sentence = _squash(sentence_of(statement))
    if any(sentence == _squash(e["raw"]) and statement.startswith(_dates_of(e, tz)) for e in episodes):
        return statement, None
    source = episodes[0]
    return statement_for(subject, calendar_date(source["ts"], tz), source["raw"].strip()), int(source["id"])


def _dates_of(episode: Any, tz: str) -> tuple[str, ...]:
    """The dates a statement written from this episode may start with: her zone's (now), the sent offset's
    (statements consolidated before issue 25)."""
    sent = sent_date(episode["ts_iso"])
    return (calendar_date(episode["ts"], tz),) + ((sent,) if sent else ())


def _forget_facts(conn: Any, gone: set[int], tz: str) -> dict[str, list[int]]:
    """Facts citing forgotten memories: deleted when that was all their evidence, else rewritten from the rest."""
    out: dict[str, list[int]] = {"deleted": [], "rewritten": [], "reopened": [], "affected": []}
    if not gone:
        return out
    for row in store.facts_citing(conn, sorted(gone)):
        out["affected"].append(int(row["id"]))
        episodes = _remaining_episodes(conn, json.loads(row["evidence_json"]), gone)
        if not episodes:
            out["deleted"].append(int(row["id"]))
            continue
        statement, source = _rewritten(row["statement"], row["subject"], episodes, tz)
        store.rewrite_fact(conn, int(row["id"]), statement, [int(e["id"]) for e in episodes])
        if source is not None:
            _replace_fact_vector(conn, int(row["id"]), source)
        out["rewritten"].append(int(row["id"]))
    deleted = out["deleted"]
    for fact_id in deleted:  # no forgotten fact may still be pointed at (foreign key) when it is deleted
        store.repoint_fact(conn, fact_id, None)
    for fact_id in deleted:
        for ref in store.facts_superseded_by(conn, fact_id):
            successor = store.active_fact_of_key(conn, ref["key"], deleted)
            if successor is not None and successor != ref["id"]:
                store.repoint_fact(conn, int(ref["id"]), successor)
            else:
                store.reopen_fact(conn, int(ref["id"]))
                out["reopened"].append(int(ref["id"]))
    for fact_id in deleted:
        store.delete_fact(conn, fact_id)
    return out


def _replace_fact_vector(conn: Any, fact_id: int, memory_id: int) -> None:
    """A rewritten fact takes its new sentence's passage vector (consolidation's own choice), or none until
    consolidation embeds it again; the old vector was the forgotten sentence's."""
    model = store.fact_vector_model(conn, fact_id)
    vector = store.episode_vector(conn, memory_id)
    store.delete_fact_vector(conn, fact_id)
    if vector is not None and model is not None:
        write_fact_vector(conn, fact_id, model, vector)


def _forget_relations(conn: Any, gone: set[int], tz: str) -> dict[str, list[int]]:
    """Relational entries citing forgotten memories: deleted, rewritten, or reopened when only it ended them."""
    out: dict[str, list[int]] = {"deleted": [], "rewritten": [], "reopened": []}
    if not gone:
        return out
    for row in store.relations_citing(conn, sorted(gone)):
        episodes = _remaining_episodes(conn, json.loads(row["evidence_json"]), gone)
        if not episodes:
            out["deleted"].append(int(row["id"]))
            continue
        ended_before = json.loads(row["ended_evidence_json"]) if row["ended_evidence_json"] else []
        ended = [i for i in ended_before if i not in gone]
        statement, _ = _rewritten(row["statement"], "user", episodes, tz)
        store.rewrite_relation(conn, int(row["id"]), statement, [int(e["id"]) for e in episodes], ended)
        if ended_before and not ended and row["status"] == "superseded" and row["superseded_by"] is None:
            store.reopen_relation(conn, int(row["id"]))  # the lift itself is forgotten
            out["reopened"].append(int(row["id"]))
        else:
            out["rewritten"].append(int(row["id"]))
    deleted = out["deleted"]
    for rel_id in deleted:
        store.unlink_relation(conn, rel_id)
    for rel_id in deleted:
        for ref_id in store.relations_superseded_by(conn, rel_id):
            store.reopen_relation(conn, ref_id)
            out["reopened"].append(ref_id)
    for rel_id in deleted:
        store.delete_relation(conn, rel_id)
    return out
