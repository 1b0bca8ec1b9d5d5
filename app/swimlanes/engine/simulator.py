"""The discrete-event simulator: a host program on a model of a GPU's engines.

Semantics (each has tests in tests/engine):

1. **Host thread.** The program is issued in order; every call costs the preset's issue cost on
   the host, and an op reaches the GPU when its call returns (kernels start no earlier than
   ``kernel_launch_latency_us`` after that). Blocking calls stall the host, following CUDA's
   "API synchronization behavior": a synchronous pinned copy returns when done; a pageable H2D
   (async) returns once the data is staged at the pageable rate, and its DMA, running at the same
   rate, is pipelined with the staging (so it may start before the call returns); a synchronous
   pageable H2D first waits for earlier work (its stream sync), then stages while the DMA runs,
   so it returns as the copy ends; any D2H to pageable memory returns when the copy is done; a
   synchronous D2D returns at once. ``stream_sync``, ``event_sync``, ``device_sync`` and ``free`` (cudaFree
   synchronises the device) wait; ``host`` keeps the host busy. Synchronous copies with no stream
   go to the legacy default stream.
2. **Streams are in order.** ``event_wait`` makes later work in its stream wait for the most
   recent ``event_record`` of that event issued before the wait (never recorded: no-op); an
   ``event_record`` completes when all earlier work in its stream has; ``event_sync`` waits for
   that record (never recorded: returns at once).
3. **Legacy default stream.** Its ops wait for all earlier work in blocking streams (kinds
   ``blocking`` and ``per_thread_default``) and later work in those waits for it; ``non_blocking``
   streams are exempt. ``malloc`` and a synchronous ``memset`` are device-wide implicit
   synchronisation: work issued after them waits for all work issued before them.
4. **Hardware queues.** Hyper-Q: streams map round-robin, in creation order, onto ``connections``
   in-order queues (the legacy default stream has its own). A queue's head leaves only when it
   can run, so an op blocked at the head holds back other streams' ops behind it (a "queue"
   dependency is recorded when that actually delayed them). Fermi: one compute queue and one
   queue per copy pool, filled in issue order; each copy engine takes copies in the order its
   queue releases them (the breadth-first vs depth-first issue lesson).
5. **Copy engines** (see ``copies.py``): one copy at a time per engine, latency + bytes /
   bandwidth(size) or a measured size -> bandwidth table, pinned vs pageable rates, fluid
   bidirectional slowdown, and the choice among ready copies (measured on an H200; first come
   first served on the ``ideal`` preset). ``duration_us`` on a copy overrides the bandwidth
   model. D2D copies (read + write) and memsets run on the SMs at memory bandwidth.
6. **Block scheduler** (see ``blocks.py``): residency, waves, SM sharing, priorities, at most
   ``max_resident_kernels`` kernels.
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
import heapq
from collections.abc import Callable

from swimlanes.engine.blocks import EV_BATCH, SmWork
from swimlanes.engine.copies import D2H, EV_COPY, H2D
from swimlanes.engine.plan import (
    ENQ,
    RUN_CALLBACK,
    RUN_COPY,
    RUN_INSTANT,
    RUN_KERNEL,
    RUN_SM,
    K,
    plan_ops,
)
from swimlanes.engine.presets import DevicePreset, get_preset
from swimlanes.engine.result import build_timeline
from swimlanes.engine.state import EVENT_RECORD, EVENT_WAIT, HOST, INF, KERNEL, RunState
from swimlanes.model.document import Pipeline
from swimlanes.timeline.timeline import Timeline

EV_TIMER = 3  # re-examine a queue head whose kernel launch latency has passed
EV_CALLBACK = 4  # a host function finished
_COPIES, _BLOCKS = 1, 2  # bits of RunState.dirty: engines with new work
_H2D = K["h2d"]


class SimulationCancelled(Exception):
    """Raised by :func:`simulate` when its ``cancel`` callback returned True."""


def simulate(
    pipeline: Pipeline,
    device: DevicePreset | str = "h200",
    *,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> Timeline:
    """Simulate ``pipeline`` on ``device``; deterministic. See the module docstring."""
    preset = device if isinstance(device, DevicePreset) else get_preset(device)
    # The simulation allocates many small tuples and no reference cycles; pausing the cyclic
    # collector keeps it from rescanning the growing heap (which made big runs superlinear).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        plan = plan_ops(pipeline, preset)
        run = _Run(plan, preset, progress, cancel)
        run.loop()
    finally:
        if gc_was_enabled:
            gc.enable()
    if run.host_i < run.n:  # cannot happen: every dependency points to an earlier op
        raise RuntimeError(f"simulation stalled at program[{run.host_i}]")
    if progress is not None:
        progress(1.0)
    return build_timeline(run, pipeline.name)


class _Run(RunState):
    """One simulation: the queues' draining, the engines and the event loop."""

    def make_drain(self) -> Callable[[int], None]:
        """The function that lets every queue on the to-do list send its runnable head ops to
        their engines (a closure: it runs once per op, and this saves its set-up)."""
        todo, queues, done, waiters = self.todo, self.queues, self.done, self.waiters
        run_of, start, dispatch, finish = self.plan.run, self.start, self.dispatch, self.finish
        track, heap, next_seq, check_host = (
            self.track_queue_delay, self.heap, self.next_seq, self.check_host
        )  # fmt: skip
        note_queue_delay = self.note_queue_delay

        def drain(t: int) -> None:
            while todo:
                q = todo.pop()
                if q == HOST:
                    if self.host_wait is not None:
                        check_host(t)
                    continue
                queue = queues[q]
                while queue:
                    i, deps, ready, arrived = head = queue[0]
                    for d in deps:
                        if done[d] < 0:
                            waiters.setdefault(d, []).append(q)
                            break
                    else:
                        if ready > t:
                            heapq.heappush(heap, (ready, next_seq(), EV_TIMER, q, 0))
                            break
                        queue.popleft()
                        if track:
                            note_queue_delay(q, head, t)
                        if run_of[i] == RUN_INSTANT:  # event record / wait: done on arrival
                            start[i] = t
                            finish(i, t)
                        else:
                            dispatch(i, t, q)
                        continue
                    break

        return drain

    def note_queue_delay(self, q: int, head: tuple, t: int) -> None:
        """Record a "queue" dependency when another stream's op held ``head`` back in ``q``."""
        i, deps, ready, arrived = head
        s = self.plan.stream[i]
        prev = self.queue_last_stream[q]
        self.queue_last_stream[q] = s
        if prev < 0 or prev == s or self.queue_prev_pop_t[q] != t:
            self.queue_prev_pop[q] = i
            self.queue_prev_pop_t[q] = t
            return
        own = max(ready, arrived, max((self.done[d] for d in deps), default=0))
        if own < t:
            self.edge(self.queue_prev_pop[q], i, "queue")
        self.queue_prev_pop[q] = i
        self.queue_prev_pop_t[q] = t

    # -- engines --------------------------------------------------------------------------------
    def dispatch(self, i: int, t: int, q: int) -> None:
        """Hand op ``i``, which just left hardware queue ``q``, to whatever runs it."""
        plan = self.plan
        run = plan.run[i]
        if run == RUN_COPY:
            # The copy engines' ready pools: (ready_time, op, stream, direction, work_ns).
            direction = H2D if plan.kind[i] == _H2D else D2H
            pool = self.copy_pools[direction]
            pool.append((t, i, plan.stream[i], direction, plan.solo[i]))
            self.dirty |= _COPIES
        elif run in (RUN_KERNEL, RUN_SM):
            if run == RUN_KERNEL:
                blocks, cost, max_res, block_ns = plan.kernel[i]
                if self.signal_delay:
                    self.group_kernel(i, plan.stream[i])
            else:
                blocks, cost, max_res, block_ns = self.sm_copy_shape(plan.solo[i])
            prio = plan.priority[plan.stream[i]]
            self.blocks.add(SmWork(i, prio, self.next_seq(), blocks, cost, max_res, block_ns))
            self.engine[i] = self.compute_engine
            self.dirty |= _BLOCKS
        elif run == RUN_CALLBACK and plan.solo[i] > 0:
            self.start[i] = t
            heapq.heappush(self.heap, (t + plan.solo[i], self.next_seq(), EV_CALLBACK, i, 0))
        else:
            self.start[i] = t
            self.finish(i, t)

    def sm_copy_shape(self, solo: int) -> tuple[int, int, int, float]:
        """D2D copies and memsets: one wave over every SM at memory bandwidth."""
        p = self.preset
        per_sm = max(1, min(p.max_blocks_per_sm, p.max_threads_per_sm // 256))
        return p.sm_count, p.max_threads_per_sm // per_sm, p.sm_count * per_sm, float(max(1, solo))

    def finish(self, i: int, t: int) -> None:
        """Op ``i`` ended on its engine at ``t``; make it visible to dependents."""
        self.end[i] = t
        if self.signal_delay:
            self.finish_grouped(i, t)
            return
        self.done[i] = t
        ws = self.waiters.pop(i, None)
        if ws:
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
            ws = self.waiters.pop(x, None)
            if ws:
                self.todo.extend(ws)

    # -- the loop -------------------------------------------------------------------------------
    def loop(self) -> None:
        """Run the event loop to the end of the program and of all device work.

        Long on purpose: the per-op paths (a plain async call, a copy or kernel finishing) are
        inlined because in CPython function calls dominate the cost per op; the general cases
        go through host_step / drain / finish. See benchmarks/bench_engine.py.
        """
        heap, copies, blocks, todo = self.heap, self.copies, self.blocks, self.todo
        host_step, drain, finish, engine = (
            self.host_step,
            self.make_drain(),
            self.finish,
            self.engine,
        )
        heappop = heapq.heappop
        plan = self.plan
        host_l, kind_l, stream_l, queue_l, cost_l = (
            plan.host, plan.kind, plan.stream, plan.queue, plan.cost
        )  # fmt: skip
        quiet, tail, queues, done = self.quiet, self.tail, self.queues, self.done
        issue_start, issue_end, latency = self.issue_start, self.issue_end, self.launch_latency
        plain = not (self.signal_delay or self.track_queue_delay)  # no grouping, no queue deps
        last_record, event_of = self.last_record, plan.event
        end, waiters_pop, event_edges = self.end, self.waiters.pop, self.event_edges
        copies_dispatch, blocks_dispatch = copies.dispatch, blocks.dispatch
        steps = 0
        n_ops = self.n
        n = max(1, n_ops)
        next_report = 0
        while True:
            te = heap[0][0] if heap else INF
            th = self.host_t
            if th <= te:
                if th == INF:
                    break
                t = th
                i = self.host_i
                s = stream_l[i]
                k = kind_l[i]
                if host_l[i] != ENQ or not quiet[s] or not plain:
                    host_step(t)
                else:
                    # Inlined fast path of host_step + enqueue + stream_deps (a plain async call
                    # on a stream with nothing new to wait for): this runs once per op.
                    p = tail[s]
                    tail[s] = i
                    deps = (p,) if p >= 0 else ()
                    r = -1
                    if k == EVENT_RECORD:
                        last_record[event_of.get(i)] = i
                    elif k == EVENT_WAIT:
                        r = last_record.get(event_of.get(i), -1)
                        if r >= 0:
                            deps = (*deps, r)
                            event_edges[s].append(r)  # drawn from the next op of the stream
                            quiet[s] = False
                    q = queue_l[i]
                    queue = queues[q]
                    ready = t + latency if k == KERNEL else t
                    if (
                        not queue
                        and ready <= t
                        and (p < 0 or done[p] >= 0)
                        and (r < 0 or done[r] >= 0)
                    ):
                        self.dispatch(i, t, q)
                    else:
                        queue.append((i, deps, ready, t))
                        if len(queue) == 1:
                            todo.append(q)
                    issue_end[i] = t
                    i += 1
                    self.host_i = i
                    if i < n_ops:
                        issue_start[i] = t
                        self.host_t = t + cost_l[i]
                    else:
                        self.host_t = INF
            else:
                t, _, tag, a, b = heappop(heap)
                if tag == EV_COPY:
                    op = copies.finish(a, b, t)
                    if op >= 0:
                        engine[op] = a.index
                        end[op] = done[op] = t  # finish(), inlined: copies are never grouped
                        ws = waiters_pop(op, None)
                        if ws:
                            todo.extend(ws)
                        self.dirty |= _COPIES
                elif tag == EV_BATCH:
                    if blocks.batch_end(a, b):
                        if plain:
                            op = a.op
                            end[op] = done[op] = t
                            ws = waiters_pop(op, None)
                            if ws:
                                todo.extend(ws)
                        else:
                            finish(a.op, t)
                    self.dirty |= _BLOCKS
                elif tag == EV_TIMER:
                    todo.append(a)
                else:
                    finish(a, t)
            if todo:
                drain(t)
            dirty = self.dirty
            if dirty and (heap[0][0] if heap else INF) > t and self.host_t > t:
                # Nothing else happens at t: let idle engines pick their next work.
                self.dirty = 0
                if dirty & _COPIES:
                    copies_dispatch(t)
                if dirty & _BLOCKS:
                    blocks_dispatch(t)
            steps += 1
            if not steps & 4095:
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
