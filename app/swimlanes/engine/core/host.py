"""The compiled host thread, engine entries and completions: engine/state.py's host_step,
enqueue, stream_deps, barriers and check_host, and simulator._Run's entries (to_kernel,
to_sm_copy, to_callback) and finish, over the tables of layout.

Every function takes the whole state tuple ``state`` (run_chunk builds it; layout names its
slots) and unpacks what it needs: numba passes it by reference and inlines the unpacking.
"""

from __future__ import annotations

from typing import Any

from numba import njit

from swimlanes.engine.core.blocks import blocks_add, new_work
from swimlanes.engine.core.buffers import (
    add_waiter,
    dep_push,
    edge,
    push,
    todo_push,
    waiters_to_todo,
)
from swimlanes.engine.core.copy_engines import to_copy_engine
from swimlanes.engine.core.layout import (
    BAIL,
    BAR_N,
    BARRIER,
    BARRIER_ID,
    BARRIER_OPS,
    BLOCKS,
    BUFFERS,
    BUSY,
    CB_COLD,
    CB_WAKE,
    COMPUTE,
    CONFIG,
    COST,
    DEP_DEFAULT_STREAM,
    DEP_HOST,
    DIRTY,
    DLEN,
    DONE,
    DP_N,
    DSTART,
    END_TIMES,
    ENQ,
    ENQ_BARRIER,
    ENQ_STAGE,
    ENQ_WAIT,
    EV_CALLBACK,
    EVENT_WAIT_KIND,
    FREE_TOP,
    G_COUNT,
    G_HEAD,
    G_TAIL,
    GROUP,
    GROUP_N,
    GROUPS,
    HOST,
    HOST_I,
    HOST_T,
    HOST_WAIT,
    HOST_WAITING,
    HOSTC,
    HW_N,
    INF,
    ISSUE_END_TIMES,
    KIND,
    LAST_DEFAULT,
    LAUNCH0,
    LK_GROUP,
    LK_OP,
    LK_STREAM,
    N_OPS,
    N_STREAMS,
    NEXTDEF,
    NEXTQ,
    OP_CODES,
    OP_ENGINES,
    OP_FLOATS,
    OP_TIMES,
    PENDING_KERNELS,
    POOL_OPS,
    POOL_TIMES,
    Q_HEAD,
    Q_LEN,
    Q_TAIL,
    QUEUE,
    QUEUES,
    READY,
    RECORD,
    RUN,
    RUN_COPY,
    RUN_INSTANT,
    RUN_KERNEL,
    RUN_SM,
    S_CLASS,
    S_COVERED,
    S_PRIO,
    S_QUEUE,
    S_QUIET,
    S_SEEN_BARRIER,
    S_SEEN_DEFAULT,
    S_TAIL,
    S_WAITING,
    SCALARS,
    SIGNAL,
    SM_COUNT,
    SMC_COST,
    SMC_MAXRES,
    SOLO,
    STAGE,
    STAGE_OFF,
    START_TIMES,
    STREAM,
    STREAM_BLOCKING,
    STREAM_LEGACY,
    STREAMS,
    SYNC0,
    TURN,
    W_BLOCK_NS,
    W_COST,
    W_MAXRES,
    W_REM,
    WAIT_ALL,
    WAIT_EVENT,
    WAIT_STREAM,
)


# -- completions ---------------------------------------------------------------------------------
@njit(cache=True)
def finish(state: tuple[Any, ...], i: int, t: int) -> None:
    """_Run.finish: op i ended on its engine at t; make it visible to dependents."""
    op_times = state[OP_TIMES]
    buffers = state[BUFFERS]
    scalars = state[SCALARS]
    config = state[CONFIG]
    end = state[END_TIMES]
    end[i] = t
    if config[SIGNAL]:
        finish_grouped(state, i, t)
        return
    op_times[i, DONE] = t
    waiters_to_todo(op_times, buffers, scalars, i)


