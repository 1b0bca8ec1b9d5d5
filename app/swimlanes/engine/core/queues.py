"""The compiled hardware queues: engine/queues.py's examination of queue heads, the release
of waiting queues with dependency latencies, the "queue" dependencies and the to-do drain."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from swimlanes.engine.core.buffers import add_waiter, edge, push, todo_push, waiters_to_todo
from swimlanes.engine.core.host import check_host, to_engine
from swimlanes.engine.core.layout import (
    BUFFERS,
    CONFIG,
    DEP_QUEUE,
    DLEN,
    DONE,
    DPOOL,
    DSTART,
    END_TIMES,
    EV_TIMER,
    FREE_TOP,
    HOST,
    HOST_WAITING,
    LAT0,
    LAT_ON,
    NEXTQ,
    OP_CODES,
    OP_TIMES,
    ORIGIN,
    PREV,
    Q_HEAD,
    Q_LAST_STREAM,
    Q_LEN,
    Q_PREV_POP,
    Q_PREV_POP_T,
    QUEUES,
    READY,
    RUN,
    RUN_INSTANT,
    RUN_KERNEL,
    S_WAITING,
    SCALARS,
    SIGNAL,
    START_TIMES,
    STREAM,
    STREAMS,
    TODO,
    TODO_N,
    TRACK,
    WHEAD,
    WNODES,
)


@njit(cache=True)
def _last_done(op_times: np.ndarray, pool: np.ndarray, first: int, count: int) -> int:
    """max(deps, key=done): the first of the dependencies done last."""
    best = pool[first]
    for k in range(first + 1, first + count):
        if op_times[pool[k], DONE] > op_times[best, DONE]:
            best = pool[k]
    return best


@njit(cache=True)
def examine(state: tuple[Any, ...], q: int, t: int) -> None:
    """Send queue q's runnable head ops to their engines, from the head on (make_drain's
    examine; one loop, as there: it runs about twice per op)."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    scalars = state[SCALARS]
    queues = state[QUEUES]
    buffers = state[BUFFERS]
    op_codes = state[OP_CODES]
    lat_on, track = config[LAT_ON], config[TRACK]
    one_stream = not track
    inline_instant = not config[SIGNAL]
    while queues[Q_LEN, q] > 0:
        i = queues[Q_HEAD, q]
        ready = op_times[i, READY]
        blocked = -1
        first = op_times[i, DSTART]
        count = 0
        pool = buffers[DPOOL]
        if first < 0:  # it waits for its stream predecessor alone (if any)
            d = op_codes[i, PREV]
            td = op_times[d, DONE] if d >= 0 else 0
            if td < 0:
                blocked = d
            elif lat_on and d >= 0:
                row = op_codes[i, ORIGIN] + 1
                if row:  # runs on an engine: wait out the dependency's latency
                    td += config[LAT0 + (op_codes[d, ORIGIN] + 1) * 5 + row]
                    if td > ready:
                        ready = td
                else:  # an event op: takes the engine class of what released it
                    op_codes[i, ORIGIN] = op_codes[d, ORIGIN]
        else:
            count = op_codes[i, DLEN]
            for k in range(first, first + count):
                if op_times[pool[k], DONE] < 0:
                    blocked = pool[k]
                    break
            if blocked < 0 and lat_on and count:
                row = op_codes[i, ORIGIN] + 1
                if row:
                    for k in range(first, first + count):
                        d = pool[k]
                        td = op_times[d, DONE] + config[LAT0 + (op_codes[d, ORIGIN] + 1) * 5 + row]
                        if td > ready:
                            ready = td
                else:
                    op_codes[i, ORIGIN] = op_codes[_last_done(op_times, pool, first, count), ORIGIN]
        if blocked < 0:
            if ready > t:  # its dependencies are done: ready is exact
                hint = i if one_stream and op_codes[i, RUN] <= RUN_KERNEL else -1
                push(buffers, scalars, ready, EV_TIMER, q, hint)
                break
            left = queues[Q_LEN, q] - 1  # i leaves the queue
            queues[Q_LEN, q] = left
            if left:
                queues[Q_HEAD, q] = op_codes[i, NEXTQ]
            if q <= config[FREE_TOP] and q:
                state[STREAMS][S_WAITING, op_codes[i, STREAM]] -= 1
            if track:
                note_queue_delay(state, q, i, ready, t)
            r = op_codes[i, RUN]
            if r == RUN_INSTANT and inline_instant:
                state[START_TIMES][i] = t
                state[END_TIMES][i] = t
                op_times[i, DONE] = t
                waiters_to_todo(op_times, buffers, scalars, i)
                continue
            to_engine(state, r, i, t)
            if not (one_stream and left and op_times[i, DONE] < 0):
                continue
            blocked = i
        add_waiter(op_times, buffers, scalars, blocked, q)  # re-examine q when it completes
        break


