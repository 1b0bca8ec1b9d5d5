"""The discrete-event simulator: a host program on a model of a GPU's engines.

Semantics (each has tests in tests/engine):

1. **Host thread.** The program is issued in order; every call costs the preset's issue cost on
   the host, or the op's measured ``call_us`` (plus ``host_call_gap_us`` between calls), and an
   op reaches the GPU when its call returns (kernels start no earlier than
   ``kernel_launch_latency_us`` after that, H2D and D2H copies ``copy_launch_latency_us``).
   Blocking calls stall the host, following CUDA's "API synchronization behavior": a
   synchronous pinned copy returns when done; a pageable H2D (async) returns once the data is
   staged at the host's staging rate (with a ``call_us``, the whole measured call: the issue
   cost, then staging for the rest of it), and its DMA is pipelined
   with the staging (with ``pageable_h2d_chunk_bytes`` it starts once the first chunk is
   staged); a synchronous pageable H2D first waits for earlier work (its stream sync), then
   stages while the DMA runs, so it returns as the copy ends; any D2H to pageable memory
   returns when the copy is done (with ``pageable_d2h_chunk_bytes``, once its last chunk is
   copied out); a synchronous D2D returns at once. ``stream_sync``, ``event_sync``,
   ``device_sync`` and ``free`` (cudaFree synchronises the device) wait; ``host`` keeps the
   host busy. Synchronous copies with no stream go to the legacy default stream. A blocking call returns the preset's ``sync_return_us`` (per
   kind of call) after the work it waited for is done, or when its own call ends if later.
2. **Streams are in order.** ``event_wait`` makes later work in its stream wait for the most
   recent ``event_record`` of that event issued before the wait (never recorded: no-op); an
   ``event_record`` completes when all earlier work in its stream has; ``event_sync`` waits for
   that record (never recorded: returns at once).
3. **Legacy default stream.** Its ops wait for all earlier work in blocking streams (kinds
   ``blocking`` and ``per_thread_default``) and later work in those waits for it; ``non_blocking``
   streams are exempt. ``malloc`` and a synchronous ``memset`` are device-wide implicit
   synchronisation: work issued after them waits for all work issued before them.
4. **Hardware queues.** Hyper-Q: streams map round-robin, in creation order, onto ``connections``
   in-order queues (the legacy default stream has its own); with ``queue_choice`` "free" an op
   picks its connection queue as its call returns (``queue_choice.py``). A queue's head leaves
   only when it can run, so an op blocked at the head holds back other streams' ops behind it
   (a "queue" dependency is recorded when that actually delayed them). Fermi: one compute
   queue and one queue per copy pool, filled in issue order; each copy engine takes copies in
   the order its queue releases them (the breadth-first vs depth-first issue lesson).
   An op that waited for another starts no earlier than ``dependency_latency_us`` after it
   completed on another engine (``kernel_dependency_latency_us`` when both run on the SMs); an
   event record or wait passes on the engine of the op that released it.
5. **Copy engines** (see ``copies.py``): one copy at a time per engine, latency + bytes /
   bandwidth(size) or a measured size -> bandwidth table, pinned vs pageable rates, fluid
   bidirectional slowdown and fixed cost per direction, the engine's rest between copies, and
   the choice among ready copies (measured on an H200; first come first served on the
   ``ideal`` preset). ``duration_us`` on a copy overrides the bandwidth
   model. D2D copies (read + write) and memsets run on the SMs at memory bandwidth.
6. **Block scheduler** (see ``blocks.py``): residency, waves, SM sharing, priorities, at most
   ``max_resident_kernels`` kernels; each kernel ends ``kernel_overhead_us`` after its blocks.
7. **Fermi's completion signal** (``completion_signal_delay``): kernels issued back to back
   (consecutive calls of the host program) on different streams that launch while the earlier
   ones run form a group, and each one's completion becomes visible to dependent work only when
   the last of the group ends; the kernels' own spans still end on time. A kernel that depends
   on the previous one launches only after it and so starts a new group.

Dependencies recorded for drawing: "stream" (previous op of the stream), "event" (record ->
first op after the wait), "default_stream" (legacy default stream barriers and device-wide
implicit synchronisation), "queue" (a hardware queue's head op that held back another stream's
op that was otherwise ready), "host" (the op whose completion released a blocking host call).

Times are int64 nanoseconds from the first call (t = 0). The loop is a heap of integer-time
events plus the host thread, which runs ahead inline until its next call would be later than the
next device event, so each op costs a few list operations.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from heapq import heappop, heappush
from typing import cast

from swimlanes.engine.blocks import EV_BATCH, SMS_IDLE, SmWork
from swimlanes.engine.copies import D2H, EV_COPY, H2D
from swimlanes.engine.core import run_compiled
from swimlanes.engine.errors import SimulationCancelled
from swimlanes.engine.plan import (
    ENQ,
    RUN_CALLBACK,
    RUN_COPY,
    RUN_INSTANT,
    RUN_KERNEL,
    RUN_SM,
    K,
    Plan,
    plan_ops,
)
from swimlanes.engine.presets import DevicePreset, get_preset
from swimlanes.engine.queues import EV_TIMER, QueueDrain, examine_at_once
from swimlanes.engine.result import build_timeline
from swimlanes.engine.state import INF
from swimlanes.model.document import MULTI_DEVICE_OPS, OP_KINDS, Pipeline
from swimlanes.model.op_kinds import register_layer
from swimlanes.timeline.timeline import Timeline

EV_CALLBACK = 4  # a host function finished
_END = -1  # host behaviour code of the row past the program (see _Run.loop)
_COPIES, _BLOCKS = 1, 2  # bits of RunState.dirty: engines with new work
_H2D = K["h2d"]
_UNSEEN = ()  # a kernel shape not met yet (see _Run.make_to_kernel)


#: The kinds the fast engine runs itself (plan.py's rows, this module's engines) ...
NATIVE_KINDS: tuple[str, ...] = tuple(k for k in OP_KINDS if k not in MULTI_DEVICE_OPS)
#: ... and those it always hands, with the whole pipeline, to the multi-device engine
#: (engine/multi.py): a pipeline with any of them is simulated there.
DELEGATED_KINDS: tuple[str, ...] = MULTI_DEVICE_OPS
register_layer("engine", (*NATIVE_KINDS, *DELEGATED_KINDS))


class SimulationRangeError(ValueError):
    """A simulation whose times left the simulator's clock (int64 ns, 2**62 ns meaning
    "never"). plan_ops refuses programs that could get there; this is the last line of
    defence, so that such a program is refused rather than answered wrongly."""


def simulate(
    pipeline: Pipeline,
    device: DevicePreset | str = "h200",
    *,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    adjust_plan: Callable[[Plan], None] | None = None,
) -> Timeline:
    """Simulate ``pipeline`` on ``device``; deterministic. See the module docstring.

    ``adjust_plan`` may change the per-op columns of the plan in place before the event loop
    runs (engine.bands perturbs host costs and device times with it).

    A pipeline of several devices, or with a peer copy or a collective, goes to the
    multi-device engine (:mod:`swimlanes.engine.multi`; no ``adjust_plan`` there), which
    refuses, with a :class:`~swimlanes.engine.multi.MultiDeviceError`, more devices than the
    preset has GPUs."""
    preset = device if isinstance(device, DevicePreset) else get_preset(device)
    from swimlanes.engine.multi import (  # (it builds on the reference model, which uses this)
        MultiDeviceError,
        needs_multi_device,
        simulate_multi_device,
    )

    if needs_multi_device(pipeline):
        if adjust_plan is not None:
            raise MultiDeviceError("a multi-device pipeline has no plan to adjust")
        return simulate_multi_device(pipeline, preset, progress=progress, cancel=cancel)
    # The simulation allocates many small tuples and no reference cycles; pausing the cyclic
    # collector keeps it from rescanning the growing heap (which made big runs superlinear).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        plan = plan_ops(pipeline, preset)
        if adjust_plan is not None:
            adjust_plan(plan)
        run = _Run(plan, preset, progress, cancel)
        try:
            # The compiled loop (engine/core) when SWIMLANES_ENGINE and the size ask for it
            # and it can run this pipeline; else, or if it declines, this module's loop.
            if not run_compiled(run, progress, cancel):
                run.loop()
        except (OverflowError, ValueError) as err:  # an int64 column refused a time
            raise SimulationRangeError(_out_of_range(run)) from err
        run.drop_work_columns()
    finally:
        if gc_was_enabled:
            gc.enable()
    # The loop ends when the host is done or waits, and nothing on the device happens before
    # INF. Anything still to do then (host calls, device events) lies past the clock's range.
    if run.host_i < run.n or len(run.heap) > 1:
        raise SimulationRangeError(_out_of_range(run))
    if progress is not None:
        progress(1.0)
    return build_timeline(run, pipeline.name)


def _out_of_range(run: _Run) -> str:
    where = f" at program[{run.host_i}]" if run.host_i < run.n else ""
    return (
        f"the simulated times pass the simulator's clock range (2**62 ns){where}: shorten "
        "the longest ops"
    )


class _Run(QueueDrain):
    """One simulation: the engines and the event loop (the queues' draining is QueueDrain's)."""

    __slots__ = ()

    def engine_entries(self) -> list[Callable[[int, int], None]]:
        """Per RUN_* code, the function that hands an op leaving its hardware queue at ``t``
        to whatever runs it (a table: one index instead of a chain of tests per op)."""
        table: list = [None] * 5
        table[RUN_COPY] = self.make_to_copy_engine()
        table[RUN_SM] = self.to_sm_copy
        table[RUN_KERNEL] = self.make_to_kernel()
        table[RUN_INSTANT] = self.finish_at_once
        table[RUN_CALLBACK] = self.to_callback
        return table

    # -- engines: where an op goes when it leaves its hardware queue at t ------------------------
    def make_to_copy_engine(self) -> Callable[[int, int], None]:
        """The entry of copy engines (a closure: it runs once per copy)."""
        plan = self.plan
        kind, key, solo, pools = plan.kind, plan.copy_key, plan.solo, self.copy_pools

        def to_copy_engine(i: int, t: int) -> None:
            # The copy engines' ready pools: (ready_time, op, key, direction, work_ns), the key
            # being the copy's channel or stream (plan.copy_key).
            direction = H2D if kind[i] == _H2D else D2H
            pools[direction].append((t, i, key[i], direction, solo[i]))
            self.dirty |= _COPIES

        return to_copy_engine

    def make_to_kernel(self) -> Callable[[int, int], None]:
        """The entry of the block scheduler for kernels (a closure: it runs once per kernel)."""
        plan, blocks, next_seq, engine = self.plan, self.blocks, self.next_seq, self.engine
        # (to_kernel reads only kernels' shapes, which are never None.)
        kernel = cast(list[tuple[int, int, int, float]], plan.kernel)
        stream, priority = plan.stream, plan.priority
        add, pending, group_kernel = blocks.add, blocks.pending, self.group_kernel
        signal_delay, tail, compute = self.signal_delay, self.kernel_tail, self.compute_engine
        # Per kernel shape (plan shares one tuple per shape): its first batch alone, worked out
        # for the shape's second kernel (None: seen once). A kernel without it gets the same
        # batch from BlockScheduler._start_alone; most shapes of captured programs occur once.
        first_alone: dict[int, tuple | None] = {}

        def to_kernel(i: int, t: int) -> None:
            shape = kernel[i]
            key = id(shape)
            alone = first_alone.get(key, _UNSEEN)
            if alone is None:
                alone = first_alone[key] = blocks.first_batch_alone(shape, tail)
            elif alone is _UNSEEN:
                alone = first_alone[key] = None
            s = stream[i]
            if signal_delay:
                group_kernel(i, s)
            n_blocks, cost, max_res, block_ns = shape
            work = SmWork(
                i, priority[s], next_seq(), n_blocks, cost, max_res, block_ns, tail, alone
            )
            if pending:
                add(work)
            else:  # add()'s outcome when nothing else is on the SMs
                pending.append(work)
            engine[i] = compute
            self.dirty |= _BLOCKS

        return to_kernel

    def to_sm_copy(self, i: int, t: int) -> None:
        """D2D copies and memsets: one wave over every SM at memory bandwidth."""
        p, plan = self.preset, self.plan
        per_sm = max(1, min(p.max_blocks_per_sm, p.max_threads_per_sm // 256))
        cost = p.max_threads_per_sm // per_sm
        block_ns = float(max(1, plan.solo[i]))
        prio = plan.priority[plan.stream[i]]
        work = SmWork(i, prio, self.next_seq(), p.sm_count, cost, p.sm_count * per_sm, block_ns)
        self.blocks.add(work)
        self.engine[i] = self.compute_engine
        self.dirty |= _BLOCKS

    def to_callback(self, i: int, t: int) -> None:
        # The run's first host function wakes the idle callback thread, which takes
        # callback_cold longer; host functions reaching it before then start as it wakes.
        wake = self.callback_wake
        if wake < 0:
            wake = self.callback_wake = t + self.callback_cold
        start = wake if wake > t else t
        self.start[i] = start
        solo = self.plan.solo[i]
        if solo > 0 or start > t:
            heappush(self.heap, (start + solo, self.next_seq(), EV_CALLBACK, i, 0))
        else:
            self.finish(i, t)

    def finish_at_once(self, i: int, t: int) -> None:
        """Event records and waits: done as they leave the queue."""
        self.start[i] = t
        self.finish(i, t)

    def finish(self, i: int, t: int) -> None:
        """Op ``i`` ended on its engine at ``t``; make it visible to dependents."""
        self.end[i] = t
        if self.signal_delay:
            self.finish_grouped(i, t)
            return
        self.done[i] = t
        ws = self.waiters[i]
        if ws is not None:
            self.waiters[i] = None
            self.todo.extend(ws)

    def finish_grouped(self, i: int, t: int) -> None:
        """Fermi: signal a kernel's group only when its last member has ended."""
        group = self.groups.pop(i, None)
        if group is not None:
            group[0] -= 1
            group[1].append(i)
            if group[0] > 0:
                return
            ready, group[1] = group[1], []
        else:
            ready = [i]
        for x in ready:
            self.done[x] = t
            ws = self.waiters[x]
            if ws is not None:
                self.waiters[x] = None
                self.todo.extend(ws)

    # -- the loop -------------------------------------------------------------------------------
    def loop(self) -> None:
        """Run the event loop to the end of the program and of all device work.

        Long on purpose: the per-op paths (a plain async call, a copy or kernel finishing) are
        inlined because in CPython function calls dominate the cost per op; the general cases
        go through host_step / drain / finish. See benchmarks/bench_engine.py.
        """
        heap, copies, blocks, todo = self.heap, self.copies, self.blocks, self.todo
        (drain, examine), host_step, finish, to_engine = (
            self.make_drain(), self.host_step, self.finish, self.engine_entries()
        )  # fmt: skip
        plan = self.plan
        host_l, kind_l, stream_l, queue_l, cost_l, run_l = (
            plan.host, plan.kind, plan.stream, plan.queue, plan.cost, plan.run
        )  # fmt: skip
        quiet, tail, done, end = self.quiet, self.tail, self.done, self.end
        queue_head, queue_len, next_in_queue = self.queue_head, self.queue_len, self.next_in_queue
        ready_at, issue_end, latency = self.ready_at, self.issue_end, self.launch_latency
        # Without completion groups or queue dependencies a kernel's end is handled inline.
        plain = not (self.signal_delay or self.track_queue_delay)
        # Without dependency latencies the queues waiting for an op are examined at once.
        release = (
            self.make_release(examine) if self.dep_latency is not None else examine_at_once(todo)
        )
        engine, waiters, copy_pools = self.engine, self.waiters, self.copy_pools
        # queue_choice "free": ops choose among the connection queues 1 .. free_top as they
        # join, and the connection queues count their streams' waiting ops (FreeQueues).
        free = self.free
        free_top, waiting = (free.top, free.waiting) if free else (0, [])
        copies_dispatch, copies_finish = copies.dispatch, copies.finish
        blocks_dispatch, batch_end = blocks.dispatch, blocks.batch_end
        # The loop reads one row past the program: a host call that is never fast, and the cost
        # that puts the host past INF (where only the heap's sentinel is later), so that the
        # per-call path needs no test for the end.
        host_l = [*host_l, _END]
        cost_l = [*cost_l, INF]
        # Cancel and progress are polled about every 4096 steps: device events (counted by the
        # sequence number of the last one popped), drains and blocking host calls.
        seq = steps = poll_at = 0
        n = max(1, self.n)
        next_report = 0
        while True:
            te = heap[0][0]
            t = self.host_t
            if t <= te:
                i = self.host_i
                if host_l[i] != ENQ or not quiet[stream_l[i]]:
                    if t >= INF:  # the host is done (or waits) and so is the device
                        break
                    host_step(t)
                    steps += 1
                else:
                    # Inlined fast path of host_step + enqueue + stream_deps (a plain async call
                    # on a stream with nothing new to wait for): this runs once per op, for
                    # call after call until the next device event or other work at t. (Only a
                    # call at the head of its queue can give the engines work: stop after it.)
                    stop = self.dirty != 0
                    while True:
                        # What it waits for is its stream predecessor, or for an event wait as
                        # RunState._event_tables set (which also drew the event edges).
                        s = stream_l[i]
                        tail[s] = i
                        q = queue_l[i]
                        if q <= free_top and q:
                            q = free.choose(i, s)  # type: ignore[union-attr]
                        ready_at[i] = t + latency[kind_l[i]]
                        queued = queue_len[q]
                        if queued:  # behind other ops: it leaves when they have
                            queue_len[q] = queued + 1
                        else:  # the head of its queue: examined now, as drain would
                            stop = True
                            queue_len[q] = 1
                            queue_head[q] = i
                            examine(q, t)
                        issue_end[i] = t
                        i += 1
                        next_t = t + cost_l[i]
                        # (The heap changes only under a head, which stops the run: te holds.)
                        if stop or next_t > te or host_l[i] != ENQ or not quiet[stream_l[i]]:
                            break
                        t = next_t
                    self.host_i = i
                    self.host_t = next_t
                    if not (todo or self.dirty):
                        continue  # nothing else to do at t
            else:
                t, seq, tag, a, b = heappop(heap)
                if tag == EV_TIMER:
                    queued = queue_len[a]
                    if b >= 0 and queued and queue_head[a] == b:
                        # The hinted head leaves now (drain's examination, already done when
                        # the timer was set, would find it ready).
                        queued -= 1
                        queue_len[a] = queued
                        if queued:
                            queue_head[a] = next_in_queue[b]
                        if a <= free_top and a:
                            waiting[stream_l[b]] -= 1
                        to_engine[run_l[b]](b, t)
                        if queued:  # the next op waits for it: re-examine then
                            ws = waiters[b]
                            if ws is None:
                                waiters[b] = [a]
                            else:
                                ws.append(a)
                    else:
                        todo.append(a)
                elif tag == EV_COPY:
                    if b != a.version:  # stale: the copy's speed changed since
                        if b < 0:  # the engine's rest is over: it may take its next copy
                            self.dirty |= _COPIES
                        elif not self.dirty:
                            continue  # nothing changed and nothing is due (todo is empty)
                    else:
                        op = copies_finish(a, t)
                        engine[op] = a.index
                        end[op] = done[op] = t  # finish(), inlined: copies are never grouped
                        ws = waiters[op]
                        if ws is not None:
                            waiters[op] = None
                            release(op, ws, t)
                        self.dirty |= _COPIES
                elif tag == EV_BATCH:
                    ended = batch_end(a, b, t)
                    if ended != SMS_IDLE:  # else nothing is left to dispatch
                        self.dirty |= _BLOCKS
                    if ended:
                        op = a.op
                        if plain:
                            end[op] = done[op] = t
                            ws = waiters[op]
                            if ws is not None:
                                waiters[op] = None
                                release(op, ws, t)
                        else:
                            finish(op, t)
                else:
                    finish(a, t)
            if todo:
                drain(t)
                steps += 1
            if self.dirty and heap[0][0] > t and self.host_t > t:
                # Nothing else happens at t: let idle engines pick their next work (copy
                # engines only if a copy is ready: most copy ends leave nothing to start).
                dirty = self.dirty
                self.dirty = 0
                if dirty & _COPIES and (copy_pools[0] or copy_pools[1]):
                    copies_dispatch(t)
                if dirty & _BLOCKS:
                    blocks_dispatch(t)
            if seq + steps >= poll_at:
                poll_at = seq + steps + 4096
                next_report = self.poll(next_report, n)

    def poll(self, next_report: int, n: int) -> int:
        if self.cancel is not None and self.cancel():
            raise SimulationCancelled("simulation cancelled")
        if self.progress is not None:
            pct = self.host_i * 100 // n
            if pct >= next_report:
                self.progress(min(0.99, pct / 100.0))
                return pct + 1
        return next_report
