"""The inner-life part of the daemon: resumes her after downtime, then steps mood, energy and activity each beat."""

from __future__ import annotations

from typing import Any

from daemon.component import DaemonContext
from engine.inner import inner_snapshot, resume_after_gap, step_inner
from engine.persona import Persona, persona_of_companion


class LifeComponent:
    name = "life"

    def __init__(self) -> None:
        self.persona: Persona | None = None
        self._summary = ""

    async def start(self, ctx: DaemonContext) -> None:
        self.persona = persona_of_companion(ctx.companion)
        ctx.services["persona"] = self.persona
        last_beat = ctx.services.get("last_beat_before_start")
        now = ctx.clock.now()
        await ctx.store.call(resume_after_gap, ctx.settings, self.persona, last_beat, now)
        ctx.log.info("life.resumed", gap_s=round(now - last_beat, 3) if last_beat is not None else None)
        ctx.services["status_summary"] = lambda: self._summary
        await self._refresh_summary(ctx, now)

    async def beat(self, ctx: DaemonContext, now: float, dt: float) -> None:
        if ctx.companion is None:
            return
        if ctx.services.get("persona") is not self.persona:  # someone re-derived it (e.g. after SIGHUP)
            self.persona = ctx.services.get("persona")
        result = await ctx.store.call(step_inner, ctx.settings, self.persona, now, ctx.switches)
        if result["backwards"]:
            ctx.log.warning("clock.backwards", part="life")
        if result["transitions"]:
            ctx.log.info("life.transition", activity=result["activity"], transitions=result["transitions"],
                         life_events=result["life_events"])
        self._summarise(result["mood"], result["activity"])  # the state the step just computed: no second read

    async def _refresh_summary(self, ctx: DaemonContext, now: float) -> None:
        snap = await ctx.store.call(inner_snapshot, ctx.settings, self.persona, now)
        self._summarise(snap["mood"], snap["activity"]["kind"] if snap["activity"] else None)

    def _summarise(self, mood: dict[str, Any], activity: str | None) -> None:
        self._summary = f"mood {mood['label']} energy {mood['e']:.2f} doing {activity or '-'}"

    async def stop(self, ctx: DaemonContext) -> None:
        return None


def build(ctx: DaemonContext) -> LifeComponent:
    return LifeComponent()
