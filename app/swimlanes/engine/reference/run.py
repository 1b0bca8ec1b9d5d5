"""The reference simulation: the host thread, streams, hardware queues and the event loop.

The rules are the package docstring's; each is implemented in one method here (or in
``devices.py``), named after it. What the run keeps per op is in ``run_state.py``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from swimlanes.engine.presets import DevicePreset
from swimlanes.engine.reference.devices import (
    D2H,
    H2D,
    BatchEnd,
    CallbackEnd,
    Clock,
    CopyEnd,
    CopyEngines,
    CopyRestOver,
    QueueTimer,
    ReadyCopy,
    Sms,
    SmWork,
)
from swimlanes.engine.reference.program import (
    NO_CLASS,
    Engine,
    HostCall,
    OpFacts,
    StreamClass,
    StreamFacts,
    event_records,
    latency_table,
    next_in_stream,
    shared_queues,
)
from swimlanes.engine.reference.run_state import (
    HOST,
    NEVER,
    SYNC_RETURN_KEY,
    FermiGroup,
    OpState,
    SyncScope,
)


class Simulation:
    """One run of a program on a preset (see the package docstring)."""

    def __init__(
        self,
        ops: list[OpFacts],
        streams: list[StreamFacts],
        queue_count: int,
        preset: DevicePreset,
        fast_engine_ties: bool = False,
    ) -> None:
        self.ops, self.streams, self.preset = ops, streams, preset
        # True: order what happens at one instant as the fast engine does (the package
        # docstring's known discrepancies).
        self.fast_engine_ties = fast_engine_ties
        self.state = [OpState(engine_class=op.engine_class) for op in ops]
        self.edges: list[tuple[int, int, str]] = []
        self.clock = Clock()
        self.copies = CopyEngines(preset, self.clock)
        self.sms = Sms(preset, self.clock)
        self.compute_engine = len(self.copies.names)
        self.queues: list[deque[int]] = [deque() for _ in range(queue_count)]
        self.to_examine: deque[int] = deque()  # queues (or HOST) to look at now, in order
        self.new_work = False  # an engine got work (or got free) in this instant
        self.arrivals = 0  # kernels that reached the block scheduler so far
        self.latency = latency_table(preset)
        # Per callback thread (device): when it woke for the run's first host function.
        self.callback_wake: dict[int, int] = {}
        # Streams: their last enqueued op, and what they have synchronised with already.
        n_streams = len(streams)
        self.tail = [-1] * n_streams
        self.covered = [-1] * n_streams  # each blocking stream's op the legacy stream waited on
        self.seen_default = [-1] * n_streams  # the legacy op a blocking stream waited on
        self.seen_barrier = [0] * n_streams
        self.last_default = -1
        self.barrier_id = 0
        self.barrier_ops: list[int] = []
        self.record_of = event_records(ops)
        self.next_in_stream = next_in_stream(ops)
        # Hardware queues shared by streams: which stream left each last, and when.
        self.queue_last = [(-1, -1, -1)] * queue_count  # (stream, op, time)
        self.shared_queues = shared_queues(ops, streams, preset)
        # queue_choice "free": each device's round-robin over its connection queues (by the
        # first of them), for ops issued while every one of them holds an op.
        self.queue_turn: dict[int, int] = {}
        self.fermi_groups: dict[int, FermiGroup] = {}
        self.last_kernel: tuple[int, int, FermiGroup] = (-2, -1, FermiGroup())
        # The host thread.
        gap = round(preset.host_call_gap_us * 1000.0)
        self.host_i = 0
        self.host_t = ops[0].cost_ns - gap if ops else NEVER
        self.host_wait: list[int] = []

    # -- the event loop ------------------------------------------------------------------------
    def run(self) -> None:
        """Host calls at an instant come before device events at it; device events at one
        instant in the order they were scheduled; after each, every queue to look at is looked
        at; idle engines take new work once nothing else happens at the instant."""
        self._draw_event_edges()
        while True:
            next_event = self.clock.next_time()
            if next_event is None or self.host_t <= next_event:
                if self.host_t >= NEVER:
                    break
                t = self.host_t
                self.host_call(t)
            else:
                t, event = self.clock.pop()
                self.handle(event, t)
            self.examine_all(t)
            next_event = self.clock.next_time()
            if self.new_work and (next_event is None or next_event > t) and self.host_t > t:
                self.new_work = False
                started: list[int] = []
                if self.copies.has_ready():
                    self.copies.dispatch(t, started)
                self.sms.dispatch(t, started)
                for op in started:
                    self.state[op].start = t

    def handle(self, event: object, t: int) -> None:
        if isinstance(event, QueueTimer):
            self.examine(event.queue, t)
        elif isinstance(event, CopyEnd):
            if event.version == event.engine.version:  # else its speed changed since: stale
                op = self.copies.finish(event.engine, t)
                self.state[op].engine = event.engine.index
                self.complete(op, t)
                self.new_work = True
        elif isinstance(event, CopyRestOver):
            self.new_work = True
        elif isinstance(event, BatchEnd):
            self.new_work = True
            if self.sms.batch_end(event.work, event.blocks, t):
                self.complete(event.work.op, t)
        elif isinstance(event, CallbackEnd):
            self.complete(event.op, t)

    # -- rule 1: the host thread ----------------------------------------------------------------
    def host_call(self, t: int) -> None:
        """The call of op ``host_i`` takes effect at ``t`` (its issue cost spent)."""
        i = self.host_i
        op, state = self.ops[i], self.state[i]
        call = op.call
        busy = 0
        wait: list[int] = []
        if op.engine is not None:
            if call is HostCall.ENQUEUE_BARRIER:
                self.implicit_sync()  # the synchronous memset waits for all earlier work
            self.enqueue(i, t)
            if call is HostCall.ENQUEUE_AND_WAIT:
                wait = [i]
            elif call is HostCall.ENQUEUE_AND_STAGE:
                busy = op.stage_ns or 0
                chunk = self.preset.pageable_h2d_chunk_bytes
                if chunk:  # the DMA may start once the first chunk is staged
                    first = busy if op.nbytes <= chunk else busy * chunk // op.nbytes
                    state.ready_at += first
            elif call is HostCall.ENQUEUE_BARRIER:
                self.barrier_ops = [i]  # and later work waits for it
                self.barrier_id += 1
        elif call is HostCall.WAIT_STREAM:
            last = self.tail[op.stream] if op.stream >= 0 else -1
            wait = [last] if last >= 0 else []
        elif call is HostCall.WAIT_EVENT:
            record = self.record_of.get(i, -1)
            wait = [record] if record >= 0 else []
        elif call is HostCall.WAIT_ALL:
            wait = [x for x in self.tail if x >= 0]
        elif call is HostCall.BUSY:
            busy = op.solo_ns
        elif call is HostCall.BARRIER:
            self.implicit_sync()
        if wait:
            self.host_wait = wait
            self.host_t = NEVER
            self.check_host(t)
        else:
            self.host_return(t + busy, -1)

    def check_host(self, t: int) -> None:
        """A blocking call returns once all it waits for is done, ``sync_return`` later."""
        for x in self.host_wait:
            if self.state[x].done < 0:
                self.state[x].waiters.append(HOST)
                return
        last = max(self.host_wait, key=lambda x: self.state[x].done)
        self.host_wait = []
        op = self.ops[self.host_i]
        lag = self.preset.sync_return_ns(SYNC_RETURN_KEY[op.call])
        if op.call is HostCall.ENQUEUE_AND_WAIT and op.stage_ns is not None:
            lag += op.stage_ns  # a pageable D2H returns once its last chunk is copied out
        self.host_return(max(t, self.state[last].done + lag) if lag else t, last)

    def host_return(self, t: int, released_by: int) -> None:
        i = self.host_i
        self.state[i].issue_end = t
        if released_by >= 0 and released_by != i:
            self.edges.append((released_by, i, "host"))
        self.host_i = i + 1
        self.host_t = t + self.ops[i + 1].cost_ns if i + 1 < len(self.ops) else NEVER

    # -- rules 2 and 3: stream order, events, the legacy default stream, implicit syncs -----------
    def enqueue(self, i: int, t: int) -> None:
        op, state = self.ops[i], self.state[i]
        s = op.stream
        state.deps = self.stream_deps(i, s)
        self.tail[s] = i
        state.ready_at = t + self.launch_latency(op)
        q = self.hardware_queue(i)
        queue = self.queues[q]
        queue.append(i)
        if len(queue) == 1:  # at the head: it may leave at once
            self.to_examine.append(q)

    def hardware_queue(self, i: int) -> int:
        """The queue op ``i`` joins as it reaches the GPU: its planned one, or with
        ``queue_choice`` "free" one of the connection queues it may choose (rule 4)."""
        op = self.ops[i]
        if not op.choices:
            return op.queue
        for q in op.choices:  # its stream's op waiting in one: behind it, in stream order
            if any(self.ops[x].stream == op.stream for x in self.queues[q]):
                return q
        for q in op.choices:  # else the first empty one
            if not self.queues[q]:
                return q
        # Else every queue's head is held: the next queue in turn (of this device's queues).
        turn = self.queue_turn.get(op.choices.start, 0)
        self.queue_turn[op.choices.start] = (turn + 1) % len(op.choices)
        return op.choices[turn]

    def stream_deps(self, i: int, s: int) -> tuple[int, ...]:
        """The ops op ``i`` waits for on its stream ``s``; draws the edges."""
        prev = self.tail[s]
        deps = [prev] if prev >= 0 else []
        if prev >= 0:
            self.edges.append((prev, i, "stream"))
        if self.ops[i].kind == "event_wait" and self.record_of.get(i, -1) >= 0:
            deps.append(self.record_of[i])
        scope, streams = self.sync_scope(s)
        klass = self.streams[s].klass
        if klass is StreamClass.LEGACY:
            # It waits for every blocking stream's last op (once per op).
            for b in streams:
                last = self.tail[b]
                blocking = self.streams[b].klass is StreamClass.BLOCKING
                if blocking and last >= 0 and last != self.covered[b]:
                    deps.append(last)
                    self.edges.append((last, i, "default_stream"))
                    self.covered[b] = last
            scope.last_default = i
        elif klass is StreamClass.BLOCKING:
            # It waits for the last legacy op it has not waited for yet.
            last = scope.last_default
            if last >= 0 and last != self.seen_default[s]:
                self.seen_default[s] = last
                deps.append(last)
                self.edges.append((last, i, "default_stream"))
        if self.seen_barrier[s] != scope.barrier_id:  # its first op after an implicit sync
            self.seen_barrier[s] = scope.barrier_id
            for b in scope.barrier_ops:
                if b not in (prev, i):
                    deps.append(b)
                    self.edges.append((b, i, "default_stream"))
        return tuple(deps)

    def sync_scope(self, s: int) -> tuple[SyncScope, Iterable[int]]:
        """What holds stream ``s``'s legacy-default and implicit-synchronisation state, and the
        streams that state covers: the one device, all of them (a device of several, its own)."""
        return self, range(len(self.streams))

    def implicit_sync(self) -> None:
        """Device-wide implicit synchronisation: later work waits for all work not done yet."""
        self.barrier_ops = [x for x in self.tail if x >= 0 and self.state[x].done < 0]
        self.barrier_id += 1

    def launch_latency(self, op: OpFacts) -> int:
        us = {
            "kernel": self.preset.kernel_launch_latency_us,
            "h2d": self.preset.copy_launch_latency_us,
            "d2h": self.preset.copy_launch_latency_us,
            "host_func": self.preset.host_func_latency_us,
        }.get(op.kind, 0.0)
        return round(us * 1000.0)

    def _draw_event_edges(self) -> None:
        """Each event wait's edge: from its record to the next op of its stream that is not
        itself a wait."""
        for i, op in enumerate(self.ops):
            record = self.record_of.get(i, -1)
            if op.kind != "event_wait" or record < 0:
                continue
            x = self.next_in_stream[i]
            while x >= 0 and self.ops[x].kind == "event_wait":
                x = self.next_in_stream[x]
            if x >= 0:
                self.edges.append((record, x, "event"))

    # -- rule 4: hardware queues ----------------------------------------------------------------
    def examine_all(self, t: int) -> None:
        while self.to_examine:
            q = self.to_examine.pop() if self.fast_engine_ties else self.to_examine.popleft()
            if q != HOST:
                self.examine(q, t)
            elif self.host_wait:
                self.check_host(t)

    def examine(self, q: int, t: int) -> None:
        """Send queue ``q``'s head ops to their engines while they may go."""
        queue = self.queues[q]
        while queue:
            i = queue[0]
            state = self.state[i]
            blocked = next((d for d in state.deps if self.state[d].done < 0), -1)
            if blocked >= 0:
                self.state[blocked].waiters.append(q)
                return
            ready = self.may_start(i)
            if ready > t:
                self.clock.at(ready, QueueTimer(q))
                return
            queue.popleft()
            if self.shared_queues:
                self.note_queue_delay(q, i, ready, t)
            self.to_engine(i, t)

    def may_start(self, i: int) -> int:
        """When op ``i``, its dependencies done, may leave its queue: its call's latency, and
        each dependency's latency from the engine it ran on to this op's."""
        state = self.state[i]
        ready = state.ready_at
        if self.latency is None or not state.deps:
            return ready
        if state.engine_class == NO_CLASS:  # an event op passes on its releaser's engine
            last = max(state.deps, key=lambda d: self.state[d].done)
            state.engine_class = self.state[last].engine_class
            return ready
        for d in state.deps:
            delay = self.latency(self.state[d].engine_class, state.engine_class)
            ready = max(ready, self.state[d].done + delay)
        return ready

    def note_queue_delay(self, q: int, i: int, ready: int, t: int) -> None:
        """A "queue" edge: op ``i`` leaves right after another stream's op left the same
        queue at the same instant, and could have left earlier but for that op."""
        s = self.ops[i].stream
        prev_stream, prev_op, prev_t = self.queue_last[q]
        self.queue_last[q] = (s, i, t)
        if prev_stream < 0 or prev_stream == s or prev_t != t:
            return
        own = max([ready, *(self.state[d].done for d in self.state[i].deps)])
        if own < t:
            self.edges.append((prev_op, i, "queue"))

    def complete(self, i: int, t: int) -> None:
        """Op ``i`` ended on its engine at ``t``: its waiters look again (rule 8 aside)."""
        self.state[i].end = t
        if self.preset.completion_signal_delay and self.ops[i].kind == "kernel":
            group = self.fermi_groups.pop(i)
            group.running -= 1
            group.ended.append(i)
            if group.running:
                return
            visible, group.ended = group.ended, []
        else:
            visible = [i]
        for x in visible:
            self.state[x].done = t
            waiters, self.state[x].waiters = self.state[x].waiters, []
            if self.fast_engine_ties and self.latency is not None and self._wakes_late(x):
                self.wake_after_latency(x, waiters, t)
            else:
                self.to_examine.extend(waiters)

    def _wakes_late(self, i: int) -> bool:
        """The fast engine's ties only: whether op ``i``'s end wakes its waiters after their
        latency (copies, and kernels where no queue is shared and there is no Fermi group)."""
        if self.ops[i].engine is Engine.COPY:
            return True
        shared = self.shared_queues or self.preset.completion_signal_delay
        return self.ops[i].engine in (Engine.KERNEL, Engine.SM_COPY) and not shared

    def wake_after_latency(self, i: int, waiters: list[int], t: int) -> None:
        """The fast engine's ties only: each queue waiting for ``i`` looks again once the
        latency from ``i`` to its head has passed (at once without one), rather than at once
        (where it finds its head's start in the future and looks again then): the same
        starts, looked at in another order within an instant."""
        latency = self.latency
        assert latency is not None  # only called with a latency table
        for q in waiters:
            if q != HOST and self.queues[q]:
                head = self.state[self.queues[q][0]]
                delay = latency(self.state[i].engine_class, head.engine_class)
                if delay:
                    self.clock.at(t + delay, QueueTimer(q))
                    continue
            self.to_examine.append(q)

    # -- rules 5 to 8: engines --------------------------------------------------------------------
    def to_engine(self, i: int, t: int) -> None:
        op, state = self.ops[i], self.state[i]
        if op.engine is Engine.INSTANT:
            state.start = t
            self.complete(i, t)
        elif op.engine is Engine.CALLBACK:
            # Rule 5: the run's first host function wakes the idle callback thread, which
            # takes host_func_cold_latency_us; host functions reaching it sooner wait for that.
            thread = self.callback_thread(i)
            if thread not in self.callback_wake:
                self.callback_wake[thread] = t + self.preset.cold_callback_extra_ns()
            state.start = max(t, self.callback_wake[thread])
            if op.solo_ns > 0 or state.start > t:
                self.clock.at(state.start + op.solo_ns, CallbackEnd(i))
            else:
                self.complete(i, t)
        elif op.engine is Engine.COPY:
            direction = H2D if op.kind == "h2d" else D2H
            key = op.stream if op.copy_key is None else op.copy_key
            ready = ReadyCopy(t, i, key, direction, op.solo_ns)
            self.copies.pool_of(direction).append(ready)
            self.new_work = True
        else:
            self.to_sms(i, t)

    def callback_thread(self, i: int) -> int:
        """The callback thread that runs host function ``i``: one per device."""
        return 0

    def arrival(self, i: int, t: int) -> tuple[int, ...]:
        """The block scheduler serves kernels of one priority in the order they reached it,
        and those that reached it at one instant in program order (the fast engine: in the
        order it handled them: the package docstring's known discrepancies)."""
        self.arrivals += 1
        return (self.arrivals,) if self.fast_engine_ties else (t, i)

    def to_sms(self, i: int, t: int) -> None:
        op, p = self.ops[i], self.preset
        if op.kernel is not None:
            if p.completion_signal_delay:
                self.join_fermi_group(i, op.stream)
            shape = op.kernel
            work = SmWork(i, self.streams[op.stream].priority, self.arrival(i, t), shape.blocks,
                          shape.slots_per_block, shape.max_resident, shape.block_ns,
                          round(p.kernel_overhead_us * 1000.0))  # fmt: skip
        else:  # d2d and memset: one wave of 256-thread blocks over every SM
            per_sm = max(1, min(p.max_blocks_per_sm, p.max_threads_per_sm // 256))
            work = SmWork(i, self.streams[op.stream].priority, self.arrival(i, t), p.sm_count,
                          p.max_threads_per_sm // per_sm, p.sm_count * per_sm,
                          float(max(1, op.solo_ns)))  # fmt: skip
        self.sms.add(work)
        self.state[i].engine = self.compute_engine
        self.new_work = True

    def join_fermi_group(self, i: int, s: int) -> None:
        """A kernel launched right after the kernel issued just before it, from another stream,
        while that one's group runs, joins that group."""
        prev, prev_stream, group = self.last_kernel
        if not (prev == i - 1 and prev_stream != s and group.running > 0):
            group = FermiGroup()
        group.running += 1
        self.fermi_groups[i] = group
        self.last_kernel = (i, s, group)
