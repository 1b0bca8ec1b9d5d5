"""Copy engines: which ready copy runs next, and how fast copies run side by side.

A copy engine runs one copy at a time. Engines form pools: one H2D pool and one D2H pool, or a
single pool for both directions when the preset has a shared copy engine. The choice among ready
copies is :func:`choose_copy`. Bandwidth is shared fluidly: a copy's remaining work is kept in
"ns alone" and its speed is recomputed whenever the set of running copies changes, so an H2D
and a D2H that overlap for part of their lives each slow down only for that part (each by its
direction's factor: the preset's ``bidirectional_slowdown`` and ``bidirectional_slowdown_d2h``),
and a copy pays its direction's ``bidirectional_overhead_us`` once when it first runs against
the other direction. After each copy an engine rests ``copy_engine_gap_us`` before its next
(plus its direction's ``bidirectional_rest_us`` if the copy ran against the other direction).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappush

from swimlanes.engine.presets import DevicePreset

#: Heap event tag of a copy that may have finished (checked against its version).
EV_COPY = 2
H2D, D2H = 0, 1


def choose_copy(ready: list[tuple], last_copy_key: int, order: str = "measured") -> int:
    """Position in ``ready`` of the copy an idle engine starts next.

    ``ready`` holds tuples starting ``(ready_time, op, copy_key, ...)``, and ``last_copy_key``
    is the copy key of the engine's last copy. A copy's key (plan.copy_key) is its stream, or
    its channel when copy channels are modelled, and then "stream" below reads "channel": of
    many streams' copies issued at once, the engine ran two of one channel back to back more
    often (80-82% of its choices on the random pipelines' training halves) than two of one
    stream (64-68%). The orders, as ``swimlanes calibrate`` tells them apart on the GPU:

    * ``"stream_fifo"``: the engine keeps serving the stream it just served while that stream
      has a ready copy (copies issued s1, s2, s1 ran s1, s1, s2), and otherwise takes the copy
      that has waited longest (three copies issued at once on s1, s2, s3 ran in that order).
      What the H100 and H200 hosts measured since 2026-11-24 do.
    * ``"measured"``: the same stream first, otherwise the most recently readied copy (one H200
      host, 2026-11-21: three copies issued at once on s1, s2, s3 ran s1, s3, s2).
    * ``"fifo"``: the textbook engine: the copy that has waited longest, whatever its stream.

    Copies readied at the same instant go in issue order.
    """
    sticky = order != "fifo"
    oldest_first = order != "measured"
    best = -1
    best_key: tuple[int, int, int] | None = None
    for pos, entry in enumerate(ready):
        ready_time, op, copy_key = entry[0], entry[1], entry[2]
        same = 0 if not sticky or copy_key == last_copy_key else 1
        key = (same, ready_time if oldest_first else -ready_time, op)
        if best_key is None or key < best_key:
            best, best_key = pos, key
    return best


@dataclass(slots=True, eq=False)
class _Engine:
    pool: int
    op: int = -1
    direction: int = H2D
    last_copy_key: int = -1  # its last copy's copy key (choose_copy prefers more of it)
    remaining: float = 0.0  # ns of work left at full (alone) speed
    since: int = 0
    factor: float = 1.0
    version: int = 0
    index: int = 0
    contended: bool = False  # has run against the other direction (paid the fixed cost)
    free_at: int = 0  # when its rest after the last copy is over
    wake_at: int = -1  # the rest-over event already on the heap
    partner: _Engine | None = None  # the other direction's engine, with one per direction


class CopyEngines:
    """All copy engines of a device; pushes possible-finish events onto ``heap``.

    The simulator appends each copy whose stream dependencies are met to ``ready[pool]`` as
    ``(ready_time, op, copy_key, direction, work_ns)`` (copy_key: plan.copy_key);
    :meth:`dispatch` then starts copies on idle engines.
    """

    def __init__(
        self,
        preset: DevicePreset,
        heap: list,
        next_seq: Callable[[], int],
        start: list[int] | memoryview,
    ) -> None:
        n = preset.copy_engines_per_direction
        self.shared = preset.shared_copy_engine
        if self.shared:
            self.names = ["Copy"] if n == 1 else [f"Copy {k + 1}" for k in range(n)]
            self.engines = [_Engine(pool=0) for _ in range(n)]
            # Ready copies: (ready_time, op, copy_key, direction, work_ns).
            self.ready: list[list[tuple[int, int, int, int, int]]] = [[]]
        else:
            h2d = ["H2D"] if n == 1 else [f"H2D {k + 1}" for k in range(n)]
            d2h = ["D2H"] if n == 1 else [f"D2H {k + 1}" for k in range(n)]
            self.names = h2d + d2h
            self.engines = [_Engine(pool=0) for _ in range(n)] + [_Engine(pool=1) for _ in range(n)]
            self.ready = [[], []]
        self.slowdown = preset.bidirectional_slowdown
        gap = round(preset.copy_engine_gap_us * 1000.0)
        rest, rest_d2h = preset.bidirectional_rest_us, preset.bidirectional_rest_d2h_us
        rests = (rest, rest if rest_d2h is None else rest_d2h)
        # Per direction: an engine's rest after a copy that ran alone, and after one that ran
        # against the other direction.
        self._rest = tuple((gap, gap + round(r * 1000.0)) for r in rests)
        # Fermi-style queues feed each engine in issue order: the queue decides, not the engine.
        self.order = "fifo" if preset.hardware_queues == "fermi" else preset.copy_order
        self.running = [0, 0]  # copies running per direction
        self._fluid = self.slowdown > 0 or n > 1
        self._heap = heap
        self._seq = next_seq
        self._start = start
        slowdown_d2h = preset.bidirectional_slowdown_d2h
        # Per direction (H2D, D2H): the factor a copy's time grows by while the other runs,
        # and the fixed cost (in ns at that speed) it pays the first time that happens.
        self._slowed = (
            1.0 + self.slowdown,
            1.0 + (self.slowdown if slowdown_d2h is None else slowdown_d2h),
        )
        fixed = preset.bidirectional_overhead_us
        fixed_d2h = preset.bidirectional_overhead_d2h_us
        self._fixed = (fixed * 1000.0, (fixed if fixed_d2h is None else fixed_d2h) * 1000.0)
        #: The fixed cost of each direction at its slowed speed (_start_against adds it).
        self._fixed_slowed = (
            self._fixed[H2D] / self._slowed[H2D],
            self._fixed[D2H] / self._slowed[D2H],
        )
        # A rest after a copy that ran against the other direction needs the fluid path too:
        # it is what marks a copy as having run against the other direction.
        self._fluid = self._fluid or self._slowed[D2H] > 1.0 or any(self._fixed) or any(rests)
        for k, e in enumerate(self.engines):
            e.index = k
        #: float(k) for every count of copies running in one direction (a lookup, not a call).
        self._as_float = [float(k) for k in range(len(self.engines) + 1)]
        #: Each engine with its pool of ready copies (one lookup less per dispatch).
        self._pools = [(e, self.ready[e.pool]) for e in self.engines]
        # One engine per direction (most GPUs): a copy starting or ending changes the speed of
        # at most the other direction's copy, which _start_against / _end_against update
        # directly (the same arithmetic as _reschedule, without its pass over all engines).
        self._paired = not self.shared and n == 1
        if self._paired:
            h2d_engine, d2h_engine = self.engines
            h2d_engine.partner, d2h_engine.partner = d2h_engine, h2d_engine

    def dispatch(self, t: int) -> None:
        """Give every idle engine its next copy."""
        changed = False
        running, heap = self.running, self._heap
        for e, ready in self._pools:
            if e.op >= 0 or not ready:
                continue
            if e.free_at > t:  # resting: come back when that is over (version -1: a wake-up)
                if e.wake_at != e.free_at:
                    e.wake_at = e.free_at
                    heappush(heap, (e.free_at, self._seq(), EV_COPY, e, -1))
                continue
            pos = 0 if len(ready) == 1 else choose_copy(ready, e.last_copy_key, self.order)
            _, op, copy_key, direction, work = ready.pop(pos)
            e.op, e.last_copy_key, e.since, e.remaining = op, copy_key, t, float(work)
            e.contended = False
            e.direction = direction
            running[direction] += 1
            self._start[op] = t
            if self._fluid and (running[direction] > 1 or running[1 - direction]):
                if self._paired:
                    self._start_against(e, t)
                    continue
                e.factor = 0.0  # makes _reschedule give it an end event
                changed = True
            else:  # alone on the link: full speed, and nobody else's speed changes
                e.factor = 1.0
                e.version += 1
                heappush(heap, (t + work, self._seq(), EV_COPY, e, e.version))  # work: int ns
        if changed:
            self._reschedule(t)

    def finish(self, e: _Engine, t: int) -> int:
        """Handle ``e``'s current end event (the caller drops stale ones: event version !=
        ``e.version``, and treats version -1 as the end of the engine's rest): the finished
        op."""
        op = e.op
        e.op = -1
        e.free_at = t + self._rest[e.direction][e.contended]
        running = self.running
        running[e.direction] -= 1
        if self._fluid and (running[0] or running[1]):
            if self._paired:
                assert e.partner is not None  # paired engines know each other
                self._end_against(e.partner, t)
            else:
                self._reschedule(t)
        return op

    def _start_against(self, e: _Engine, t: int) -> None:
        """``e`` (one engine per direction) just started a copy while the other direction's
        copy runs: both run at their slowed speed, and each pays its fixed cost once."""
        o = e.partner
        assert o is not None  # paired engines know each other
        direction, heap, seq = e.direction, self._heap, self._seq
        factor = self._slowed[direction]
        e.contended = True
        e.remaining += self._fixed_slowed[direction]
        e.factor = factor
        e.version += 1
        e_end = t + max(0, round(e.remaining * factor))
        o_factor = self._slowed[1 - direction]
        extra = 0.0
        if not o.contended:
            o.contended = True
            extra = self._fixed_slowed[1 - direction]
        old = o.factor
        if o_factor == old and not extra:
            heappush(heap, (e_end, seq(), EV_COPY, e, e.version))
            return
        if old:
            o.remaining -= (t - o.since) / old
        o.remaining += extra
        o.since = t
        o.factor = o_factor
        o.version += 1
        o_end = t + max(0, round(o.remaining * o_factor))
        if o.index < e.index:  # end events in engine order, as _reschedule pushes them
            heappush(heap, (o_end, seq(), EV_COPY, o, o.version))
            heappush(heap, (e_end, seq(), EV_COPY, e, e.version))
        else:
            heappush(heap, (e_end, seq(), EV_COPY, e, e.version))
            heappush(heap, (o_end, seq(), EV_COPY, o, o.version))

    def _end_against(self, o: _Engine, t: int) -> None:
        """The copy against ``o``'s (one engine per direction) ended: ``o`` runs alone now."""
        old = o.factor
        if old == 1.0:
            return
        if old:
            o.remaining -= (t - o.since) / old
        o.since = t
        o.factor = 1.0
        o.version += 1
        heappush(self._heap, (t + max(0, round(o.remaining)), self._seq(), EV_COPY, o, o.version))

    def _reschedule(self, t: int) -> None:
        """Recompute every running copy's speed after the set of running copies changed."""
        running, slowed, heap, seq = self.running, self._slowed, self._heap, self._seq
        as_float = self._as_float
        both_ways = not self.shared  # a shared engine is never slowed by the other direction
        for e in self.engines:
            if e.op < 0:
                continue
            direction = e.direction
            factor = as_float[running[direction]]
            extra = 0.0
            if both_ways and running[1 - direction]:
                factor *= slowed[direction]
                if not e.contended:
                    e.contended = True
                    extra = self._fixed[direction] / factor
            old = e.factor
            if factor == old and not extra:
                continue  # its speed did not change: its pending end event stays valid
            if old:
                e.remaining -= (t - e.since) / old
            e.remaining += extra
            e.since = t
            e.factor = factor
            version = e.version = e.version + 1
            left = round(e.remaining * factor)
            heappush(heap, (t + left if left > 0 else t, seq(), EV_COPY, e, version))
