"""The compiled core's growable buffers: the event heap, waiter lists, the to-do stack, the
dependency pool, dependency edges and the SMs-busy step function.

Each buffer is an int64 array in the list ``buffers`` (see layout) with its used length in the
``scalars`` table; a buffer that fills up is replaced by one twice its size. The heap holds
``(time, seq, tag, a, b)`` entries five ints apiece, ordered by ``(time, seq)`` exactly as the
Python engine's tuples (seq is unique, so the rest never decides).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swimlanes.engine.core.layout import (
    BAIL,
    DP_N,
    DPOOL,
    EDGE_N,
    EDGES,
    HEAP,
    HEAP_ENTRY,
    HEAP_N,
    INF,
    OCC,
    OCC_N,
    SEQ,
    TODO,
    TODO_N,
    WHEAD,
    WN_N,
    WNODES,
    WTAIL,
)


@njit(cache=True)
def room(buffers: list[np.ndarray], k: int, used: int, extra: int) -> np.ndarray:
    """Buffer ``k`` of ``buffers`` with room for ``extra`` more ints after ``used``."""
    buf = buffers[k]
    if used + extra > buf.shape[0]:
        bigger = np.empty(max(2 * buf.shape[0], used + extra), np.int64)
        bigger[:used] = buf[:used]
        buffers[k] = bigger
        buf = bigger
    return buf


@njit(cache=True)
def next_seq(scalars: np.ndarray) -> int:
    seq = scalars[SEQ]
    scalars[SEQ] = seq + 1
    return seq


@njit(cache=True)
def push(buffers: list[np.ndarray], scalars: np.ndarray, t: int, tag: int, a: int, b: int) -> None:
    """heappush((t, next_seq(), tag, a, b)). An event at INF or later marks the run out of
    range (the caller hands it to the Python engine, which answers or refuses it)."""
    seq = next_seq(scalars)
    if t >= INF:
        scalars[BAIL] = 1
    n = scalars[HEAP_N]
    h = room(buffers, HEAP, n * HEAP_ENTRY, HEAP_ENTRY)
    k = n
    while k > 0:  # sift up
        p = (k - 1) >> 1
        pt = h[p * HEAP_ENTRY]
        if pt < t or (pt == t and h[p * HEAP_ENTRY + 1] < seq):
            break
        for f in range(HEAP_ENTRY):
            h[k * HEAP_ENTRY + f] = h[p * HEAP_ENTRY + f]
        k = p
    h[k * HEAP_ENTRY] = t
    h[k * HEAP_ENTRY + 1] = seq
    h[k * HEAP_ENTRY + 2] = tag
    h[k * HEAP_ENTRY + 3] = a
    h[k * HEAP_ENTRY + 4] = b
    scalars[HEAP_N] = n + 1


@njit(cache=True)
def pop(buffers: list[np.ndarray], scalars: np.ndarray) -> tuple[int, int, int, int, int]:
    """heappop: the earliest (time, seq) entry as (t, seq, tag, a, b). The sentinel is never
    popped (the loop pops only events earlier than the host)."""
    h = buffers[HEAP]
    n = scalars[HEAP_N] - 1
    t, seq, tag, a, b = h[0], h[1], h[2], h[3], h[4]
    scalars[HEAP_N] = n
    if n > 0:
        lt, ls = h[n * HEAP_ENTRY], h[n * HEAP_ENTRY + 1]
        k = 0
        while True:  # sift the last entry down from the root
            c = 2 * k + 1
            if c >= n:
                break
            r = c + 1
            if r < n and (
                h[r * HEAP_ENTRY] < h[c * HEAP_ENTRY]
                or (
                    h[r * HEAP_ENTRY] == h[c * HEAP_ENTRY]
                    and h[r * HEAP_ENTRY + 1] < h[c * HEAP_ENTRY + 1]
                )
            ):
                c = r
            ct = h[c * HEAP_ENTRY]
            if lt < ct or (lt == ct and ls < h[c * HEAP_ENTRY + 1]):
                break
            for f in range(HEAP_ENTRY):
                h[k * HEAP_ENTRY + f] = h[c * HEAP_ENTRY + f]
            k = c
        if k != n:
            for f in range(HEAP_ENTRY):
                h[k * HEAP_ENTRY + f] = h[n * HEAP_ENTRY + f]
    return t, seq, tag, a, b


@njit(cache=True)
def todo_push(buffers: list[np.ndarray], scalars: np.ndarray, q: int) -> None:
    n = scalars[TODO_N]
    buf = room(buffers, TODO, n, 1)
    buf[n] = q
    scalars[TODO_N] = n + 1


@njit(cache=True)
def add_waiter(
    op_times: np.ndarray, buffers: list[np.ndarray], scalars: np.ndarray, op: int, q: int
) -> None:
    """waiters[op].append(q): a linked list of (value, next) nodes."""
    k = scalars[WN_N]
    wn = room(buffers, WNODES, 2 * k, 2)
    wn[2 * k] = q
    wn[2 * k + 1] = -1
    scalars[WN_N] = k + 1
    if op_times[op, WHEAD] < 0:
        op_times[op, WHEAD] = k
    else:
        wn[2 * op_times[op, WTAIL] + 1] = k
    op_times[op, WTAIL] = k


@njit(cache=True)
def waiters_to_todo(
    op_times: np.ndarray, buffers: list[np.ndarray], scalars: np.ndarray, op: int
) -> None:
    """todo.extend(waiters[op]); waiters[op] = None."""
    k = op_times[op, WHEAD]
    op_times[op, WHEAD] = -1
    if k < 0:
        return
    wn = buffers[WNODES]
    while k >= 0:
        todo_push(buffers, scalars, wn[2 * k])
        k = wn[2 * k + 1]


@njit(cache=True)
def dep_push(buffers: list[np.ndarray], scalars: np.ndarray, d: int) -> None:
    n = scalars[DP_N]
    buf = room(buffers, DPOOL, n, 1)
    buf[n] = d
    scalars[DP_N] = n + 1


@njit(cache=True)
def edge(buffers: list[np.ndarray], scalars: np.ndarray, src: int, dst: int, kind: int) -> None:
    n = scalars[EDGE_N]
    buf = room(buffers, EDGES, 3 * n, 3)
    buf[3 * n] = src
    buf[3 * n + 1] = dst
    buf[3 * n + 2] = kind
    scalars[EDGE_N] = n + 1


@njit(cache=True)
def record_occupancy(buffers: list[np.ndarray], scalars: np.ndarray, t: int, sms: int) -> None:
    """The SMs-busy step function changes to ``sms`` at ``t`` (blocks._record_occupancy):
    (time, sms) pairs."""
    n = scalars[OCC_N]
    occ = room(buffers, OCC, 2 * n, 2)
    if occ[2 * n - 2] == t:  # a second change at t replaces the first
        if n > 1 and occ[2 * n - 3] == sms:
            scalars[OCC_N] = n - 1  # back where it was: no step at t after all
        else:
            occ[2 * n - 1] = sms
    else:
        occ[2 * n] = t
        occ[2 * n + 1] = sms
        scalars[OCC_N] = n + 1
