"""The block scheduler: how kernels (and d2d copies and memsets) share the SMs.

Each SM holds ``max_threads_per_sm`` thread slots. A kernel's residency is
``min(max_blocks_per_sm, max_threads_per_sm // threads)`` blocks per SM (an op may override it
with ``blocks_per_sm``); each of its blocks takes ``max_threads_per_sm // residency`` slots, so a
kernel alone fills the GPU exactly as its residency allows and concurrent kernels share what is
left. Pending blocks are dispatched highest stream priority first (CUDA: lower number), then in
the order the kernels reached the GPU; running blocks are never preempted. At most
``max_resident_kernels`` kernels have blocks on the GPU at once.

For speed the scheduler works in batches: all blocks of a kernel that fit at one moment start
together and finish together ``block_ns`` later (one event per batch, never one per block), which
is exactly the wave model for a kernel alone. A kernel's device-side overhead (the preset's
``kernel_overhead_us``: block launch, exit and completion signal) lengthens its last batch, so
the kernel ends that much after its blocks' time and its last blocks hold their slots meanwhile.
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappush

from swimlanes.engine.presets import DevicePreset

#: Heap event tag of a finished batch of blocks.
EV_BATCH = 1
#: What BlockScheduler.batch_end found.
BATCH_DONE, KERNEL_DONE, SMS_IDLE = range(3)


def residency(preset: DevicePreset, threads: int, override: int | None = None) -> int:
    """Blocks of one kernel that fit on one SM."""
    if override:
        return max(1, min(int(override), preset.max_blocks_per_sm))
    return max(1, min(preset.max_blocks_per_sm, preset.max_threads_per_sm // max(1, threads)))


def waves(preset: DevicePreset, blocks: int, per_sm: int) -> int:
    """Rounds of blocks a kernel alone needs: ceil(blocks / (SMs x residency))."""
    return max(1, math.ceil(blocks / (preset.sm_count * per_sm)))


@dataclass(slots=True, eq=False)  # identity equality: list.remove must not compare fields
class SmWork:
    """A kernel (or SM-side copy/memset) that reached the block scheduler."""

    op: int
    priority: int
    seq: int
    remaining: int  # blocks not yet dispatched
    cost: int  # thread slots one block occupies
    max_resident: int  # SMs x residency: blocks of this kernel that fit at once
    block_ns: float  # fractional so that waves of a duration_us kernel add up exactly
    tail_ns: int = 0  # kernel overhead: the last batch dispatched lasts this much longer
    #: Its first batch if it starts alone on idle SMs (see BlockScheduler.first_batch_alone).
    alone: tuple[int, int, float, int] | None = None
    resident: int = 0
    carry: float = 0.0
    started: bool = False


class BlockScheduler:
    """Dispatches pending blocks onto free SM slots; pushes batch-end events onto ``heap``."""

    def __init__(
        self,
        preset: DevicePreset,
        heap: list,
        next_seq: Callable[[], int],
        start: list[int] | memoryview,
    ) -> None:
        self.sm_count = preset.sm_count
        self.slots_per_sm = preset.max_threads_per_sm
        self.slots = preset.sm_count * preset.max_threads_per_sm  # thread slots of the GPU
        self.free = self.slots
        self.max_resident_kernels = preset.max_resident_kernels
        self.resident_kernels = 0
        #: Kernels on the block scheduler (waiting or running), in dispatch order.
        self.pending: list[SmWork] = []
        self._heap = heap
        self._seq = next_seq
        self._start = start
        self.occupancy_time: list[int] = [0]
        self.occupancy_sms: list[int] = [0]

    def add(self, work: SmWork) -> None:
        pending = self.pending
        if pending:
            last = pending[-1]
            # Most work arrives in dispatch order: append unless it must go before the last.
            if work.priority < last.priority or (
                work.priority == last.priority and work.seq < last.seq
            ):
                insort(pending, work, key=_dispatch_order)
                return
        pending.append(work)

    def dispatch(self, t: int) -> None:
        """Start batches for every pending kernel that fits, best priority first; record the
        occupancy. (One function, and min() spelled out: this runs about once per kernel.)"""
        pending = self.pending
        if not pending:  # the last kernel left: the SMs are idle
            if self.occupancy_sms[-1]:
                self._record_occupancy(t, 0)
            return
        if len(pending) == 1 and self.free == self.slots:
            self._start_alone(pending[0], t)
            return
        heap, start, sm_count, free = self._heap, self._start, self.sm_count, self.free
        busy = 0  # SMs holding blocks, counting each kernel's blocks as if on separate SMs
        for w in self.pending:
            remaining, cost, resident = w.remaining, w.cost, w.resident
            if remaining and free >= cost:
                if not w.started and self.resident_kernels >= self.max_resident_kernels:
                    continue
                fit = free // cost
                if remaining < fit:
                    fit = remaining
                if w.max_resident - resident < fit:
                    fit = w.max_resident - resident
                if fit > 0:
                    if not w.started:
                        w.started = True
                        self.resident_kernels += 1
                        start[w.op] = t
                    free -= fit * cost
                    w.resident = resident = resident + fit
                    w.remaining = remaining - fit
                    # Carry the rounding from batch to batch so a kernel alone takes exactly
                    # its time.
                    d = w.block_ns + w.carry
                    di = round(d)
                    if di < 1:
                        di = 1
                    w.carry = d - di
                    if w.remaining == 0:
                        di += w.tail_ns
                    heappush(heap, (t + di, self._seq(), EV_BATCH, w, fit))
            busy += resident if resident < sm_count else sm_count
        self.free = free
        # The SMs-busy step function: SMs holding blocks, by kernels and by slots in use.
        by_slots = -(-(self.slots - free) // self.slots_per_sm)
        sms = busy if busy > by_slots else by_slots
        if sms > sm_count:
            sms = sm_count
        if sms != self.occupancy_sms[-1]:
            self._record_occupancy(t, sms)

    def first_batch_alone(self, shape: tuple[int, int, int, float], tail_ns: int) -> tuple:
        """The first batch (see _batch_alone) of a kernel of ``shape`` (blocks, slots per
        block, resident limit, ns per block) that starts alone on idle SMs: worked out once per
        shape."""
        n_blocks, cost, max_resident, block_ns = shape
        return self._batch_alone(n_blocks, cost, max_resident, block_ns, 0.0, tail_ns)

    def _batch_alone(
        self, remaining: int, cost: int, max_resident: int, block_ns: float, carry: float,
        tail_ns: int,
    ) -> tuple[int, int, float, int]:  # fmt: skip
        """(blocks, duration ns, rounding carried on, SMs busy) of the next batch of a kernel
        alone on idle SMs, with ``remaining`` blocks to go and ``carry`` carried so far."""
        fit = min(self.slots // cost, remaining, max_resident)
        # Carry the rounding from batch to batch so a kernel alone takes exactly its time.
        d = block_ns + carry
        di = max(1, round(d))
        carry = d - di
        if remaining == fit:
            di += tail_ns
        by_slots = -(-(fit * cost) // self.slots_per_sm)
        sms = min(max(min(fit, self.sm_count), by_slots), self.sm_count)
        return fit, di, carry, sms

    def _start_alone(self, w: SmWork, t: int) -> None:
        """dispatch() when ``w`` is the only kernel and the SMs are idle (kernels that run
        one after another): the same steps, without the pass over other kernels."""
        if w.alone is not None and not w.started:  # its first batch, worked out per shape
            batch = w.alone
        else:
            batch = self._batch_alone(
                w.remaining, w.cost, w.max_resident, w.block_ns, w.carry, w.tail_ns
            )
        fit, di, w.carry, sms = batch
        if not w.started:  # it cannot be over the resident-kernel limit: it is alone
            w.started = True
            self.resident_kernels += 1
            self._start[w.op] = t
        self.free -= fit * w.cost
        w.resident = fit
        w.remaining -= fit
        heappush(self._heap, (t + di, self._seq(), EV_BATCH, w, fit))
        if sms != self.occupancy_sms[-1]:
            self._record_occupancy(t, sms)

    def _record_occupancy(self, t: int, sms: int) -> None:
        """The SMs-busy step function changes to ``sms`` at ``t``."""
        if self.occupancy_time[-1] == t:  # a second change at t replaces the first
            if len(self.occupancy_sms) > 1 and self.occupancy_sms[-2] == sms:
                self.occupancy_time.pop()  # back where it was: no step at t after all
                self.occupancy_sms.pop()
            else:
                self.occupancy_sms[-1] = sms
        else:
            self.occupancy_time.append(t)
            self.occupancy_sms.append(sms)

    def batch_end(self, w: SmWork, fit: int, t: int) -> int:
        """Free a finished batch's slots at ``t``. Returns BATCH_DONE (the kernel has more
        blocks), KERNEL_DONE (that was its last block) or SMS_IDLE (its last block, and no
        other work is on the SMs: the occupancy is recorded here). After the first two the
        caller runs :meth:`dispatch`, which starts what now fits and records the occupancy.
        """
        self.free += fit * w.cost
        w.resident -= fit
        if w.remaining or w.resident:
            return BATCH_DONE
        pending = self.pending
        pending.remove(w)
        self.resident_kernels -= 1
        if pending:
            return KERNEL_DONE
        if self.occupancy_sms[-1]:
            self._record_occupancy(t, 0)
        return SMS_IDLE


def _dispatch_order(w: SmWork) -> tuple[int, int]:
    return (w.priority, w.seq)
