"""The compiled event loop: simulator._Run.loop over the core's tables, run for a bounded
number of steps at a time so that Python can poll cancel and progress between them."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from swimlanes.engine.core.borrow import borrowed
from swimlanes.engine.core.buffers import add_waiter, pop, todo_push
from swimlanes.engine.core.engines import (
    batch_end,
    blocks_dispatch,
    copies_dispatch,
    copies_finish,
)
from swimlanes.engine.core.host import finish, host_step, to_engine
from swimlanes.engine.core.layout import (
    BAIL,
    BLOCKS,
    COPIES,
    COST,
    DIRTY,
    DONE,
    DONE_STATUS,
    E_VERSION,
    ENQ,
    EV_BATCH,
    EV_COPY,
    EV_TIMER,
    HEAP,
    HOST_I,
    HOST_T,
    HOSTC,
    INF,
    KIND,
    LAUNCH0,
    MORE,
    N_OPS,
    NEXTQ,
    OUT_OF_RANGE,
    POOL_N,
    POOL_N_D2H,
    Q_HEAD,
    Q_LEN,
    QUEUE,
    READY,
    RUN,
    S_QUIET,
    S_TAIL,
    SIGNAL,
    SMS_IDLE,
    STREAM,
    TODO_N,
    TRACK,
)
from swimlanes.engine.core.queues import drain, examine, release


@njit(cache=True)
def run_steps(st: tuple[Any, ...], budget: int) -> int:
    """Run the event loop for at most ``budget`` steps: DONE_STATUS when the host is done (or
    waits) and nothing on the device happens before INF, MORE when the budget ran out,
    OUT_OF_RANGE when a time reached INF (the Python engine then runs the pipeline).

    Long on purpose, as _Run.loop (whose structure it keeps, step for step, so that events get
    the same sequence numbers): the per-op paths (a plain async call, a copy or kernel
    finishing) are inline; the general cases go through host_step / drain / finish."""
    OP, C, S, ST, Q, E, G = st[0], st[2], st[4], st[5], st[6], st[7], st[15]
    OI = st[20]
    issue_end, end, engine = st[16], st[18], st[19]
    plain = not (C[SIGNAL] or C[TRACK])
    n = C[N_OPS]
    for _ in range(budget):
        if S[BAIL]:
            return OUT_OF_RANGE
        te = G[HEAP][0]
        t = S[HOST_T]
        if t <= te:
            i = S[HOST_I]
            if OI[i, HOSTC] != ENQ or not ST[S_QUIET, OI[i, STREAM]]:
                if t >= INF:  # the host is done (or waits) and so is the device
                    return DONE_STATUS
                host_step(st, t)
            else:
                # The fast path of host_step + enqueue (a plain async call on a quiet stream),
                # call after call until the next device event or work for the engines.
                stop = S[DIRTY] != 0
                while True:
                    ST[S_TAIL, OI[i, STREAM]] = i
                    q = OI[i, QUEUE]
                    OP[i, READY] = t + C[LAUNCH0 + OI[i, KIND]]
                    queued = Q[Q_LEN, q]
                    if queued:
                        Q[Q_LEN, q] = queued + 1
                    else:
                        stop = True
                        Q[Q_LEN, q] = 1
                        Q[Q_HEAD, q] = i
                        examine(st, q, t)
                    issue_end[i] = t
                    i += 1
                    next_t = t + OP[i, COST]
                    if stop or next_t > te or OI[i, HOSTC] != ENQ or not ST[S_QUIET, OI[i, STREAM]]:
                        break
                    t = next_t
                S[HOST_I] = i
                S[HOST_T] = next_t
                if i < n and next_t >= INF:
                    S[BAIL] = 1
                if not (S[TODO_N] or S[DIRTY]):
                    continue
        else:
            t, _seq, tag, a, b = pop(G, S)
            if tag == EV_TIMER:
                queued = Q[Q_LEN, a]
                if b >= 0 and queued and Q[Q_HEAD, a] == b:
                    # The hinted head leaves now (see queues.make_release).
                    queued -= 1
                    Q[Q_LEN, a] = queued
                    if queued:
                        Q[Q_HEAD, a] = OI[b, NEXTQ]
                    to_engine(st, OI[b, RUN], b, t)
                    if queued:  # the next op waits for it: re-examine then
                        add_waiter(OP, G, S, b, a)
                else:
                    todo_push(G, S, a)
            elif tag == EV_COPY:
                if b != E[E_VERSION, a]:  # stale: the copy's speed changed since
                    if b < 0:  # the engine's rest is over
                        S[DIRTY] |= COPIES
                    elif not S[DIRTY]:
                        continue
                else:
                    op = copies_finish(C, st[3], S, E, st[8], G, a, t)
                    engine[op] = a
                    end[op] = t
                    OP[op, DONE] = t
                    release(st, op, t)
                    S[DIRTY] |= COPIES
            elif tag == EV_BATCH:
                ended = batch_end(OP, OI, S, st[11], G, a, b, t)
                if ended != SMS_IDLE:
                    S[DIRTY] |= BLOCKS
                if ended:
                    if plain:
                        end[a] = t
                        OP[a, DONE] = t
                        release(st, a, t)
                    else:
                        finish(st, a, t)
            else:
                finish(st, a, t)
        if S[TODO_N]:
            drain(st, t)
        if S[DIRTY] and G[HEAP][0] > t and S[HOST_T] > t:
            # Nothing else happens at t: idle engines pick their next work.
            dirty = S[DIRTY]
            S[DIRTY] = 0
            if dirty & COPIES and (S[POOL_N] or S[POOL_N_D2H]):
                copies_dispatch(OP, OI, C, st[3], S, E, st[8], st[9], st[10], G, st[17], t)
            if dirty & BLOCKS:
                blocks_dispatch(OP, OI, st[1], C, S, st[11], G, st[17], t)
    return MORE


@njit(cache=True, nogil=True)  # (a simulation on a worker thread leaves the UI thread running)
def run_chunk(
    tables: tuple[np.ndarray, ...],
    buffers: tuple[np.ndarray, ...],
    outputs: tuple[np.ndarray, ...],
    budget: int,
) -> tuple[Any, ...]:
    """One bounded run of the loop over ``tables`` (prepare.State's, in its order), the
    growable ``buffers`` and the run's ``outputs`` columns; returns the status and the buffers
    (which it may have replaced by bigger ones). The tables and columns are borrowed (see
    borrow.py): the caller holds them."""
    OP, OI, F, C, CF, S, ST, Q, E, EF, PT, PO, PEND, BAR, HWAIT, GR = tables
    issue_end, start, end, engine = outputs
    G = [buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], buffers[5]]
    st = (
        borrowed(OP), borrowed(F), borrowed(C), borrowed(CF), borrowed(S), borrowed(ST),
        borrowed(Q), borrowed(E), borrowed(EF), borrowed(PT), borrowed(PO), borrowed(PEND),
        borrowed(BAR), borrowed(HWAIT), borrowed(GR), G, borrowed(issue_end), borrowed(start),
        borrowed(end), borrowed(engine), borrowed(OI),
    )  # fmt: skip
    status = run_steps(st, budget)
    return status, G[0], G[1], G[2], G[3], G[4], G[5]
