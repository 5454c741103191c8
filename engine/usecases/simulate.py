"""A simulated run of her life: beats from a start to a stop on one (scratch) database, chats played at their instants.

`anima simulate` (daemon/cli/cmd_simulate.py) parses, opens a scratch file and reports; the run itself
is here, beside the other use cases, so the transport reaches no engine.store of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import activity as act
from engine.control import Switches
from engine.life import record
from engine.life.state import context
from engine.memory.ingest import TurnInput
from engine.persona import Persona
from engine.settings import Settings
from engine.store import connect, transaction
from engine.store import life as life_store


def run_life(conn: Any, settings: Settings, persona: Persona, start: float, stop: float,
             step_s: float, forecast_next: bool = False,
             turns: list[tuple[float, TurnInput]] | None = None,
             progress: Callable[[int, int], None] | None = None, embedder: Any = None) -> list[dict[str, Any]]:
    """Beat her life from `start` to `stop` every `step_s` seconds; return the trace, read a day at a time.

    Same life as a beat-by-beat run, at a fraction of the cost. A beat at which nothing ends (her activity's
    expected end is still ahead) only relaxes mood and energy in closed form and samples the trace, so such
    beats are done on one in-memory day state (`quiet_beats`) instead of a load-step-save round trip each;
    the next real `step_inner` steps the stored state over the same stretch in one exact closed-form step.
    One transaction per simulated day: a commit per beat was most of a beat's cost. `embedder` checks the
    model of a played chat turn (none is embedded in a run).
    """
    from engine.inner import step_inner
    from engine.usecases.turns import record_turn

    switches = Switches.defaults()   # a simulation runs with every switch on
    chats = list(turns or [])
    trace: list[dict[str, Any]] = []
    t = read_to = start
    cur = life_store.current_activity(conn)   # then step_inner says what she is doing after each step
    while t < stop:
        day_end = t + 86400.0
        with transaction(conn):
            while t < stop and t < day_end:
                due = min(next_end(cur), chats[0][0] if chats else math.inf)
                quiet = []
                # The last beat is always a real step, so the stored state ends at `stop` as before.
                while t < day_end and (beat := min(stop, t + step_s)) < min(due, stop):
                    quiet.append(beat)
                    t = beat
                if quiet and cur is not None:
                    quiet_beats(conn, settings, persona, cur["kind"], quiet)
                if chats and t < day_end and chats[0][0] <= min(stop, t + step_s):
                    at, turn = chats.pop(0)
                    t = max(t, at)
                    step_inner(conn, settings, persona, t, switches, forecast_next=forecast_next, summary=False)
                    record_turn(conn, settings, persona, embedder, turn, t, embed=False, origin="api")
                    cur = life_store.current_activity(conn)
                    continue
                if t < stop and t < day_end:
                    t = min(stop, t + step_s)
                    cur = step_inner(conn, settings, persona, t, switches, forecast_next=forecast_next,
                                     summary=False)["current"]
        # The means come from the run's own samples, read as it goes (a day at a time), so
        # no retention rule of the engine can take a day's points away before they count.
        trace += life_store.trace(conn, read_to, t + 1e-6)
        read_to = t + 1e-6
        if progress is not None:
            progress(math.ceil((t - start) / 86400.0 - 1e-9), math.ceil((stop - start) / 86400.0 - 1e-9))
    return trace


def next_end(cur: dict[str, Any] | None) -> float:
    """When her current activity `cur` is due to end; a beat before it has no transition to make.

    A chat ends by quiet time, not by its expected end, and a missing activity needs a re-plan: both are
    due at once (every beat is a real step), which a simulation without chats never meets.
    """
    if cur is None or cur["kind"] == "chat":
        return -math.inf
    return float(cur["expected_end"])


def quiet_beats(conn: Any, settings: Settings, persona: Persona, kind: str, beats: list[float]) -> None:
    """What step_inner does at beats with no transition: advance mood and energy, sample the trace; state unsaved.

    The one place the simulator reaches past step_inner into the day machine, through its own two calls
    (machine.advance, record.trace), so the samples are exactly the ones a beat-by-beat run writes.
    """
    spec = act.catalogue()[kind]
    ctx = context(settings, persona)
    state, _ = record.load_day(conn, ctx, beats[0])
    record.sample_quiet(conn, ctx, state, beats, spec, kind)


def life_between(conn: Any, since: float, until: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Her activities and life events (told or not: the operator's own run) from `since` to `until`."""
    return life_store.activities(conn, since, until), life_store.life_events(conn, since, until, told_only=False)


def read_kept_run(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """A run kept by `anima simulate --keep`: all her activities, all her life events (told or not) and the
    seed of her world (what world_day needs to rebuild the days she lived), for the checks that read it back."""
    conn = connect(path, readonly=True)
    try:
        rows = life_store.activities(conn, -1e18, 1e18)
        events = life_store.life_events(conn, told_only=False)
        seed = (life_store.get_inner_state(conn) or {}).get("seed_key") or "anima"
    finally:
        conn.close()
    return rows, events, seed
