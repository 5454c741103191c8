"""Appraisal of a chat turn: the push (dV, dA, dD) one turn gives her mood, and its bound.

The caller's `affect` (its own model's reading of the turn, engine/appraisal/affect.py) wins when
given; otherwise the user's words are read for events and whom they happen to
(engine/appraisal/events.py), so that the user's misfortune moves her toward concern and not toward
a loss of her own. Her own reply is not appraised: it is her reaction to what she was told, which
the user's words already carry (reading it again would count "别难过" as her own sadness).
engine/appraisal/bound.py keeps one turn's effect within a share of her natural range.
"""

from __future__ import annotations

from typing import Any

from engine.appraisal.affect import Push, affect_push
from engine.appraisal.bound import TURN_SHARE, bounded_delta, turn_bound
from engine.appraisal.events import classify, read_events, text_push

__all__ = ["TURN_SHARE", "Push", "affect_push", "appraise", "bounded_delta", "classify", "read_events",
           "text_push", "turn_bound"]


def appraise(user_text: str | None, companion_text: str | None, affect: dict[str, Any] | None) -> Push:
    """The turn's push on her mood, before gain, the negativity weight and the turn bound."""
    del companion_text  # kept in the signature: the front end sends it, see the module docstring
    if affect is not None:
        return affect_push(affect)
    return text_push(user_text)
