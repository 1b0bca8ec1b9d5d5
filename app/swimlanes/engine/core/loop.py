"""The compiled event loop: simulator._Run.loop over the core's tables, run for a bounded
number of steps at a time so that Python can poll cancel and progress between them."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from swimlanes.engine.core.blocks import batch_end, blocks_dispatch
from swimlanes.engine.core.borrow import borrowed
from swimlanes.engine.core.buffers import add_waiter, pop, todo_push
from swimlanes.engine.core.copy_engines import copies_dispatch, copies_finish
from swimlanes.engine.core.host import choose_queue, finish, host_step, to_engine
from swimlanes.engine.core.layout import (
    BAIL,
    BLOCKS,
    BUFFERS,
    CONFIG,
    CONFIG_FLOATS,
    COPIES,
    COPY_ENGINE_FLOATS,
    COPY_ENGINES,
    COST,
    DIRTY,
    DONE,
    DONE_STATUS,
    E_VERSION,
    END_TIMES,
    ENQ,
    EV_BATCH,
    EV_COPY,
    EV_TIMER,
    FREE_TOP,
    HEAP,
    HOST_I,
    HOST_T,
    HOSTC,
    INF,
    ISSUE_END_TIMES,
    KIND,
    LAUNCH0,
    MORE,
    N_OPS,
    NEXTQ,
    OP_CODES,
    OP_ENGINES,
    OP_FLOATS,
    OP_TIMES,
    OUT_OF_RANGE,
    PENDING_KERNELS,
    POOL_N,
    POOL_N_D2H,
    POOL_OPS,
    POOL_TIMES,
    Q_HEAD,
    Q_LEN,
    QUEUE,
    QUEUES,
    READY,
    RUN,
    S_QUIET,
    S_TAIL,
    S_WAITING,
    SCALARS,
    SIGNAL,
    SMS_IDLE,
    START_TIMES,
    STREAM,
    STREAMS,
    TODO_N,
    TRACK,
)
from swimlanes.engine.core.queues import drain, examine, release


@njit(cache=True)
def run_steps(state: tuple[Any, ...], budget: int) -> int:
    """Run the event loop for at most ``budget`` steps: DONE_STATUS when the host is done (or
    waits) and nothing on the device happens before INF, MORE when the budget ran out,
    OUT_OF_RANGE when a time reached INF (the Python engine then runs the pipeline).

    Long on purpose, as _Run.loop (whose structure it keeps, step for step, so that events get
    the same sequence numbers): the per-op paths (a plain async call, a copy or kernel
    finishing) are inline; the general cases go through host_step / drain / finish."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    scalars = state[SCALARS]
    streams = state[STREAMS]
    queues = state[QUEUES]
    copy_engines = state[COPY_ENGINES]
    buffers = state[BUFFERS]
    op_codes = state[OP_CODES]
    issue_end = state[ISSUE_END_TIMES]
    end = state[END_TIMES]
    engine = state[OP_ENGINES]
    plain = not (config[SIGNAL] or config[TRACK])
    free_top = config[FREE_TOP]  # queue_choice "free": its connection queues 1 .. free_top
    n = config[N_OPS]
    for _ in range(budget):
        if scalars[BAIL]:
            return OUT_OF_RANGE
        te = buffers[HEAP][0]
        t = scalars[HOST_T]
        if t <= te:
            i = scalars[HOST_I]
            if op_codes[i, HOSTC] != ENQ or not streams[S_QUIET, op_codes[i, STREAM]]:
                if t >= INF:  # the host is done (or waits) and so is the device
                    return DONE_STATUS
                host_step(state, t)
            else:
                # The fast path of host_step + enqueue (a plain async call on a quiet stream),
                # call after call until the next device event or work for the engines.
                stop = scalars[DIRTY] != 0
                while True:
                    s = op_codes[i, STREAM]
                    streams[S_TAIL, s] = i
                    q = op_codes[i, QUEUE]
                    if q <= free_top and q:
                        q = choose_queue(state, i, s)
                    op_times[i, READY] = t + config[LAUNCH0 + op_codes[i, KIND]]
                    queued = queues[Q_LEN, q]
                    if queued:
                        queues[Q_LEN, q] = queued + 1
                    else:
                        stop = True
                        queues[Q_LEN, q] = 1
                        queues[Q_HEAD, q] = i
                        examine(state, q, t)
                    issue_end[i] = t
                    i += 1
                    next_t = t + op_times[i, COST]
                    if (
                        stop
                        or next_t > te
                        or op_codes[i, HOSTC] != ENQ
                        or not streams[S_QUIET, op_codes[i, STREAM]]
                    ):
                        break
                    t = next_t
                scalars[HOST_I] = i
                scalars[HOST_T] = next_t
                if i < n and next_t >= INF:
                    scalars[BAIL] = 1
                if not (scalars[TODO_N] or scalars[DIRTY]):
                    continue
        else:
            t, _seq, tag, a, b = pop(buffers, scalars)
            if tag == EV_TIMER:
                queued = queues[Q_LEN, a]
                if b >= 0 and queued and queues[Q_HEAD, a] == b:
                    # The hinted head leaves now (see queues.make_release).
                    queued -= 1
                    queues[Q_LEN, a] = queued
                    if queued:
                        queues[Q_HEAD, a] = op_codes[b, NEXTQ]
                    if a <= free_top and a:
                        streams[S_WAITING, op_codes[b, STREAM]] -= 1
                    to_engine(state, op_codes[b, RUN], b, t)
                    if queued:  # the next op waits for it: re-examine then
                        add_waiter(op_times, buffers, scalars, b, a)
                else:
                    todo_push(buffers, scalars, a)
            elif tag == EV_COPY:
                if b != copy_engines[E_VERSION, a]:  # stale: the copy's speed changed since
                    if b < 0:  # the engine's rest is over
                        scalars[DIRTY] |= COPIES
                    elif not scalars[DIRTY]:
                        continue
                else:
                    op = copies_finish(
                        config,
                        state[CONFIG_FLOATS],
                        scalars,
                        copy_engines,
                        state[COPY_ENGINE_FLOATS],
                        buffers,
                        a,
                        t,
                    )
                    engine[op] = a
                    end[op] = t
                    op_times[op, DONE] = t
                    release(state, op, t)
                    scalars[DIRTY] |= COPIES
            elif tag == EV_BATCH:
                ended = batch_end(
                    op_times, op_codes, scalars, state[PENDING_KERNELS], buffers, a, b, t
                )
                if ended != SMS_IDLE:
                    scalars[DIRTY] |= BLOCKS
                if ended:
                    if plain:
                        end[a] = t
                        op_times[a, DONE] = t
                        release(state, a, t)
                    else:
                        finish(state, a, t)
            else:
                finish(state, a, t)
        if scalars[TODO_N]:
            drain(state, t)
        if scalars[DIRTY] and buffers[HEAP][0] > t and scalars[HOST_T] > t:
            # Nothing else happens at t: idle engines pick their next work.
            dirty = scalars[DIRTY]
            scalars[DIRTY] = 0
            if dirty & COPIES and (scalars[POOL_N] or scalars[POOL_N_D2H]):
                copies_dispatch(
                    op_times,
                    op_codes,
                    config,
                    state[CONFIG_FLOATS],
                    scalars,
                    copy_engines,
                    state[COPY_ENGINE_FLOATS],
                    state[POOL_TIMES],
                    state[POOL_OPS],
                    buffers,
                    state[START_TIMES],
                    t,
                )
            if dirty & BLOCKS:
                blocks_dispatch(
                    op_times,
                    op_codes,
                    state[OP_FLOATS],
                    config,
                    scalars,
                    state[PENDING_KERNELS],
                    buffers,
                    state[START_TIMES],
                    t,
                )
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
    (
        op_times, op_codes, op_floats, config, config_floats, scalars, streams, queues,
        copy_engines, copy_engine_floats, pool_times, pool_ops, pending_kernels, barrier_ops,
        host_wait, groups,
    ) = tables  # fmt: skip
    issue_end, start, end, engine = outputs
    buffer_list = [buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], buffers[5]]
    # In the order of layout's state slots (OP_TIMES, OP_FLOATS, ..., OP_CODES).
    state = (
        borrowed(op_times), borrowed(op_floats), borrowed(config), borrowed(config_floats),
        borrowed(scalars), borrowed(streams), borrowed(queues), borrowed(copy_engines),
        borrowed(copy_engine_floats), borrowed(pool_times), borrowed(pool_ops),
        borrowed(pending_kernels), borrowed(barrier_ops), borrowed(host_wait), borrowed(groups),
        buffer_list, borrowed(issue_end), borrowed(start), borrowed(end), borrowed(engine),
        borrowed(op_codes),
    )  # fmt: skip
    status = run_steps(state, budget)
    return (
        status, buffer_list[0], buffer_list[1], buffer_list[2], buffer_list[3], buffer_list[4],
        buffer_list[5],
    )  # fmt: skip