@njit(cache=True)
def note_queue_delay(state: tuple[Any, ...], q: int, i: int, ready: int, t: int) -> None:
    """QueueDrain.note_queue_delay: a "queue" edge when another stream's op held i back."""
    op_times = state[OP_TIMES]
    scalars = state[SCALARS]
    queues = state[QUEUES]
    buffers = state[BUFFERS]
    op_codes = state[OP_CODES]
    s = op_codes[i, STREAM]
    prev = queues[Q_LAST_STREAM, q]
    queues[Q_LAST_STREAM, q] = s
    if prev < 0 or prev == s or queues[Q_PREV_POP_T, q] != t:
        queues[Q_PREV_POP, q] = i
        queues[Q_PREV_POP_T, q] = t
        return
    first = op_times[i, DSTART]
    most = 0
    if first < 0:
        d = op_codes[i, PREV]
        if d >= 0:
            most = op_times[d, DONE]
    else:
        pool = buffers[DPOOL]
        for k in range(first, first + op_codes[i, DLEN]):
            td = op_times[pool[k], DONE]
            if k == first or td > most:
                most = td
    own = ready if ready > most else most
    if own < t:
        edge(buffers, scalars, queues[Q_PREV_POP, q], i, DEP_QUEUE)
    queues[Q_PREV_POP, q] = i
    queues[Q_PREV_POP_T, q] = t


@njit(cache=True)
def release(state: tuple[Any, ...], i: int, t: int) -> None:
    """Op i, just done at t, releases the queues waiting for it (make_release: with
    dependency latencies each is woken when its head's latency on i has passed; without,
    examined at once)."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    scalars = state[SCALARS]
    queues = state[QUEUES]
    buffers = state[BUFFERS]
    op_codes = state[OP_CODES]
    k = op_times[i, WHEAD]
    op_times[i, WHEAD] = -1
    if k < 0:
        return
    wn = buffers[WNODES]
    if not config[LAT_ON]:
        while k >= 0:
            todo_push(buffers, scalars, wn[2 * k])
            k = wn[2 * k + 1]
        return
    single = wn[2 * k + 1] < 0
    base = (op_codes[i, ORIGIN] + 1) * 5
    hints = not config[TRACK]
    while k >= 0:
        q = wn[2 * k]
        k = wn[2 * k + 1]
        if q != HOST and queues[Q_LEN, q]:
            head = queues[Q_HEAD, q]
            row = op_codes[head, ORIGIN] + 1
            delay = config[LAT0 + base + row]
            if delay:
                when = t + delay
                hint = -1
                if hints and op_codes[head, RUN] <= RUN_KERNEL:
                    hint = _hint(state, head, i, row, when)
                push(buffers, scalars, when, EV_TIMER, q, hint)
                continue
            if single:
                examine(state, q, t)
                return
        todo_push(buffers, scalars, q)


@njit(cache=True)
def _hint(state: tuple[Any, ...], head: int, i: int, row: int, when: int) -> int:
    """make_release's hint: head, if it may leave its queue at ``when`` (drain's examination,
    done now), else -1."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    buffers = state[BUFFERS]
    op_codes = state[OP_CODES]
    first = op_times[head, DSTART]
    if first < 0 and op_codes[head, PREV] == i:  # it waits for i alone, done now
        return head if op_times[head, READY] <= when else -1
    ready = op_times[head, READY]
    if first < 0:
        d = op_codes[head, PREV]
        if d >= 0:
            td = op_times[d, DONE]
            if td < 0:
                return -1
            td += config[LAT0 + (op_codes[d, ORIGIN] + 1) * 5 + row]
            if td > ready:
                ready = td
    else:
        pool = buffers[DPOOL]
        for k in range(first, first + op_codes[head, DLEN]):
            d = pool[k]
            td = op_times[d, DONE]
            if td < 0:
                return -1
            td += config[LAT0 + (op_codes[d, ORIGIN] + 1) * 5 + row]
            if td > ready:
                ready = td
    return head if ready <= when else -1


@njit(cache=True)
def drain(state: tuple[Any, ...], t: int) -> None:
    """Let every queue on the to-do stack send its runnable heads to their engines."""
    scalars = state[SCALARS]
    buffers = state[BUFFERS]
    while scalars[TODO_N] > 0:
        n = scalars[TODO_N] - 1
        scalars[TODO_N] = n
        q = buffers[TODO][n]
        if q == HOST:
            if scalars[HOST_WAITING]:
                check_host(state, t)
        else:
            examine(state, q, t)
