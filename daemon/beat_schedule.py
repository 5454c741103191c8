"""When each companion of a many-companion host beats next: in groups, one a second, spread evenly over one interval.

A thousand companions beating every 60 s must not beat in one burst (one loop, one CPU), nor one by one:
a beat that finds the CPU asleep (caches cold, a virtual CPU halted between beats 60 ms apart) costs
2.5 times one that follows another (1.9 ms against 0.77 ms of CPU, measured with the same 1,000 files:
bench/many.py's note). So phases sit on a grid of GROUP_S: the companions sharing a second beat
together, back to back on the host's beat lane (daemon/beat_lane.py), and the seconds are filled
evenly (1,000 at 60 s: ~17 a second).
A newcomer joins the least crowded second, in the middle of the widest run of such seconds; a heap
orders the next beats so finding the due ones costs nothing per companion.
"""

from __future__ import annotations

import heapq
from itertools import groupby

GROUP_S = 1.0  # beats due within one second of each other run together (a grid step, never above the interval)


def grid_of(interval_s: float) -> tuple[float, int]:
    """(grid step, slots per interval): GROUP_S, or the whole interval when it is shorter (one group)."""
    slots = max(1, int(interval_s / GROUP_S + 1e-9))
    return interval_s / slots, slots


def spread_phases(count: int, interval_s: float) -> list[float]:
    """`count` beat phases evenly over one interval, each on the grid: 1,000 companions at 60 s, ~17 a second."""
    step, slots = grid_of(interval_s)
    return [(i * slots // count) * step for i in range(count)] if count else []


def gap_phase(phases: list[float], interval_s: float) -> float:
    """The phase for one more companion: the least crowded grid slot, in the middle of the widest run of them."""
    if not phases:
        return 0.0
    step, slots = grid_of(interval_s)
    counts = [0] * slots
    for p in phases:
        counts[int((p % interval_s) / step + 1e-9) % slots] += 1
    least = min(counts)
    start = next((i for i, c in enumerate(counts) if c != least), 0)  # go round once from a crowded slot
    best_start, best_len, pos = 0, 0, start
    for is_least, run in groupby(counts[start:] + counts[:start], key=lambda c: c == least):
        length = len(list(run))
        if is_least and length > best_len:
            best_start, best_len = pos, length
        pos += length
    return ((best_start + best_len // 2) % slots) * step


class BeatSchedule:
    """When each companion beats next (monotonic seconds): a heap, so finding the due ones costs nothing per companion."""

    def __init__(self, interval_s: float, epoch: float):
        self.interval_s = interval_s
        self.epoch = epoch
        self.phase: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []
        self._due: dict[str, float] = {}

    def add(self, handle: str, now_mono: float, phase: float | None = None) -> None:
        if phase is None:
            phase = gap_phase(list(self.phase.values()), self.interval_s)
        self.phase[handle] = phase
        # The first beat on her phase, within one interval of now (single-file mode's first beat: one interval).
        start = self.epoch + phase
        due = start + ((now_mono - start) // self.interval_s + 1) * self.interval_s
        self._push(handle, due)

    def remove(self, handle: str) -> None:
        self.phase.pop(handle, None)
        self._due.pop(handle, None)  # its heap entries are skipped when they come up

    def _push(self, handle: str, due: float) -> None:
        self._due[handle] = due
        heapq.heappush(self._heap, (due, handle))

    def next_at(self) -> float | None:
        while self._heap and self._due.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)  # removed or rescheduled
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_mono: float) -> list[tuple[str, float]]:
        """(handle, due time) of every beat due by `now_mono`, each rescheduled one interval on (late ones coalesce)."""
        out = []
        while (at := self.next_at()) is not None and at <= now_mono:
            _, handle = heapq.heappop(self._heap)
            out.append((handle, at))
            nxt = at + self.interval_s
            if nxt <= now_mono:  # fell behind (a suspended VM): one beat now, then back on her phase
                nxt += ((now_mono - nxt) // self.interval_s + 1) * self.interval_s
            self._push(handle, nxt)
        return out

    def respread(self, interval_s: float, now_mono: float) -> None:
        """A new interval (SIGHUP): every companion keeps her order, phases spread over the new interval."""
        handles = sorted(self.phase, key=lambda h: self.phase[h])
        self.interval_s, self.epoch = interval_s, now_mono
        self.phase, self._heap, self._due = {}, [], {}
        for handle, phase in zip(handles, spread_phases(len(handles), interval_s), strict=True):
            self.add(handle, now_mono, phase)
