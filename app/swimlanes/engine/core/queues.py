"""The compiled hardware queues: engine/queues.py's examination of queue heads, the release
of waiting queues with dependency latencies, the "queue" dependencies and the to-do drain."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from swimlanes.engine.core.buffers import add_waiter, edge, push, todo_push, waiters_to_todo
from swimlanes.engine.core.host import check_host, to_engine
from swimlanes.engine.core.layout import (
    DEP_QUEUE,
    DLEN,
    DONE,
    DPOOL,
    DSTART,
    EV_TIMER,
    HOST,
    HOST_WAITING,
    LAT0,
    LAT_ON,
    NEXTQ,
    ORIGIN,
    PREV,
    Q_HEAD,
    Q_LAST_STREAM,
    Q_LEN,
    Q_PREV_POP,
    Q_PREV_POP_T,
    READY,
    RUN,
    RUN_INSTANT,
    RUN_KERNEL,
    SIGNAL,
    STREAM,
    TODO,
    TODO_N,
    TRACK,
    WHEAD,
    WNODES,
)


@njit(cache=True)
def _last_done(OP: np.ndarray, pool: np.ndarray, first: int, count: int) -> int:
    """max(deps, key=done): the first of the dependencies done last."""
    best = pool[first]
    for k in range(first + 1, first + count):
        if OP[pool[k], DONE] > OP[best, DONE]:
            best = pool[k]
    return best


@njit(cache=True)
def examine(st: tuple[Any, ...], q: int, t: int) -> None:
    """Send queue q's runnable head ops to their engines, from the head on (make_drain's
    examine; one loop, as there: it runs about twice per op)."""
    OP, C, S, Q, G = st[0], st[2], st[4], st[6], st[15]
    OI = st[20]
    lat_on, track = C[LAT_ON], C[TRACK]
    one_stream = not track
    inline_instant = not C[SIGNAL]
    while Q[Q_LEN, q] > 0:
        i = Q[Q_HEAD, q]
        ready = OP[i, READY]
        blocked = -1
        first = OP[i, DSTART]
        count = 0
        pool = G[DPOOL]
        if first < 0:  # it waits for its stream predecessor alone (if any)
            d = OI[i, PREV]
            td = OP[d, DONE] if d >= 0 else 0
            if td < 0:
                blocked = d
            elif lat_on and d >= 0:
                row = OI[i, ORIGIN] + 1
                if row:  # runs on an engine: wait out the dependency's latency
                    td += C[LAT0 + (OI[d, ORIGIN] + 1) * 5 + row]
                    if td > ready:
                        ready = td
                else:  # an event op: takes the engine class of what released it
                    OI[i, ORIGIN] = OI[d, ORIGIN]
        else:
            count = OI[i, DLEN]
            for k in range(first, first + count):
                if OP[pool[k], DONE] < 0:
                    blocked = pool[k]
                    break
            if blocked < 0 and lat_on and count:
                row = OI[i, ORIGIN] + 1
                if row:
                    for k in range(first, first + count):
                        d = pool[k]
                        td = OP[d, DONE] + C[LAT0 + (OI[d, ORIGIN] + 1) * 5 + row]
                        if td > ready:
                            ready = td
                else:
                    OI[i, ORIGIN] = OI[_last_done(OP, pool, first, count), ORIGIN]
        if blocked < 0:
            if ready > t:  # its dependencies are done: ready is exact
                hint = i if one_stream and OI[i, RUN] <= RUN_KERNEL else -1
                push(G, S, ready, EV_TIMER, q, hint)
                break
            left = Q[Q_LEN, q] - 1  # i leaves the queue
            Q[Q_LEN, q] = left
            if left:
                Q[Q_HEAD, q] = OI[i, NEXTQ]
            if track:
                note_queue_delay(st, q, i, ready, t)
            r = OI[i, RUN]
            if r == RUN_INSTANT and inline_instant:
                st[17][i] = t
                st[18][i] = t
                OP[i, DONE] = t
                waiters_to_todo(OP, G, S, i)
                continue
            to_engine(st, r, i, t)
            if not (one_stream and left and OP[i, DONE] < 0):
                continue
            blocked = i
        add_waiter(OP, G, S, blocked, q)  # re-examine q when it completes
        break


@njit(cache=True)
def note_queue_delay(st: tuple[Any, ...], q: int, i: int, ready: int, t: int) -> None:
    """QueueDrain.note_queue_delay: a "queue" edge when another stream's op held i back."""
    OP, S, Q, G = st[0], st[4], st[6], st[15]
    OI = st[20]
    s = OI[i, STREAM]
    prev = Q[Q_LAST_STREAM, q]
    Q[Q_LAST_STREAM, q] = s
    if prev < 0 or prev == s or Q[Q_PREV_POP_T, q] != t:
        Q[Q_PREV_POP, q] = i
        Q[Q_PREV_POP_T, q] = t
        return
    first = OP[i, DSTART]
    most = 0
    if first < 0:
        d = OI[i, PREV]
        if d >= 0:
            most = OP[d, DONE]
    else:
        pool = G[DPOOL]
        for k in range(first, first + OI[i, DLEN]):
            td = OP[pool[k], DONE]
            if k == first or td > most:
                most = td
    own = ready if ready > most else most
    if own < t:
        edge(G, S, Q[Q_PREV_POP, q], i, DEP_QUEUE)
    Q[Q_PREV_POP, q] = i
    Q[Q_PREV_POP_T, q] = t


