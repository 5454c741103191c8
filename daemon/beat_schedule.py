"""When each companion of a many-companion host beats next: phases spread evenly over one interval.

A thousand companions beating every 15 s must not beat in one burst (one loop, one CPU): each gets a
phase, evenly spread at start (1,000 at 15 s beat 15 ms apart), a newcomer the middle of the widest gap,
and a heap orders the next beats so finding the due ones costs nothing per companion.
"""

from __future__ import annotations

import heapq


def spread_phases(count: int, interval_s: float) -> list[float]:
    """`count` beat phases evenly over one interval: 1,000 companions at 15 s beat 15 ms apart."""
    return [i * interval_s / count for i in range(count)]


def gap_phase(phases: list[float], interval_s: float) -> float:
    """The phase for one more companion: the middle of the widest gap between those already beating."""
    if not phases:
        return 0.0
    ordered = sorted(p % interval_s for p in phases)
    best_start, best_len = ordered[-1], ordered[0] + interval_s - ordered[-1]  # the gap that wraps around
    for a, b in zip(ordered, ordered[1:], strict=False):
        if b - a > best_len:
            best_start, best_len = a, b - a
    return (best_start + best_len / 2) % interval_s


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
