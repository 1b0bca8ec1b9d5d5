"""The reference simulator's clock and engines: copy engines and the SMs' block scheduler.

Each engine takes the work that left its hardware queue and puts its future on the clock as
named events; the simulation (``run.py``) handles those events.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

from swimlanes.engine.presets import DevicePreset

H2D, D2H = 0, 1


# -- the clock ---------------------------------------------------------------------------------
@dataclass
class QueueTimer:
    """Look at a hardware queue's head again: its launch or dependency latency has passed."""

    queue: int


@dataclass
class CopyEnd:
    """A copy may end now: valid only if the copy's speed has not changed since (``version``)."""

    engine: CopyEngine
    version: int


@dataclass
class CopyRestOver:
    """A copy engine's rest after its last copy is over: it may take its next copy."""

    engine: CopyEngine


@dataclass
class BatchEnd:
    """A batch of a kernel's blocks (started together) ends and frees its SM slots."""

    work: SmWork
    blocks: int


@dataclass
class CallbackEnd:
    """A host function finished on the callback thread."""

    op: int


Event = QueueTimer | CopyEnd | CopyRestOver | BatchEnd | CallbackEnd


class Clock:
    """Events by time; events due at the same time come out in the order they were scheduled."""

    def __init__(self) -> None:
        # (Events of several devices too: peer copies' and collectives', system.py's.)
        self._heap: list[tuple[int, int, Event | object]] = []
        self._order = itertools.count()

    def at(self, time: int, event: Event | object) -> None:
        heapq.heappush(self._heap, (time, next(self._order), event))

    def next_time(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> tuple[int, Event | object]:
        time, _, event = heapq.heappop(self._heap)
        return time, event

    def __len__(self) -> int:
        return len(self._heap)


# -- copy engines --------------------------------------------------------------------------------
@dataclass
class ReadyCopy:
    ready_time: int
    op: int
    copy_key: int  # its stream, or its channel with copy channels modelled (OpFacts.copy_key)
    direction: int
    work_ns: int


@dataclass(eq=False)
class CopyEngine:
    index: int
    pool: int  # which list of ready copies it serves
    op: int = -1  # the copy it runs, -1: idle
    direction: int = H2D
    last_copy_key: int = -1  # its last copy's copy_key (it prefers more of that key next)
    remaining: float = 0.0  # ns of work left at full (alone) speed
    since: int = 0  # when remaining was last brought up to date
    factor: float = 1.0  # how many times slower than alone it runs now
    version: int = 0
    contended: bool = False  # its copy has run against the other direction
    free_at: int = 0  # when its rest after the last copy is over
    wake_at: int = -1  # the rest's end already on the clock


class CopyEngines:
    """One copy at a time per engine; bandwidth shared fluidly between running copies."""

    def __init__(self, preset: DevicePreset, clock: Clock) -> None:
        n = preset.copy_engines_per_direction
        self.shared = preset.shared_copy_engine
        if self.shared:
            self.names = ["Copy"] if n == 1 else [f"Copy {k + 1}" for k in range(n)]
            pools = [0] * n
            self.ready: list[list[ReadyCopy]] = [[]]
        else:
            h2d = ["H2D"] if n == 1 else [f"H2D {k + 1}" for k in range(n)]
            d2h = ["D2H"] if n == 1 else [f"D2H {k + 1}" for k in range(n)]
            self.names = h2d + d2h
            pools = [0] * n + [1] * n
            self.ready = [[], []]
        self.engines = [CopyEngine(index=k, pool=p) for k, p in enumerate(pools)]
        self.clock = clock
        # Fermi's copy queues feed each engine in issue order: the queue decides, not the engine.
        self.order = "fifo" if preset.hardware_queues == "fermi" else preset.copy_order
        gap = round(preset.copy_engine_gap_us * 1000.0)
        rest = preset.bidirectional_rest_us
        rest_d2h = (
            rest if preset.bidirectional_rest_d2h_us is None else preset.bidirectional_rest_d2h_us
        )
        # Per direction: the rest after a copy that ran alone, and after one against the other.
        self.rest = ((gap, gap + round(rest * 1000.0)), (gap, gap + round(rest_d2h * 1000.0)))
        slow = preset.bidirectional_slowdown
        slow_d2h = (
            slow if preset.bidirectional_slowdown_d2h is None else preset.bidirectional_slowdown_d2h
        )
        self.slowed = (1.0 + slow, 1.0 + slow_d2h)
        fixed = preset.bidirectional_overhead_us
        fixed_d2h = (
            fixed
            if preset.bidirectional_overhead_d2h_us is None
            else preset.bidirectional_overhead_d2h_us
        )
        self.fixed = (fixed * 1000.0, fixed_d2h * 1000.0)
        self.running = [0, 0]  # copies running per direction

    def pool_of(self, direction: int) -> list[ReadyCopy]:
        return self.ready[0 if self.shared else direction]

    def has_ready(self) -> bool:
        return any(self.ready)

    def choose(self, ready: list[ReadyCopy], last_copy_key: int) -> int:
        """The copy an idle engine takes next: see the package docstring, rule 6."""

        sticky = self.order != "fifo"  # serves the key (stream or channel) it served last
        oldest_first = self.order != "measured"

        def key(c: ReadyCopy) -> tuple[int, int, int]:
            other_key = 0 if not sticky or c.copy_key == last_copy_key else 1
            return (other_key, c.ready_time if oldest_first else -c.ready_time, c.op)

        return min(range(len(ready)), key=lambda pos: key(ready[pos]))

    def dispatch(self, t: int, started: list[int]) -> None:
        """Every idle engine that has rested takes its next copy (appended to ``started``).
        The speeds are set once all of this instant's copies have started: a copy that meets
        the other direction pays its fixed cost at the speed it runs at from then on, not at
        the speed of a moment when only some of the copies starting with it had started."""
        count = len(started)
        for e in self.engines:
            ready = self.ready[e.pool]
            if e.op >= 0 or not ready or self.held_elsewhere(e):
                continue
            if e.free_at > t:
                if e.wake_at != e.free_at:
                    e.wake_at = e.free_at
                    self.clock.at(e.free_at, CopyRestOver(e))
                continue
            copy = ready.pop(self.choose(ready, e.last_copy_key))
            e.op, e.last_copy_key, e.direction = copy.op, copy.copy_key, copy.direction
            e.since, e.remaining, e.contended = t, float(copy.work_ns), False
            e.factor = 0.0  # "no speed yet": the update below gives it one and an end
            self.running[copy.direction] += 1
            started.append(copy.op)
        if len(started) > count:
            self.update_speeds(t)

    def held_elsewhere(self, e: CopyEngine) -> bool:
        """Whether ``e`` is taken by something other than a copy of its pool (a peer copy
        holds it: links.HeldCopyEngines); one device alone: never."""
        return False

    def finish(self, e: CopyEngine, t: int) -> int:
        """``e``'s copy ended at ``t``: the engine rests; the other copies' speeds change."""
        op, e.op = e.op, -1
        e.free_at = t + self.rest[e.direction][e.contended]
        self.running[e.direction] -= 1
        self.update_speeds(t)
        return op

    def update_speeds(self, t: int) -> None:
        """Give every running copy the speed of the copies running now; a copy whose speed
        changed gets a new end on the clock (its old one goes stale)."""
        for e in self.engines:
            if e.op < 0:
                continue
            factor = float(self.running[e.direction])  # copies of one direction share it
            extra = 0.0
            if not self.shared and self.running[1 - e.direction]:
                factor *= self.slowed[e.direction]
                if not e.contended:  # the fixed cost of running against the other direction
                    e.contended = True
                    extra = self.fixed[e.direction] / factor
            if factor == e.factor and not extra:
                continue
            if e.factor:
                e.remaining -= (t - e.since) / e.factor
            e.remaining += extra
            e.since = t
            e.factor = factor
            e.version += 1
            self.clock.at(t + max(0, round(e.remaining * factor)), CopyEnd(e, e.version))


# -- the SMs ---------------------------------------------------------------------------------------
@dataclass(eq=False)
class SmWork:
    """A kernel, d2d copy or memset on the block scheduler."""

    op: int
    priority: int
    arrival: tuple[int, ...]  # when it reached the scheduler, then its program index
    remaining: int  # blocks not yet started
    slots_per_block: int
    max_resident: int
    block_ns: float
    tail_ns: int = 0  # the kernel overhead: its last batch lasts this much longer
    resident: int = 0
    carry: float = 0.0  # rounding carried from batch to batch
    started: bool = False


@dataclass
class Sms:
    """Thread slots of the whole GPU, kernels resident, and the SMs-busy step function."""

    preset: DevicePreset
    clock: Clock
    pending: list[SmWork] = field(default_factory=list)
    resident_kernels: int = 0
    occupancy: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])

    def __post_init__(self) -> None:
        self.slots = self.preset.sm_count * self.preset.max_threads_per_sm
        self.free = self.slots

    def add(self, work: SmWork) -> None:
        self.pending.append(work)
        self.pending.sort(key=lambda w: (w.priority, w.arrival))

    def dispatch(self, t: int, started: list[int]) -> None:
        """Start, best priority first, as many blocks of each waiting kernel as fit."""
        sm_count = self.preset.sm_count
        busy = 0  # SMs holding blocks, counting each kernel's blocks as on SMs of their own
        for w in self.pending:
            may_start = w.started or self.resident_kernels < self.preset.max_resident_kernels
            if w.remaining and self.free >= w.slots_per_block and may_start:
                fit = min(self.free // w.slots_per_block, w.remaining, w.max_resident - w.resident)
                if fit > 0:
                    self._start_batch(w, fit, t, started)
            busy += min(w.resident, sm_count)
        if not self.pending and self.occupancy[-1][1] == 0:
            return
        by_slots = -(-(self.slots - self.free) // self.preset.max_threads_per_sm)
        self._record(t, min(max(busy, by_slots), sm_count))

    def _start_batch(self, w: SmWork, fit: int, t: int, started: list[int]) -> None:
        if not w.started:
            w.started = True
            self.resident_kernels += 1
            started.append(w.op)
        self.free -= fit * w.slots_per_block
        w.resident += fit
        w.remaining -= fit
        d = w.block_ns + w.carry  # carry the rounding so a kernel alone takes its exact time
        duration = max(1, round(d))
        w.carry = d - duration
        if w.remaining == 0:
            duration += w.tail_ns
        self.clock.at(t + duration, BatchEnd(w, fit))

    def batch_end(self, w: SmWork, blocks: int, t: int) -> bool:
        """Free a batch's slots; True if that was the kernel's last."""
        self.free += blocks * w.slots_per_block
        w.resident -= blocks
        if w.remaining or w.resident:
            return False
        self.pending.remove(w)
        self.resident_kernels -= 1
        if not self.pending:
            self._record(t, 0)
        return True

    def _record(self, t: int, sms: int) -> None:
        """The SMs-busy step function is ``sms`` from ``t`` on."""
        if sms == self.occupancy[-1][1]:
            return
        if self.occupancy[-1][0] == t:  # a second change at t replaces the first
            if len(self.occupancy) > 1 and self.occupancy[-2][1] == sms:
                self.occupancy.pop()
            else:
                self.occupancy[-1] = (t, sms)
        else:
            self.occupancy.append((t, sms))
