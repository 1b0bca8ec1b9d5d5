"""The compiled core's growable buffers: the event heap, waiter lists, the to-do stack, the
dependency pool, dependency edges and the SMs-busy step function.

Each buffer is an int64 array in the list ``G`` (see layout) with its used length in the
scalars ``S``; a buffer that fills up is replaced by one twice its size. The heap holds
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
    HEAP_N,
    HW,
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
def room(G: list[np.ndarray], k: int, used: int, extra: int) -> np.ndarray:
    """Buffer ``k`` of ``G`` with room for ``extra`` more ints after ``used``."""
    buf = G[k]
    if used + extra > buf.shape[0]:
        bigger = np.empty(max(2 * buf.shape[0], used + extra), np.int64)
        bigger[:used] = buf[:used]
        G[k] = bigger
        buf = bigger
    return buf


@njit(cache=True)
def next_seq(S: np.ndarray) -> int:
    seq = S[SEQ]
    S[SEQ] = seq + 1
    return seq


@njit(cache=True)
def push(G: list[np.ndarray], S: np.ndarray, t: int, tag: int, a: int, b: int) -> None:
    """heappush((t, next_seq(), tag, a, b)). An event at INF or later marks the run out of
    range (the caller hands it to the Python engine, which answers or refuses it)."""
    seq = next_seq(S)
    if t >= INF:
        S[BAIL] = 1
    n = S[HEAP_N]
    h = room(G, HEAP, n * HW, HW)
    k = n
    while k > 0:  # sift up
        p = (k - 1) >> 1
        pt = h[p * HW]
        if pt < t or (pt == t and h[p * HW + 1] < seq):
            break
        for f in range(HW):
            h[k * HW + f] = h[p * HW + f]
        k = p
    h[k * HW] = t
    h[k * HW + 1] = seq
    h[k * HW + 2] = tag
    h[k * HW + 3] = a
    h[k * HW + 4] = b
    S[HEAP_N] = n + 1


@njit(cache=True)
def pop(G: list[np.ndarray], S: np.ndarray) -> tuple[int, int, int, int, int]:
    """heappop: the earliest (time, seq) entry as (t, seq, tag, a, b). The sentinel is never
    popped (the loop pops only events earlier than the host)."""
    h = G[HEAP]
    n = S[HEAP_N] - 1
    t, seq, tag, a, b = h[0], h[1], h[2], h[3], h[4]
    S[HEAP_N] = n
    if n > 0:
        lt, ls = h[n * HW], h[n * HW + 1]
        k = 0
        while True:  # sift the last entry down from the root
            c = 2 * k + 1
            if c >= n:
                break
            r = c + 1
            if r < n and (
                h[r * HW] < h[c * HW] or (h[r * HW] == h[c * HW] and h[r * HW + 1] < h[c * HW + 1])
            ):
                c = r
            ct = h[c * HW]
            if lt < ct or (lt == ct and ls < h[c * HW + 1]):
                break
            for f in range(HW):
                h[k * HW + f] = h[c * HW + f]
            k = c
        if k != n:
            for f in range(HW):
                h[k * HW + f] = h[n * HW + f]
    return t, seq, tag, a, b


@njit(cache=True)
def todo_push(G: list[np.ndarray], S: np.ndarray, q: int) -> None:
    n = S[TODO_N]
    buf = room(G, TODO, n, 1)
    buf[n] = q
    S[TODO_N] = n + 1


@njit(cache=True)
def add_waiter(OP: np.ndarray, G: list[np.ndarray], S: np.ndarray, op: int, q: int) -> None:
    """waiters[op].append(q): a linked list of (value, next) nodes."""
    k = S[WN_N]
    wn = room(G, WNODES, 2 * k, 2)
    wn[2 * k] = q
    wn[2 * k + 1] = -1
    S[WN_N] = k + 1
    if OP[op, WHEAD] < 0:
        OP[op, WHEAD] = k
    else:
        wn[2 * OP[op, WTAIL] + 1] = k
    OP[op, WTAIL] = k


@njit(cache=True)
def waiters_to_todo(OP: np.ndarray, G: list[np.ndarray], S: np.ndarray, op: int) -> None:
    """todo.extend(waiters[op]); waiters[op] = None."""
    k = OP[op, WHEAD]
    OP[op, WHEAD] = -1
    if k < 0:
        return
    wn = G[WNODES]
    while k >= 0:
        todo_push(G, S, wn[2 * k])
        k = wn[2 * k + 1]


@njit(cache=True)
def dep_push(G: list[np.ndarray], S: np.ndarray, d: int) -> None:
    n = S[DP_N]
    buf = room(G, DPOOL, n, 1)
    buf[n] = d
    S[DP_N] = n + 1


@njit(cache=True)
def edge(G: list[np.ndarray], S: np.ndarray, src: int, dst: int, kind: int) -> None:
    n = S[EDGE_N]
    buf = room(G, EDGES, 3 * n, 3)
    buf[3 * n] = src
    buf[3 * n + 1] = dst
    buf[3 * n + 2] = kind
    S[EDGE_N] = n + 1


@njit(cache=True)
def record_occupancy(G: list[np.ndarray], S: np.ndarray, t: int, sms: int) -> None:
    """The SMs-busy step function changes to ``sms`` at ``t`` (blocks._record_occupancy):
    (time, sms) pairs."""
    n = S[OCC_N]
    occ = room(G, OCC, 2 * n, 2)
    if occ[2 * n - 2] == t:  # a second change at t replaces the first
        if n > 1 and occ[2 * n - 3] == sms:
            S[OCC_N] = n - 1  # back where it was: no step at t after all
        else:
            occ[2 * n - 1] = sms
    else:
        occ[2 * n] = t
        occ[2 * n + 1] = sms
        S[OCC_N] = n + 1