@njit(cache=True)
def finish_grouped(state: tuple[Any, ...], i: int, t: int) -> None:
    """_Run.finish_grouped: Fermi signals a kernel's group only when its last member ends."""
    op_times = state[OP_TIMES]
    scalars = state[SCALARS]
    groups = state[GROUPS]
    buffers = state[BUFFERS]
    op_codes = state[OP_CODES]
    g = op_codes[i, GROUP]
    if g >= 0:
        op_codes[i, GROUP] = -1  # groups.pop(i)
        groups[G_COUNT, g] -= 1
        op_codes[i, NEXTDEF] = -1  # group[1].append(i)
        if groups[G_HEAD, g] < 0:
            groups[G_HEAD, g] = i
        else:
            op_codes[groups[G_TAIL, g], NEXTDEF] = i
        groups[G_TAIL, g] = i
        if groups[G_COUNT, g] > 0:
            return
        x = groups[G_HEAD, g]
        groups[G_HEAD, g] = -1
        while x >= 0:
            op_times[x, DONE] = t
            waiters_to_todo(op_times, buffers, scalars, x)
            x = op_codes[x, NEXTDEF]
        return
    op_times[i, DONE] = t
    waiters_to_todo(op_times, buffers, scalars, i)


@njit(cache=True)
def group_kernel(state: tuple[Any, ...], i: int, s: int) -> None:
    """RunState.group_kernel: Fermi's completion groups, decided at launch."""
    scalars = state[SCALARS]
    groups = state[GROUPS]
    op_codes = state[OP_CODES]
    g = scalars[LK_GROUP]
    if not (scalars[LK_OP] == i - 1 and scalars[LK_STREAM] != s and groups[G_COUNT, g] > 0):
        g = scalars[GROUP_N]
        scalars[GROUP_N] = g + 1
        groups[G_COUNT, g] = 0
        groups[G_HEAD, g] = -1
    groups[G_COUNT, g] += 1
    op_codes[i, GROUP] = g
    scalars[LK_OP], scalars[LK_STREAM], scalars[LK_GROUP] = i, s, g


# -- engine entries (the table of _Run.engine_entries) --------------------------------------------
@njit(cache=True)
def to_engine(state: tuple[Any, ...], r: int, i: int, t: int) -> None:
    """Op i leaves its hardware queue at t for the engine of run code r."""
    op_times = state[OP_TIMES]
    op_floats = state[OP_FLOATS]
    config = state[CONFIG]
    scalars = state[SCALARS]
    streams = state[STREAMS]
    op_codes = state[OP_CODES]
    if r == RUN_COPY:
        to_copy_engine(op_codes, config, scalars, state[POOL_TIMES], state[POOL_OPS], i, t)
    elif r == RUN_KERNEL:
        s = op_codes[i, STREAM]
        if config[SIGNAL]:
            group_kernel(state, i, s)
        new_work(op_times, op_codes, op_floats, scalars, i, streams[S_PRIO, s])
        blocks_add(op_times, op_codes, scalars, state[PENDING_KERNELS], i)
        state[OP_ENGINES][i] = config[COMPUTE]
        scalars[DIRTY] |= BLOCKS
    elif r == RUN_SM:  # d2d copies and memsets: one wave over every SM at memory bandwidth
        solo = op_times[i, SOLO]
        block_ns = float(solo if solo > 1 else 1)
        op_times[i, W_REM], op_codes[i, W_COST], op_times[i, W_MAXRES] = (
            config[SM_COUNT],
            config[SMC_COST],
            config[SMC_MAXRES],
        )
        op_floats[i, W_BLOCK_NS] = block_ns
        new_work(op_times, op_codes, op_floats, scalars, i, streams[S_PRIO, op_codes[i, STREAM]])
        blocks_add(op_times, op_codes, scalars, state[PENDING_KERNELS], i)
        state[OP_ENGINES][i] = config[COMPUTE]
        scalars[DIRTY] |= BLOCKS
    elif r == RUN_INSTANT:
        state[START_TIMES][i] = t
        finish(state, i, t)
    else:  # a host function (RunState.to_callback: the first one wakes the thread late)
        wake = scalars[CB_WAKE]
        if wake < 0:
            wake = t + config[CB_COLD]
            scalars[CB_WAKE] = wake
        start = wake if wake > t else t
        state[START_TIMES][i] = start
        solo = op_times[i, SOLO]
        if solo > 0 or start > t:
            push(state[BUFFERS], scalars, start + solo, EV_CALLBACK, i, 0)
        else:
            finish(state, i, t)


