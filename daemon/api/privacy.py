"""The privacy projection: the one function every API response body passes through on its way out.

Her untold life (life_event.told = 0) may leave the daemon in exactly one place: the `offer.text`
field of a POST /v1/share response. `project()` serialises the body, blanks that one field when
the route allows it, and scans the rest for every untold text (as it appears inside a JSON
string, and its first 16 characters, so a truncated copy is caught too). A hit means a bug
upstream: the response is replaced by a 500 without the text and `privacy.blocked` is logged with
life event ids only. The one exception is text the user has already seen: when the hit also
occurs in a recorded chat message (she said it in a reply before the receipt arrived), it is not
secret any more and the body passes.

The scan must not be an oracle: a caller who sends a guess (a context query, a turn's text, a junk
value echoed in a 400 message) would otherwise learn from a 500 that the guess is her secret. So a
needle the caller itself sent is not a leak when it comes back: `find_leaks` excuses exactly the
needles (full text, 16-character prefix, or short exact value) that occur in the request's own strings.
Needles the caller did not send are still caught, so a caller who sends only the prefix and gets the
whole text back is still blocked. The real protection is upstream (the source gate in recall, told-only
reads); this scan is the last line and stays strict for everything the caller did not already have.

The untold texts are cached and re-read only when the untold set changes (a cheap fingerprint
query on the indexed `told` column runs per response). Job scratch is private by construction:
no route reads the `job` table except as counts; the property test in tests/test_api_privacy.py
plants canaries there too.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from engine.usecases import untold as untold_reads

PREFIX_CHARS = 16  # a truncated copy of at least this many leading characters still counts as a leak
MIN_SCAN_CHARS = 4  # shorter texts ("散步") are matched only as whole JSON string values
HEAD = MIN_SCAN_CHARS  # needles are indexed by this many leading characters


@dataclass
class UntoldIndex:
    """The untold texts as needles to look for in serialised JSON, keyed by life event id."""

    fingerprint: tuple[Any, ...] = ()
    needles: list[tuple[int, str]] = field(default_factory=list)  # (life_event_id, escaped needle)
    exact: dict[str, int] = field(default_factory=dict)  # short texts, matched as whole string values
    by_head: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # needles by first HEAD characters

    def __post_init__(self) -> None:
        if self.needles and not self.by_head:
            for event_id, needle in self.needles:
                self.by_head.setdefault(needle[:HEAD], []).append((event_id, needle))

    def needles_in(self, text: str) -> set[tuple[int, str]]:
        """(id, needle) pairs occurring in `text`: only needles whose first HEAD characters occur are tried,
        so a year of untold life (thousands of needles) costs about one pass over the body."""
        heads = {text[i:i + HEAD] for i in range(len(text) - HEAD + 1)} & self.by_head.keys()
        return {(event_id, needle) for head in heads for event_id, needle in self.by_head[head] if needle in text}


def _escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def load_untold(conn: Any, index: UntoldIndex) -> UntoldIndex:
    """Refresh `index` from the database when the untold set changed (runs on the DB thread)."""
    fingerprint = untold_reads.untold_fingerprint(conn)
    if fingerprint == index.fingerprint:
        return index
    needles: list[tuple[int, str]] = []
    exact: dict[str, int] = {}
    for event_id, raw in untold_reads.untold_texts(conn):
        text = raw.strip()
        if not text:
            continue
        if len(text) < MIN_SCAN_CHARS:
            exact[text] = event_id
            continue
        needles.append((event_id, _escaped(text)))
        if len(text) > PREFIX_CHARS:
            needles.append((event_id, _escaped(text[:PREFIX_CHARS])))
    return UntoldIndex(fingerprint, needles, exact)


def _string_values(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item.strip())
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def caller_strings(*values: Any) -> tuple[str, ...]:
    """Every string in what the caller sent (body values and keys, query and path values), for `find_leaks`."""
    return tuple(s for s in _string_values(list(values)) if s)


def find_leaks(body: Any, index: UntoldIndex, *, allow_offer_text: bool = False,
               sent: tuple[str, ...] = ()) -> tuple[bytes, list[int]]:
    """Serialise `body`; return (bytes, ids of untold events found outside the allowed field).

    `sent` are the caller's own strings (caller_strings): a needle occurring in them is the caller's
    own words coming back, not a leak (see the module docstring: no oracle).
    """
    scanned = body
    if allow_offer_text and isinstance(body, dict) and isinstance(body.get("offer"), dict):
        scanned = copy.copy(body)
        scanned["offer"] = {**body["offer"], "text": ""}
    text = json.dumps(scanned, ensure_ascii=False)
    found = index.needles_in(text)
    if found and sent:
        found -= index.needles_in("\x00".join(_escaped(s) for s in sent))
    hits = sorted({event_id for event_id, _ in found})
    if index.exact:
        own = set(sent)
        hits += sorted({index.exact[s] for s in _string_values(scanned) if s in index.exact and s not in own}
                       - set(hits))
    encoded = json.dumps(body, ensure_ascii=False).encode("utf-8") if scanned is not body else text.encode("utf-8")
    return encoded, hits


def said_in_chat(conn: Any, life_event_ids: list[int]) -> bool:
    """True when every hit's text (or its leading part) was already said in a recorded chat message."""
    return all(untold_reads.said_in_chat(conn, event_id, PREFIX_CHARS) for event_id in life_event_ids)
