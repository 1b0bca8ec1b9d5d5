"""Hardware queues: when their head ops may leave for the engines.

``QueueDrain`` adds to :class:`~swimlanes.engine.state.RunState` the examination of queue heads
(``make_drain``), the release of queues waiting for an op that just completed, with the
preset's dependency latencies (``make_release``), and the "queue" dependencies of shared
queues. ``simulator._Run`` adds the engines and the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush

from swimlanes.engine.plan import RUN_INSTANT, RUN_KERNEL
from swimlanes.engine.state import HOST, RunState

# Re-examine a queue head whose launch or dependency latency has passed: (t, seq, EV_TIMER,
# queue, hint). A hint >= 0 is the queue's head op, which leaves exactly at t: its dependencies
# were all done when the timer was set, and completion times never change, so drain's
# examination would find it ready then; the loop skips that examination.
EV_TIMER = 3


def examine_at_once(todo: list[int]) -> Callable[[int, list[int], int], None]:
    """The release function of presets without dependency latencies (see make_release)."""

    def release(i: int, ws: list[int], t: int) -> None:
        todo.extend(ws)

    return release


class QueueDrain(RunState):
    """The queues' draining (a base of simulator._Run, which provides engine_entries)."""

    __slots__ = ()

    def engine_entries(self) -> list[Callable[[int, int], None]]:
        """Per RUN_* code, the function that hands an op leaving its queue to its engine."""
        raise NotImplementedError

    def make_drain(self) -> tuple[Callable[[int], None], Callable[[int, int], None]]:
        """The function that lets every queue on the to-do list send its runnable head ops to
        their engines, and the one that does so for one queue (closures: they run once per
        op, and this saves their set-up)."""
        todo, done, waiters = self.todo, self.done, self.waiters
        queue_head, queue_len, next_in_queue = self.queue_head, self.queue_len, self.next_in_queue
        deps_of, ready_at, prev = self.deps_of, self.ready_at, self.prev_in_stream
        run_of, to_engine, check_host = self.plan.run, self.engine_entries(), self.check_host
        track, heap, next_seq = self.track_queue_delay, self.heap, self.next_seq
        note_queue_delay, start, end = self.note_queue_delay, self.start, self.end
        # Event records and waits are done as they leave their queue; without completion
        # groups that is finish(), inlined here because every third op or so is one.
        inline_instant = not self.signal_delay
        # Without shared queues each queue holds one stream, so the op behind one that just
        # left waits for it (its first dependency): no need to look at it now.
        one_stream = not track
        lat, origin = self.dep_latency, self.origin  # see state._dependency_latency
        # queue_choice "free": its connection queues count their streams' waiting ops.
        free_top, waiting = (self.free.top, self.free.waiting) if self.free else (0, [])
        stream_of = self.plan.stream

        def last_done(deps: tuple[int, ...]) -> int:
            """The dependency done last (the first such: max()'s choice), spelled out for the
            usual one or two."""
            if len(deps) == 1:
                return deps[0]
            if len(deps) == 2:
                a, b = deps
                return a if done[a] >= done[b] else b
            return max(deps, key=done.__getitem__)

        def examine(q: int, t: int) -> None:
            """Send queue q's runnable head ops to their engines, from the head on."""
            while queue_len[q] > 0:
                i = queue_head[q]
                ready = ready_at[i]
                deps = deps_of[i]
                if deps is None:  # it waits for its stream predecessor alone (if any)
                    d = prev[i]
                    td = done[d] if d >= 0 else 0
                    if td < 0:
                        deps = (d,)  # blocked on d: the general examination says so
                    elif lat is not None and d >= 0:
                        row = origin[i] + 1
                        if row:  # runs on an engine: wait out the dependency's latency
                            td += lat[(origin[d] + 1) * 5 + row]
                            if td > ready:
                                ready = td
                        else:  # an event op: takes the engine class of what released it
                            origin[i] = origin[d]
                        deps = ()
                    else:
                        deps = ()
                for d in deps:
                    if done[d] < 0:
                        break
                else:
                    if lat is not None and deps:
                        row = origin[i] + 1
                        if row:  # runs on an engine: wait out each dependency's latency
                            for d in deps:
                                td = done[d] + lat[(origin[d] + 1) * 5 + row]
                                if td > ready:
                                    ready = td
                        else:  # an event op: takes the engine class of what released it
                            origin[i] = origin[last_done(deps)]
                    if ready > t:  # its dependencies are done: ready is exact
                        hint = i if one_stream and run_of[i] <= RUN_KERNEL else -1
                        heappush(heap, (ready, next_seq(), EV_TIMER, q, hint))
                        break
                    left = queue_len[q] - 1  # i leaves the queue
                    queue_len[q] = left
                    if left:
                        queue_head[q] = next_in_queue[i]
                    if q <= free_top and q:
                        waiting[stream_of[i]] -= 1
                    if track:
                        note_queue_delay(q, i, ready, t)
                    run = run_of[i]
                    if run == RUN_INSTANT and inline_instant:
                        start[i] = end[i] = done[i] = t
                        ws = waiters[i]
                        if ws is not None:
                            waiters[i] = None
                            todo.extend(ws)
                        continue
                    to_engine[run](i, t)
                    if not (one_stream and left and done[i] < 0):
                        continue
                    d = i
                w = waiters[d]  # re-examine q when d completes
                if w is None:
                    waiters[d] = [q]
                else:
                    w.append(q)
                break

        def drain(t: int) -> None:
            while todo:
                q = todo.pop()
                if q == HOST:
                    if self.host_wait is not None:
                        check_host(t)
                else:
                    examine(q, t)

        return drain, examine

    def note_queue_delay(self, q: int, i: int, ready: int, t: int) -> None:
        """Record a "queue" dependency when another stream's op held op ``i`` (just leaving
        ``q``; it could start at ``ready`` once its dependencies were done) back."""
        s = self.plan.stream[i]
        prev = self.queue_last_stream[q]
        self.queue_last_stream[q] = s
        if prev < 0 or prev == s or self.queue_prev_pop_t[q] != t:
            self.queue_prev_pop[q] = i
            self.queue_prev_pop_t[q] = t
            return
        deps = self.deps_of[i]
        if deps is None:
            deps = (self.prev_in_stream[i],) if self.prev_in_stream[i] >= 0 else ()
        own = max(ready, max((self.done[d] for d in deps), default=0))
        if own < t:
            self.edge(self.queue_prev_pop[q], i, "queue")
        self.queue_prev_pop[q] = i
        self.queue_prev_pop_t[q] = t

    def make_release(
        self, examine: Callable[[int, int], None]
    ) -> Callable[[int, list[int], int], None]:
        """The function that lets op ``i``, just done at ``t``, release the waiting queues
        ``ws`` when the preset has dependency latencies: each is examined when its head's
        latency on ``i`` has passed (at once if there is none), so that the usual wait costs
        one wake-up, not an examination and a timer. (The examination recomputes when the head
        may start: a wake-up here is never too late, only possibly early.) When the head's
        dependencies are all done and it may start by then, the wake-up carries it as a hint
        and the loop sends it to its engine without the examination (only with one stream per
        queue: else drain records how the head left). A single waiting queue whose head may go
        at once is examined here and now (``examine``), which is what the drain at the end of
        this step would do first. A closure: it runs once per op."""
        lat, origin, todo = self.dep_latency, self.origin, self.todo
        assert lat is not None  # the simulator asks for this only when there are latencies
        queue_head, queue_len, deps_of, ready_at, prev = (
            self.queue_head, self.queue_len, self.deps_of, self.ready_at, self.prev_in_stream
        )  # fmt: skip
        done, run_of, heap, next_seq = self.done, self.plan.run, self.heap, self.next_seq
        hints = not self.track_queue_delay

        def release(i: int, ws: list[int], t: int) -> None:
            base = (origin[i] + 1) * 5
            for q in ws:
                if q != HOST and queue_len[q]:
                    head = queue_head[q]
                    row = origin[head] + 1
                    delay = lat[base + row]
                    if delay:
                        when = t + delay
                        hint = -1
                        if hints and run_of[head] <= RUN_KERNEL:
                            deps = deps_of[head]
                            if deps is None and prev[head] == i:
                                # It waits for i alone, done now: it may start at when.
                                if ready_at[head] <= when:
                                    hint = head
                            else:  # drain's examination, done now
                                if deps is None:
                                    deps = (prev[head],) if prev[head] >= 0 else ()
                                ready = ready_at[head]
                                for d in deps:
                                    td = done[d]
                                    if td < 0:
                                        break
                                    td += lat[(origin[d] + 1) * 5 + row]
                                    if td > ready:
                                        ready = td
                                else:
                                    if ready <= when:
                                        hint = head
                        heappush(heap, (when, next_seq(), EV_TIMER, q, hint))
                        continue
                    if len(ws) == 1:
                        examine(q, t)
                        return
                todo.append(q)

        return release