# -- host thread -------------------------------------------------------------------------------
@njit(cache=True)
def stream_deps(state: tuple[Any, ...], i: int, s: int, kind: int, p: int) -> None:
    """RunState.stream_deps: op i's dependencies into the pool (its DSTART/DLEN); edges."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    scalars = state[SCALARS]
    streams = state[STREAMS]
    barrier_ops = state[BARRIER_OPS]
    buffers = state[BUFFERS]
    op_codes = state[OP_CODES]
    first = scalars[DP_N]
    if p >= 0:
        dep_push(buffers, scalars, p)
    if kind == config[EVENT_WAIT_KIND]:
        r = op_codes[i, RECORD]
        if r >= 0:
            dep_push(buffers, scalars, r)
    klass = streams[S_CLASS, s]
    n_streams = config[N_STREAMS]
    if klass == STREAM_LEGACY:
        for b in range(n_streams):
            tb = streams[S_TAIL, b]
            if streams[S_CLASS, b] == STREAM_BLOCKING and tb >= 0 and tb != streams[S_COVERED, b]:
                dep_push(buffers, scalars, tb)
                edge(buffers, scalars, tb, i, DEP_DEFAULT_STREAM)
                streams[S_COVERED, b] = tb
        scalars[LAST_DEFAULT] = i
        for b in range(n_streams):
            if streams[S_CLASS, b] == STREAM_BLOCKING:
                streams[S_QUIET, b] = 0
    elif klass == STREAM_BLOCKING:
        ld = scalars[LAST_DEFAULT]
        if ld >= 0 and ld != streams[S_SEEN_DEFAULT, s]:
            streams[S_SEEN_DEFAULT, s] = ld
            dep_push(buffers, scalars, ld)
            edge(buffers, scalars, ld, i, DEP_DEFAULT_STREAM)
    if streams[S_SEEN_BARRIER, s] != scalars[BARRIER_ID]:
        streams[S_SEEN_BARRIER, s] = scalars[BARRIER_ID]
        for k in range(scalars[BAR_N]):
            b = barrier_ops[k]
            if b != p and b != i:
                dep_push(buffers, scalars, b)
                edge(buffers, scalars, b, i, DEP_DEFAULT_STREAM)
    streams[S_QUIET, s] = 1 if klass != STREAM_LEGACY else 0
    op_times[i, DSTART] = first
    op_codes[i, DLEN] = scalars[DP_N] - first


@njit(cache=True)
def enqueue(state: tuple[Any, ...], i: int, t: int) -> None:
    """RunState.enqueue."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    scalars = state[SCALARS]
    streams = state[STREAMS]
    queues = state[QUEUES]
    buffers = state[BUFFERS]
    op_codes = state[OP_CODES]
    s, kind = op_codes[i, STREAM], op_codes[i, KIND]
    p = streams[S_TAIL, s]
    if not streams[S_QUIET, s]:
        stream_deps(state, i, s, kind, p)
    streams[S_TAIL, s] = i
    q = op_codes[i, QUEUE]
    if q <= config[FREE_TOP] and q:
        q = choose_queue(state, i, s)
    op_times[i, READY] = t + config[LAUNCH0 + kind]
    queued = queues[Q_LEN, q]
    queues[Q_LEN, q] = queued + 1
    if not queued:
        queues[Q_HEAD, q] = i
        todo_push(buffers, scalars, q)


@njit(cache=True)
def choose_queue(state: tuple[Any, ...], i: int, s: int) -> int:
    """FreeQueues.choose: the connection queue op i of stream s joins now (queue_choice
    "free"), linked into that queue's chain."""
    config = state[CONFIG]
    scalars = state[SCALARS]
    streams = state[STREAMS]
    queues = state[QUEUES]
    op_codes = state[OP_CODES]
    top = config[FREE_TOP]
    if streams[S_WAITING, s]:
        q = streams[S_QUEUE, s]
    else:
        q = 1
        while q <= top and queues[Q_LEN, q]:
            q += 1
        if q > top:  # every queue holds an op: round-robin
            q = 1 + scalars[TURN]
            scalars[TURN] = q % top
        streams[S_QUEUE, s] = q
    streams[S_WAITING, s] += 1
    if queues[Q_LEN, q]:
        op_codes[queues[Q_TAIL, q], NEXTQ] = i
    queues[Q_TAIL, q] = i
    return q


