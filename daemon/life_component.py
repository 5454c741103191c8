"""The inner-life part of the daemon: who she is (ctx.persona) and her life resumed after downtime.

Her life's step each beat (mood, energy, activity) is the "life" step of daemon/beat.py, the same in
a directory host; this part only derives her persona and steps her over the gap since her last beat.
"""

from __future__ import annotations

from daemon.companion_beat import summary_line
from daemon.component import DaemonContext
from engine.inner import inner_snapshot, resume_after_gap
from engine.persona import persona_of_companion


async def resume_life(ctx: DaemonContext, now: float) -> None:
    """Her persona on ctx, her life stepped over the gap since `ctx.last_beat_before_start`, her status line."""
    ctx.persona = persona_of_companion(ctx.companion)
    await ctx.store.call(resume_after_gap, ctx.settings, ctx.persona, ctx.last_beat_before_start, now)
    snap = await ctx.store.call(inner_snapshot, ctx.settings, ctx.persona, now)
    ctx.status_summary = summary_line(snap["mood"], snap["activity"]["kind"] if snap["activity"] else None)


class LifeComponent:
    name = "life"

    async def start(self, ctx: DaemonContext) -> None:
        now = ctx.clock.now()
        await resume_life(ctx, now)
        last_beat = ctx.last_beat_before_start
        ctx.log.info("life.resumed", gap_s=round(now - last_beat, 3) if last_beat is not None else None)

    async def stop(self, ctx: DaemonContext) -> None:
        return None


def build(ctx: DaemonContext) -> LifeComponent:
    return LifeComponent()
