"""The sharing channel: POST /v1/share offers zero or one untold life event; POST /v1/share/{id}/receipt makes it told.

The route parses, embeds the offered text off the DB thread and shapes; engine/usecases/share.py
decides, records and receipts (one transaction each) and says why the channel works as it does.
The offer is the one place her untold text leaves the daemon: the privacy projection allows the
`offer.text` field of this route only.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from daemon.api.routes.common import iso, persona_of
from daemon.api.state import ApiState
from engine.usecases.share import Offer, Receipt, offer, offer_text, receipt


def _offer_view(got: Offer) -> dict[str, Any]:
    if got.share_id is None or got.ts is None:
        return {"offer": None, "reason": got.reason}
    body = {"share_id": got.share_id, "text": got.text, "ts": got.ts, "ts_iso": iso(got.ts),
            "expires_at": got.expires_at}
    return {"offer": body, "reason": got.reason}


def _receipt_view(got: Receipt) -> dict[str, Any]:
    return {"share_id": got.share_id, "told": True, "told_at": got.told_at, "turn_id": got.turn_id,
            "memory_id": got.memory_id}


async def post_share(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    now = api.now()
    got: Offer = await api.db(request, offer, api.settings, persona_of(api), body["turn_id"], body.get("query"), now)
    if got.reason == "offered":
        api.ctx.log.info("share.offered", share_id=got.share_id, life_event_id=got.life_event_id,
                         turn_id=body["turn_id"], score=got.score)
    return _offer_view(got)


async def post_receipt(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    share_id = request.match_info["share_id"]
    now = api.now()
    base = api.embedder()
    text = await api.db(request, offer_text, share_id)
    passages = {}
    if text is not None:
        passages[text] = (await api.off_loop(base.embed_passages, [text]))[0]
    got: Receipt = await api.db(request, receipt, base, share_id, body["turn_id"], now, passages)
    if got.created:
        api.ctx.log.info("share.told", share_id=share_id, life_event_id=got.life_event_id,
                         turn_id=body["turn_id"], memory_id=got.memory_id)
    return _receipt_view(got)


ROUTES = [
    ("POST", "/v1/share", post_share),
    ("POST", "/v1/share/{share_id}/receipt", post_receipt),
]