@njit(cache=True)
def set_barrier(state: tuple[Any, ...]) -> None:
    """RunState.set_barrier: later work waits for all work issued so far."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    scalars = state[SCALARS]
    streams = state[STREAMS]
    barrier_ops = state[BARRIER_OPS]
    k = 0
    for b in range(config[N_STREAMS]):
        x = streams[S_TAIL, b]
        if x >= 0 and op_times[x, DONE] < 0:
            barrier_ops[k] = x
            k += 1
    scalars[BAR_N] = k
    scalars[BARRIER_ID] += 1
    streams[S_QUIET, :] = 0


@njit(cache=True)
def host_return(state: tuple[Any, ...], t: int, released_by: int) -> None:
    """RunState.host_return: the call of op host_i returns at t."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    scalars = state[SCALARS]
    buffers = state[BUFFERS]
    i = scalars[HOST_I]
    state[ISSUE_END_TIMES][i] = t
    if released_by >= 0 and released_by != i:
        edge(buffers, scalars, released_by, i, DEP_HOST)
    i += 1
    scalars[HOST_I] = i
    if i < config[N_OPS]:
        scalars[HOST_T] = t + op_times[i, COST]
        if scalars[HOST_T] >= INF:
            scalars[BAIL] = 1
    else:
        scalars[HOST_T] = INF


@njit(cache=True)
def check_host(state: tuple[Any, ...], t: int) -> None:
    """RunState.check_host: return from the blocking call once what it waits for is done."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    scalars = state[SCALARS]
    host_wait = state[HOST_WAIT]
    buffers = state[BUFFERS]
    op_codes = state[OP_CODES]
    last = -1
    for k in range(scalars[HW_N]):
        x = host_wait[k]
        if op_times[x, DONE] < 0:
            add_waiter(op_times, buffers, scalars, x, HOST)
            return
        if last < 0 or op_times[x, DONE] > op_times[last, DONE]:  # max(): the first of the latest
            last = x
    scalars[HOST_WAITING] = 0
    i = scalars[HOST_I]
    # (STAGE: a pageable D2H's last copy-out)
    lag = config[SYNC0 + op_codes[i, HOSTC]] + op_times[i, STAGE]
    if lag:
        u = op_times[last, DONE] + lag
        host_return(state, u if u > t else t, last)
    else:
        host_return(state, t, last)


@njit(cache=True)
def host_step(state: tuple[Any, ...], t: int) -> None:
    """RunState.host_step: the call of op host_i takes effect at t."""
    op_times = state[OP_TIMES]
    config = state[CONFIG]
    scalars = state[SCALARS]
    streams = state[STREAMS]
    barrier_ops = state[BARRIER_OPS]
    host_wait = state[HOST_WAIT]
    op_codes = state[OP_CODES]
    i = scalars[HOST_I]
    h = op_codes[i, HOSTC]
    if h == ENQ:
        enqueue(state, i, t)
        state[ISSUE_END_TIMES][i] = t
        i += 1
        scalars[HOST_I] = i
        if i < config[N_OPS]:
            scalars[HOST_T] = t + op_times[i, COST]
            if scalars[HOST_T] >= INF:
                scalars[BAIL] = 1
        else:
            scalars[HOST_T] = INF
        return
    n_wait = 0
    busy = 0
    if op_codes[i, RUN] >= 0:
        if h == ENQ_BARRIER:
            set_barrier(state)
        enqueue(state, i, t)
        if h == ENQ_WAIT:
            host_wait[0] = i
            n_wait = 1
        elif h == ENQ_STAGE:
            busy = op_times[i, STAGE]
            # The DMA waits for the first chunk (prepare).
            op_times[i, READY] += op_times[i, STAGE_OFF]
        elif h == ENQ_BARRIER:
            barrier_ops[0] = i
            scalars[BAR_N] = 1
            scalars[BARRIER_ID] += 1
            streams[S_QUIET, :] = 0
    elif h == WAIT_STREAM:
        s = op_codes[i, STREAM]
        if s >= 0 and streams[S_TAIL, s] >= 0:
            host_wait[0] = streams[S_TAIL, s]
            n_wait = 1
    elif h == WAIT_EVENT:
        r = op_codes[i, RECORD]
        if r >= 0:
            host_wait[0] = r
            n_wait = 1
    elif h == WAIT_ALL:
        for b in range(config[N_STREAMS]):
            x = streams[S_TAIL, b]
            if x >= 0:
                host_wait[n_wait] = x
                n_wait += 1
    elif h == BUSY:
        busy = op_times[i, SOLO]
    elif h == BARRIER:
        set_barrier(state)
    if n_wait:
        scalars[HW_N] = n_wait
        scalars[HOST_WAITING] = 1
        scalars[HOST_T] = INF
        check_host(state, t)
    else:
        if t + busy >= INF:
            scalars[BAIL] = 1
        host_return(state, t + busy, -1)
