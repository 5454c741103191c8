"""Using a memory counts: a reply's confirmed context block strengthens the memories it showed, once.

The contract (daemon/api/openapi.json, POST /v1/context and POST /v1/turns): /v1/context hands out
a block and its `injection_id`; that is only what the reply *may* use. The reply's own
`POST /v1/turns` confirms it, either by carrying `injection_id` or, when it carries none, by its
`turn_id` matching the `turn_id` the context was asked for (the newest such block). Confirmation
happens in the turn's transaction, at most once per injection and at most once per turn, so a
replayed turn strengthens nothing more; a block never confirmed strengthens nothing. Reading
(`recall()`, `anima recall`, the benches) never gets here. Only episodes are strengthened: the
block's facts are recorded with it (fact_ids_json) but a fact has no strength to gain.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.errors import ConflictError, InputError
from engine.memory import ranking
from engine.store import memory as store
from engine.store.connect import transaction


@dataclass(frozen=True)
class UseConfirmed:
    injection_id: str | None  # the block this turn's reply used (None: none known, or none given)
    strengthened: int  # memories strengthened by this call (0 on a replay)


def strengthen(conn: Any, memory_ids: Iterable[int], now: float) -> int:
    """recall_count + 1 and a spaced-repetition step in accessibility for each memory; returns how many.

    Called for what a reply used, never for what a recall merely returned: inspection must not
    change what is found next.
    """
    count = 0
    with transaction(conn):
        for memory_id in dict.fromkeys(memory_ids):
            row = store.memory_strength(conn, memory_id)
            if row is None:
                continue
            last = row["last_recalled_at"] or row["ts"]
            gap_days = max(0.0, now - last) / ranking.DAY_S
            strength = ranking.strength_after_recall(row["accessibility"], gap_days)
            if math.isfinite(strength):
                store.bump_recall(conn, memory_id, strength, now)
                count += 1
    return count


def confirm_use(conn: Any, turn_id: str, injection_id: str | None, now: float) -> UseConfirmed:
    """Confirm the block turn `turn_id`'s reply used and strengthen its memories (see the module docstring).

    An `injection_id` that does not exist is an InputError, one already used by another turn a
    ConflictError: raised inside the turn's transaction, so the turn is not recorded either.
    """
    with transaction(conn):
        already = store.injection_used_by_turn(conn, turn_id)
        if already is not None:  # a replay: this turn confirmed its block before
            if injection_id is not None and injection_id != already["id"]:
                raise ConflictError(f"turn {turn_id} already confirmed injection {already['id']}; "
                                    "a reply uses one context block")
            return UseConfirmed(str(already["id"]), 0)
        if injection_id is not None:
            row = store.injection(conn, injection_id)
            if row is None:
                raise InputError(f"turn {turn_id}: injection_id {injection_id!r} was never handed out by "
                                 "/v1/context; send the injection_id of the context this reply used, or none")
            if row["used_at"] is not None:
                raise ConflictError(f"turn {turn_id}: injection {injection_id} was already used by turn "
                                    f"{row['used_turn_id']}; each context block confirms one reply")
        else:
            row = store.newest_injection_for_turn(conn, turn_id)
            if row is None or row["used_at"] is not None:
                return UseConfirmed(None, 0)  # no block was asked for this turn: nothing was used
        memory_ids = store.mark_injection_used(conn, row["id"], turn_id, now)
        if memory_ids is None:
            return UseConfirmed(None, 0)
        return UseConfirmed(str(row["id"]), strengthen(conn, memory_ids, now))
