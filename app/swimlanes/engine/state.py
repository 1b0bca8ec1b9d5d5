"""The state of one simulation: the host thread, streams, events and dependency bookkeeping.

``RunState`` issues the host program (see the simulator module docstring for the semantics)
and puts each enqueued op, with the ops it must wait for, on its hardware queue;
``simulator._Run`` adds the queues' draining, the engines and the event loop.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from swimlanes.engine.blocks import BlockScheduler
from swimlanes.engine.copies import CopyEngines
from swimlanes.engine.plan import (
    BARRIER,
    BUSY,
    ENQ,
    ENQ_BARRIER,
    ENQ_STAGE,
    ENQ_WAIT,
    ENQUEUED,
    RUN_CALLBACK,
    RUN_COPY,
    RUN_KERNEL,
    RUN_SM,
    STREAM_BLOCKING,
    STREAM_LEGACY,
    WAIT_ALL,
    WAIT_EVENT,
    WAIT_STREAM,
    K,
    Plan,
    chain_links,
    run_of,
)
from swimlanes.engine.presets import DevicePreset
from swimlanes.engine.queue_choice import FreeQueues
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME

HOST = -1  # waiter id of the host thread
INF = 1 << 62  # the host's time while it waits, or when it is done
NEVER = 1 << 63  # the heap sentinel's time: later than the host, even past INF
_DEP = {k: n for n, k in enumerate(DEP_KINDS)}
EVENT_WAIT, EVENT_RECORD, KERNEL = K["event_wait"], K["event_record"], K["kernel"]
EVENT_SYNC = K["event_sync"]


def _last_records(rows: np.ndarray, kinds: np.ndarray, events: list, n: int) -> np.ndarray:
    """For each of ``rows`` (event ops of kinds ``kinds``, in program order), the latest
    event_record of the same event (``events`` names them per op) up to it; -1 if none."""
    names: dict[str | None, int] = {}
    ids = map(names.setdefault, map(events.__getitem__, rows.tolist()), itertools.count())
    event = np.fromiter(ids, dtype=np.int64, count=len(rows))
    order = np.argsort(event, kind="stable")  # by event, in program order within one
    grouped, row = event[order], rows[order]
    # The running maximum of (event, record row) keys is, within an event's group, its latest
    # record so far; the group's floor key (event, -1) is above every earlier group's keys.
    span = n + 1
    key = np.where(kinds[order] == EVENT_RECORD, grouped * span + row, grouped * span - 1)
    latest = np.maximum.accumulate(key) - grouped * span
    out = np.empty(len(rows), dtype=np.int64)
    out[order] = latest
    return out


def _dependency_latency(plan: Plan, preset: DevicePreset) -> tuple[list[int] | None, list[int]]:
    """The latency table and each op's engine class, or (None, []) when the preset has none.

    Engine classes: 0 the SMs, 1 H2D copies (and all copies on a shared engine), 2 D2H copies,
    3 host functions, -1 none (event records and waits, host-only ops). The table, indexed
    ``(class of the op waited for + 1) * 5 + (class of the waiting op + 1)``, gives the delay
    from the first's completion to the second's start. An event record or wait takes the class
    of the op that released it (``origin``), so a chain through events costs one latency.
    Copies of one engine class wait for none: their engine spaces them (``copy_engine_gap_us``).
    """
    sms = round(preset.kernel_dependency_latency_us * 1000.0)
    other = round(preset.dependency_latency_us * 1000.0)
    callback = round(preset.host_func_latency_us * 1000.0)
    if not (sms or other or callback):
        return None, []
    table = [
        0
        if a < 0 or b < 0
        else callback  # a host function waits for its callback thread to wake
        if b == 3
        else (other if a != b else sms if a == 0 else 0)
        for a in range(-1, 4)
        for b in range(-1, 4)
    ]
    h2d, shared = K["h2d"], preset.shared_copy_engine
    by_run = {RUN_KERNEL: 0, RUN_SM: 0, RUN_CALLBACK: 3}
    # An op's class follows from its kind: worked out per kind, then gathered by numpy.
    by_kind = np.asarray(
        [
            (1 if k == h2d or shared else 2) if run_of(k) == RUN_COPY else by_run.get(run_of(k), -1)
            for k in range(len(K))
        ],
        dtype=np.int64,
    )
    kinds = plan.arrays.get("kind", np.zeros(0, np.int8))
    return table, by_kind[kinds].tolist()


class RunState:
    """Columns, queues and stream bookkeeping of one simulation."""

    # Slots: an instance with this many attributes outgrows CPython's fast (split) instance
    # dicts, and the event loop reads and writes some of them once per op.
    __slots__ = (
        "plan", "preset", "n", "progress", "cancel", "issue_end", "start", "end", "columns", "done",
        "engine", "deps", "heap", "next_seq", "copies", "blocks", "compute_engine", "copy_pools",
        "queue_head", "queue_len", "next_in_queue", "deps_of", "prev_array", "prev_in_stream",
        "ready_at", "queue_last_stream", "queue_prev_pop", "queue_prev_pop_t", "launch_latency",
        "track_queue_delay", "waiters", "todo", "tail", "covered", "seen_default", "seen_barrier",
        "quiet", "last_default", "barrier_id", "barrier_ops", "record_of",
        "host_i", "host_t", "host_wait", "dirty", "signal_delay", "groups", "last_kernel",
        "kernel_tail", "sync_return", "dep_latency", "origin", "call_gap", "h2d_chunk",
        "callback_cold", "callback_wake", "free",
    )  # fmt: skip

    def __init__(
        self,
        plan: Plan,
        preset: DevicePreset,
        progress: Callable[[float], None] | None,
        cancel: Callable[[], bool] | None,
    ) -> None:
        n = plan.n_ops
        self.plan, self.preset, self.n = plan, preset, n
        self.progress, self.cancel = progress, cancel
        # Result columns: numpy arrays, which the loop writes through memoryviews (an item
        # store costs half an array.array's, whose conversion goes through the argument
        # parser, and keeps no int object alive). The Timeline takes the arrays as they are.
        # (A call starts when the previous one returns, so issue_start is issue_end shifted by
        # one: result.py derives it.)
        self.columns = {
            name: np.full(n, NO_TIME, np.int64) for name in ("issue_end", "start", "end")
        }
        self.columns["engine"] = np.full(n, -1, np.int16)
        # (numpy's stubs give ndarray the buffer protocol from Python 3.12 on only: hence the
        # arg-type ignores on memoryview(array) below.)
        self.issue_end, self.start, self.end, self.engine = (
            memoryview(self.columns[name])  # type: ignore[arg-type]
            for name in ("issue_end", "start", "end", "engine")
        )
        self.done = [-1] * n  # when each op's completion is visible to dependents
        self.deps: tuple[list[int], list[int], list[int]] = ([], [], [])
        # Device events (time, seq, tag, a, b). The sentinel at NEVER is never popped (the host,
        # done or not, is never later) and spares the loop its empty-heap tests.
        self.heap: list = [(NEVER, -1, 0, None, 0)]
        seq = itertools.count()
        self.next_seq = seq.__next__
        self.copies = CopyEngines(preset, self.heap, self.next_seq, self.start)
        self.blocks = BlockScheduler(preset, self.heap, self.next_seq, self.start)
        self.compute_engine = len(self.copies.names)
        self.copy_pools = [self.copies.ready[0], self.copies.ready[-1]]  # by direction
        n_streams = len(plan.stream_names)
        # Hardware queues. Ops join their queue in program order, so a queue is a chain
        # through the ops (next_in_queue) from its head, of queue_len ops. What an op waits
        # for and when it may start are kept per op in flat columns: the host runs far ahead
        # of the device, and an op's queue entry is read long after it was written, so it
        # should cost as few scattered objects as possible.
        self.queue_head = [-1] * plan.queue_count
        self.queue_len = [0] * plan.queue_count
        # What each queued op waits for: None when that is only its stream predecessor
        # (prev_in_stream, -1 if none), which the fast path of the loop leaves implicit.
        self.deps_of: list[tuple[int, ...] | None] = [None] * n
        arrays = plan.arrays
        # Each enqueued op's previous and next op in its stream.
        empty = np.zeros(0, np.int64)
        self.prev_array: np.ndarray
        self.prev_array, next_in_stream = (
            chain_links(arrays["stream"], arrays["run"] >= 0) if n else (empty, empty)
        )
        self.prev_in_stream = memoryview(self.prev_array)  # type: ignore[arg-type]
        # With one stream per queue, a queue's next op is its stream's next op. Freely chosen
        # connection queues are chained as ops join them (FreeQueues.choose).
        top = plan.free_queues
        if top and n:
            queue = arrays["queue"]
            fixed = (queue >= 0) & ((queue < 1) | (queue > top))
            next_in_queue = chain_links(queue, fixed)[1]
        elif plan.shared_queues and n:
            next_in_queue = chain_links(arrays["queue"], arrays["queue"] >= 0)[1]
        else:
            next_in_queue = next_in_stream
        self.next_in_queue = memoryview(next_in_queue)  # type: ignore[arg-type]
        self.free = FreeQueues(top, self.queue_len, self.next_in_queue, n_streams) if top else None
        # When each queued op may leave its queue: raw, as it is read long after it is written.
        self.ready_at = memoryview(np.full(n, NO_TIME, np.int64))  # type: ignore[arg-type]
        self.queue_last_stream = [-1] * plan.queue_count
        self.queue_prev_pop = [-1] * plan.queue_count
        self.queue_prev_pop_t = [-1] * plan.queue_count
        # Per op kind code: device-side delay from the call returning to the op being able
        # to start (kernels and H2D/D2H copies; the rest start as their call returns).
        self.launch_latency = [0] * len(K)
        self.launch_latency[KERNEL] = round(preset.kernel_launch_latency_us * 1000.0)
        for kind in ("h2d", "d2h"):
            self.launch_latency[K[kind]] = round(preset.copy_launch_latency_us * 1000.0)
        self.launch_latency[K["host_func"]] = round(preset.host_func_latency_us * 1000.0)
        # The callback thread wakes (for the run's first host function) this much later, at
        # callback_wake (-1: not yet).
        self.callback_cold = preset.cold_callback_extra_ns()
        self.callback_wake = -1
        self.kernel_tail = round(preset.kernel_overhead_us * 1000.0)
        self.h2d_chunk = preset.pageable_h2d_chunk_bytes
        # Per host behaviour code (plan.ENQ ...): how late a blocking call returns after the
        # work it waits for is done.
        self.sync_return = [0] * (BARRIER + 1)
        for code, kind in (
            (ENQ_WAIT, "sync_copy"),
            (WAIT_STREAM, "stream_sync"),
            (WAIT_EVENT, "event_sync"),
            (WAIT_ALL, "device_sync"),
        ):
            self.sync_return[code] = preset.sync_return_ns(kind)
        self.dep_latency, self.origin = _dependency_latency(plan, preset)
        self.track_queue_delay = plan.shared_queues
        # Per op: the queues (or HOST) to re-examine when it completes; None: nobody waits.
        self.waiters: list[list[int] | None] = [None] * n
        self.todo: list[int] = []
        self.tail = [-1] * n_streams
        self.covered = [-1] * n_streams  # tail of each blocking stream the default stream waited on
        self.seen_default = [-1] * n_streams
        self.seen_barrier = [0] * n_streams
        # True: the stream's next op waits only for its stream predecessor (and, for an event
        # wait, its record): the simulator's fast path.
        self.quiet = [False] * n_streams
        self.last_default = -1
        self.barrier_id = 0
        self.barrier_ops: list[int] = []
        # Per event_wait / event_sync op: the event_record it waits for (none: not there).
        self.record_of = self._event_tables(next_in_stream)
        plan.event = []  # read by _event_tables alone: free it for the loop
        self.host_i = 0  # next op whose call takes effect at host_t
        # plan.cost includes the host's gap before each call; the first call has none.
        self.call_gap = round(preset.host_call_gap_us * 1000.0)
        self.host_t = plan.item("cost", 0) - self.call_gap if n else INF
        self.host_wait: list[int] | None = None
        self.dirty = 0  # engines with new work (bits set by simulator._Run.dispatch)
        self.signal_delay = preset.completion_signal_delay
        self.groups: dict[int, list] = {}  # kernel -> [running, deferred ops] (signal delay)
        self.last_kernel: tuple[int, int, list] = (-2, -1, [0, []])  # (op, stream, group)

    def drop_work_columns(self) -> None:
        """Free the per-op lists only the event loop reads, before the cyclic collector runs
        again: each of its passes walks every live list item, and with a dozen 1e5-item lists
        (and one dependency tuple per op) its first passes after a big simulation cost more
        than building the Timeline."""
        plan = self.plan
        for name in ("kind", "queue", "run", "stream", "host", "cost", "solo", "stage",
                     "kernel", "event", "nbytes"):  # fmt: skip
            setattr(plan, name, [])
        # Freed: nothing reads them after the loop, so their types leave None out.
        self.deps_of = self.done = self.waiters = self.origin = None  # type: ignore[assignment]

    # -- dependencies ---------------------------------------------------------------------------
    def edge(self, src: int, dst: int, kind: str) -> None:
        self.deps[0].append(src)
        self.deps[1].append(dst)
        self.deps[2].append(_DEP[kind])

    def stream_deps(self, i: int, s: int, kind: int, p: int) -> tuple[int, ...]:
        """Ops that must complete before op ``i`` on stream ``s`` may start; records edges.

        ``p`` is the previous op of the stream. The common case (a plain op on a blocking or
        non-blocking stream with nothing new to wait for) is handled by the caller.
        """
        plan, edge = self.plan, self.edge
        deps = [p] if p >= 0 else []
        if kind == EVENT_WAIT:
            r = self.record_of.get(i, -1)
            if r >= 0:
                deps.append(r)
        klass = plan.stream_class[s]
        if klass == STREAM_LEGACY:
            for b, c in enumerate(plan.stream_class):
                t = self.tail[b]
                if c == STREAM_BLOCKING and t >= 0 and t != self.covered[b]:
                    deps.append(t)
                    edge(t, i, "default_stream")
                    self.covered[b] = t
            self.last_default = i
            for b, c in enumerate(plan.stream_class):
                if c == STREAM_BLOCKING:
                    self.quiet[b] = False
        elif klass == STREAM_BLOCKING:
            ld = self.last_default
            if ld >= 0 and ld != self.seen_default[s]:
                self.seen_default[s] = ld
                deps.append(ld)
                edge(ld, i, "default_stream")
        if self.seen_barrier[s] != self.barrier_id:
            self.seen_barrier[s] = self.barrier_id
            for b in self.barrier_ops:
                if b != p and b != i:
                    deps.append(b)
                    edge(b, i, "default_stream")
        self.quiet[s] = klass != STREAM_LEGACY
        return tuple(deps)

    def _event_tables(self, after: np.ndarray) -> dict[int, int]:
        """The record each event_wait and event_sync op waits for: the most recent
        event_record of its event before it in the program (records are enqueued in program
        order, so this is fixed before the simulation). Also sets the dependencies of the
        waits (their stream predecessor and that record) and draws the "event" edges, each from
        the record to the first op after the wait in its stream (not itself a wait). ``after``
        is each op's next enqueued op of its stream (-1: none)."""
        plan, n = self.plan, self.n
        if not n:
            return {}
        kinds = plan.arrays["kind"]
        rows = np.flatnonzero(
            (kinds == EVENT_RECORD) | (kinds == EVENT_WAIT) | (kinds == EVENT_SYNC)
        )
        if not len(rows):
            return {}
        record = _last_records(rows, kinds[rows], plan.event, n)
        asks = (kinds[rows] != EVENT_RECORD) & (record >= 0)  # waits and syncs with a record
        record_of = dict(zip(rows[asks].tolist(), record[asks].tolist(), strict=True))
        waits = asks & (kinds[rows] == EVENT_WAIT)
        wait_rows, record_rows = rows[waits], record[waits]
        if len(wait_rows):
            # A wait waits for its stream predecessor (if any) and the record.
            pred = self.prev_array[wait_rows]
            deps: list[tuple[int, ...]] = list(
                zip(pred.tolist(), record_rows.tolist(), strict=True)
            )
            for k in np.flatnonzero(pred < 0).tolist():
                deps[k] = (deps[k][1],)
            deps_of = self.deps_of
            for w, d in zip(wait_rows.tolist(), deps, strict=True):
                deps_of[w] = d
            self._draw_event_edges(wait_rows, record_rows, after)
        return record_of

    def _draw_event_edges(
        self, wait_rows: np.ndarray, record_rows: np.ndarray, after: np.ndarray
    ) -> None:
        """Each wait's "event" edge, from its record to the next op of its stream that is not
        a wait, in the order those ops are issued (and of the waits, for one op)."""
        kinds = self.plan.arrays["kind"]
        target = after[wait_rows]
        chained = np.flatnonzero((target >= 0) & (kinds[np.maximum(target, 0)] == EVENT_WAIT))
        for k in chained.tolist():  # rare: waits back to back
            x = int(target[k])
            while x >= 0 and kinds[x] == EVENT_WAIT:
                x = int(after[x])
            target[k] = x
        drawn = target >= 0
        order = np.argsort(target[drawn], kind="stable")
        self.deps[0].extend(record_rows[drawn][order].tolist())
        self.deps[1].extend(target[drawn][order].tolist())
        self.deps[2].extend([_DEP["event"]] * int(drawn.sum()))

    def set_barrier(self) -> None:
        """Device-wide implicit synchronisation: later work waits for all work issued so far."""
        done = self.done
        self.barrier_ops = [t for t in self.tail if t >= 0 and done[t] < 0]
        self.barrier_id += 1
        self.quiet[:] = [False] * len(self.quiet)

    # -- host thread ----------------------------------------------------------------------------
    def host_step(self, t: int) -> None:
        """The call of op ``host_i`` takes effect at ``t`` (its issue cost already spent)."""
        plan, i = self.plan, self.host_i
        h = plan.host[i]
        if h == ENQ:  # the common case, kept short: enqueue and return at once
            self.enqueue(i, t)
            self.issue_end[i] = t
            i += 1
            self.host_i = i
            if i < self.n:
                self.host_t = t + plan.cost[i]
            else:
                self.host_t = INF
            return
        wait: list[int] = []
        busy = 0
        if plan.kind[i] in ENQUEUED:
            if h == ENQ_BARRIER:
                self.set_barrier()
            self.enqueue(i, t)
            if h == ENQ_WAIT:
                wait = [i]
            elif h == ENQ_STAGE:
                busy = plan.stage[i] or 0  # set for every pageable H2D (plan_ops)
                chunk = self.h2d_chunk
                if chunk:  # the DMA waits for the first chunk to be staged
                    n = int(plan.arrays["nbytes"][i])
                    self.ready_at[i] += busy if n <= chunk else busy * chunk // n
            elif h == ENQ_BARRIER:
                self.barrier_ops = [i]
                self.barrier_id += 1
                self.quiet[:] = [False] * len(self.quiet)
        elif h == WAIT_STREAM:
            s = plan.stream[i]
            wait = [self.tail[s]] if s >= 0 and self.tail[s] >= 0 else []
        elif h == WAIT_EVENT:
            r = self.record_of.get(i, -1)
            wait = [r] if r >= 0 else []
        elif h == WAIT_ALL:
            wait = [x for x in self.tail if x >= 0]
        elif h == BUSY:
            busy = plan.solo[i]
        elif h == BARRIER:
            self.set_barrier()
        if wait:
            self.host_wait = wait
            self.host_t = INF
            self.check_host(t)
        else:
            self.host_return(t + busy, -1)

    def check_host(self, t: int) -> None:
        done = self.done
        wait = self.host_wait
        assert wait is not None  # called only while the host thread waits
        for x in wait:
            if done[x] < 0:
                w = self.waiters[x]
                if w is None:
                    self.waiters[x] = [HOST]
                else:
                    w.append(HOST)
                return
        last = max(wait, key=done.__getitem__)
        self.host_wait = None
        # The call returns once the driver has noticed the completion (never before its own
        # call ended: t is at least that).
        lag = self.sync_return[self.plan.host[self.host_i]]
        stage = self.plan.stage
        copy_out = stage[self.host_i] if stage else None
        if copy_out is not None:  # a pageable D2H's last copy-out
            lag += copy_out
        self.host_return(max(t, done[last] + lag) if lag else t, last)

    def host_return(self, t: int, released_by: int) -> None:
        i = self.host_i
        self.issue_end[i] = t
        if released_by >= 0 and released_by != i:
            self.edge(released_by, i, "host")
        i += 1
        self.host_i = i
        if i < self.n:
            self.host_t = t + self.plan.cost[i]
        else:
            self.host_t = INF

    # -- queues ---------------------------------------------------------------------------------
    def enqueue(self, i: int, t: int) -> None:
        plan = self.plan
        s, kind = plan.stream[i], plan.kind[i]
        p = self.tail[s]
        if not self.quiet[s]:
            self.deps_of[i] = self.stream_deps(i, s, kind, p)
        # else: only its stream predecessor, or as _event_tables set for a wait
        self.tail[s] = i
        q = plan.queue[i]
        free = self.free
        if free is not None and 0 < q <= free.top:
            q = free.choose(i, s)
        self.ready_at[i] = t + self.launch_latency[kind]
        queued = self.queue_len[q]
        self.queue_len[q] = queued + 1
        if not queued:
            self.queue_head[q] = i
            self.todo.append(q)

    def group_kernel(self, i: int, s: int) -> None:
        """Fermi's delayed completion signal: a kernel launched (its dependencies met) right
        after the kernel issued just before it, from another stream, while that one's group is
        still running joins the group; a group signals when its last member ends. Deciding at
        launch keeps a kernel that depends on the group out of it."""
        prev, prev_stream, group = self.last_kernel
        if not (prev == i - 1 and prev_stream != s and group[0] > 0):
            group = [0, []]
        group[0] += 1
        self.groups[i] = group
        self.last_kernel = (i, s, group)
