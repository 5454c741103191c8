"""The told rule: an offered life event becomes told only if her reply actually tells it (pure).

Offering an event to the model is not telling it: the model may leave it out. The reply tells the event
when it carries enough of the event's content: the share of the event's key character pairs (CJK bigrams
and ASCII words, after dropping function characters like 的/了/我) that also occur in the reply reaches
[chat] told_min_overlap (0.4 by default). A paraphrase that keeps the content words passes; a reply about
something else, or one that only shares a word or two (我今天……), does not. Tested both ways in
tests/test_chat_told.py.
"""

from __future__ import annotations

import re

# Characters that carry grammar, not content: a pair made only of these says nothing about the event.
FUNCTION_CHARS = frozenset("的了着过是在我你他她它们个这那就也都还和与及把被对给很有没不吗呢吧啊呀哦嗯一")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_ASCII_WORD = re.compile(r"[a-z0-9]{2,}")


def key_pairs(text: str) -> frozenset[str]:
    """The event's content: CJK character bigrams with at least one content character, and ASCII words."""
    lowered = text.lower()
    pairs: set[str] = set(_ASCII_WORD.findall(lowered))
    for run in _CJK_RUN.findall(lowered):
        for i in range(len(run) - 1):
            pair = run[i:i + 2]
            if not (pair[0] in FUNCTION_CHARS and pair[1] in FUNCTION_CHARS):
                pairs.add(pair)
    return frozenset(pairs)


def overlap(event_text: str, reply: str) -> float:
    """Share of the event's key pairs the reply contains (0 when the event has none)."""
    event = key_pairs(event_text)
    if not event:
        return 0.0
    return len(event & key_pairs(reply)) / len(event)


def reply_tells(event_text: str, reply: str, min_overlap: float) -> bool:
    return overlap(event_text, reply) >= min_overlap