@njit(cache=True)
def release(st: tuple[Any, ...], i: int, t: int) -> None:
    """Op i, just done at t, releases the queues waiting for it (make_release: with
    dependency latencies each is woken when its head's latency on i has passed; without,
    examined at once)."""
    OP, C, S, Q, G = st[0], st[2], st[4], st[6], st[15]
    OI = st[20]
    k = OP[i, WHEAD]
    OP[i, WHEAD] = -1
    if k < 0:
        return
    wn = G[WNODES]
    if not C[LAT_ON]:
        while k >= 0:
            todo_push(G, S, wn[2 * k])
            k = wn[2 * k + 1]
        return
    single = wn[2 * k + 1] < 0
    base = (OI[i, ORIGIN] + 1) * 5
    hints = not C[TRACK]
    while k >= 0:
        q = wn[2 * k]
        k = wn[2 * k + 1]
        if q != HOST and Q[Q_LEN, q]:
            head = Q[Q_HEAD, q]
            row = OI[head, ORIGIN] + 1
            delay = C[LAT0 + base + row]
            if delay:
                when = t + delay
                hint = -1
                if hints and OI[head, RUN] <= RUN_KERNEL:
                    hint = _hint(st, head, i, row, when)
                push(G, S, when, EV_TIMER, q, hint)
                continue
            if single:
                examine(st, q, t)
                return
        todo_push(G, S, q)


@njit(cache=True)
def _hint(st: tuple[Any, ...], head: int, i: int, row: int, when: int) -> int:
    """make_release's hint: head, if it may leave its queue at ``when`` (drain's examination,
    done now), else -1."""
    OP, C, G = st[0], st[2], st[15]
    OI = st[20]
    first = OP[head, DSTART]
    if first < 0 and OI[head, PREV] == i:  # it waits for i alone, done now
        return head if OP[head, READY] <= when else -1
    ready = OP[head, READY]
    if first < 0:
        d = OI[head, PREV]
        if d >= 0:
            td = OP[d, DONE]
            if td < 0:
                return -1
            td += C[LAT0 + (OI[d, ORIGIN] + 1) * 5 + row]
            if td > ready:
                ready = td
    else:
        pool = G[DPOOL]
        for k in range(first, first + OI[head, DLEN]):
            d = pool[k]
            td = OP[d, DONE]
            if td < 0:
                return -1
            td += C[LAT0 + (OI[d, ORIGIN] + 1) * 5 + row]
            if td > ready:
                ready = td
    return head if ready <= when else -1


@njit(cache=True)
def drain(st: tuple[Any, ...], t: int) -> None:
    """Let every queue on the to-do stack send its runnable heads to their engines."""
    S, G = st[4], st[15]
    while S[TODO_N] > 0:
        n = S[TODO_N] - 1
        S[TODO_N] = n
        q = G[TODO][n]
        if q == HOST:
            if S[HOST_WAITING]:
                check_host(st, t)
        else:
            examine(st, q, t)
