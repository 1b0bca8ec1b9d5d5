"""The compiled host thread, engine entries and completions: engine/state.py's host_step,
enqueue, stream_deps, barriers and check_host, and simulator._Run's entries (to_kernel,
to_sm_copy, to_callback) and finish, over the tables of layout.

Every function takes the whole state tuple ``st`` (see prepare.State.as_tuple) and unpacks what
it needs: numba passes it by reference and inlines the unpacking.
"""

from __future__ import annotations

from typing import Any

from numba import njit

from swimlanes.engine.core.buffers import (
    add_waiter,
    dep_push,
    edge,
    push,
    todo_push,
    waiters_to_todo,
)
from swimlanes.engine.core.engines import blocks_add, new_work, to_copy_engine
from swimlanes.engine.core.layout import (
    BAIL,
    BAR_N,
    BARRIER,
    BARRIER_ID,
    BLOCKS,
    BUSY,
    COMPUTE,
    COST,
    DEP_DEFAULT_STREAM,
    DEP_HOST,
    DIRTY,
    DLEN,
    DONE,
    DP_N,
    DSTART,
    ENQ,
    ENQ_BARRIER,
    ENQ_STAGE,
    ENQ_WAIT,
    EV_CALLBACK,
    EVENT_WAIT_KIND,
    G_COUNT,
    G_HEAD,
    G_TAIL,
    GROUP,
    GROUP_N,
    HOST,
    HOST_I,
    HOST_T,
    HOST_WAITING,
    HOSTC,
    HW_N,
    INF,
    KIND,
    LAST_DEFAULT,
    LAUNCH0,
    LK_GROUP,
    LK_OP,
    LK_STREAM,
    N_OPS,
    N_STREAMS,
    NEXTDEF,
    Q_HEAD,
    Q_LEN,
    QUEUE,
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
    S_QUIET,
    S_SEEN_BARRIER,
    S_SEEN_DEFAULT,
    S_TAIL,
    SIGNAL,
    SM_COUNT,
    SMC_COST,
    SMC_MAXRES,
    SOLO,
    STAGE,
    STAGE_OFF,
    STREAM,
    STREAM_BLOCKING,
    STREAM_LEGACY,
    SYNC0,
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
def finish(st: tuple[Any, ...], i: int, t: int) -> None:
    """_Run.finish: op i ended on its engine at t; make it visible to dependents."""
    OP, G, S, C, end = st[0], st[15], st[4], st[2], st[18]
    end[i] = t
    if C[SIGNAL]:
        finish_grouped(st, i, t)
        return
    OP[i, DONE] = t
    waiters_to_todo(OP, G, S, i)


@njit(cache=True)
def finish_grouped(st: tuple[Any, ...], i: int, t: int) -> None:
    """_Run.finish_grouped: Fermi signals a kernel's group only when its last member ends."""
    OP, S, GR, G = st[0], st[4], st[14], st[15]
    OI = st[20]
    g = OI[i, GROUP]
    if g >= 0:
        OI[i, GROUP] = -1  # groups.pop(i)
        GR[G_COUNT, g] -= 1
        OI[i, NEXTDEF] = -1  # group[1].append(i)
        if GR[G_HEAD, g] < 0:
            GR[G_HEAD, g] = i
        else:
            OI[GR[G_TAIL, g], NEXTDEF] = i
        GR[G_TAIL, g] = i
        if GR[G_COUNT, g] > 0:
            return
        x = GR[G_HEAD, g]
        GR[G_HEAD, g] = -1
        while x >= 0:
            OP[x, DONE] = t
            waiters_to_todo(OP, G, S, x)
            x = OI[x, NEXTDEF]
        return
    OP[i, DONE] = t
    waiters_to_todo(OP, G, S, i)


@njit(cache=True)
def group_kernel(st: tuple[Any, ...], i: int, s: int) -> None:
    """RunState.group_kernel: Fermi's completion groups, decided at launch."""
    S, GR, OI = st[4], st[14], st[20]
    g = S[LK_GROUP]
    if not (S[LK_OP] == i - 1 and S[LK_STREAM] != s and GR[G_COUNT, g] > 0):
        g = S[GROUP_N]
        S[GROUP_N] = g + 1
        GR[G_COUNT, g] = 0
        GR[G_HEAD, g] = -1
    GR[G_COUNT, g] += 1
    OI[i, GROUP] = g
    S[LK_OP], S[LK_STREAM], S[LK_GROUP] = i, s, g


# -- engine entries (the table of _Run.engine_entries) --------------------------------------------
@njit(cache=True)
def to_engine(st: tuple[Any, ...], r: int, i: int, t: int) -> None:
    """Op i leaves its hardware queue at t for the engine of run code r."""
    OP, F, C, S, ST = st[0], st[1], st[2], st[4], st[5]
    OI = st[20]
    if r == RUN_COPY:
        to_copy_engine(OI, C, S, st[9], st[10], i, t)
    elif r == RUN_KERNEL:
        s = OI[i, STREAM]
        if C[SIGNAL]:
            group_kernel(st, i, s)
        new_work(OP, OI, F, S, i, ST[S_PRIO, s])
        blocks_add(OP, OI, S, st[11], i)
        st[19][i] = C[COMPUTE]
        S[DIRTY] |= BLOCKS
    elif r == RUN_SM:  # d2d copies and memsets: one wave over every SM at memory bandwidth
        solo = OP[i, SOLO]
        block_ns = float(solo if solo > 1 else 1)
        OP[i, W_REM], OI[i, W_COST], OP[i, W_MAXRES] = C[SM_COUNT], C[SMC_COST], C[SMC_MAXRES]
        F[i, W_BLOCK_NS] = block_ns
        new_work(OP, OI, F, S, i, ST[S_PRIO, OI[i, STREAM]])
        blocks_add(OP, OI, S, st[11], i)
        st[19][i] = C[COMPUTE]
        S[DIRTY] |= BLOCKS
    elif r == RUN_INSTANT:
        st[17][i] = t
        finish(st, i, t)
    else:  # a host function
        st[17][i] = t
        solo = OP[i, SOLO]
        if solo > 0:
            push(st[15], S, t + solo, EV_CALLBACK, i, 0)
        else:
            finish(st, i, t)


# -- host thread -------------------------------------------------------------------------------
@njit(cache=True)
def stream_deps(st: tuple[Any, ...], i: int, s: int, kind: int, p: int) -> None:
    """RunState.stream_deps: op i's dependencies into the pool (its DSTART/DLEN); edges."""
    OP, C, S, ST, BAR, G = st[0], st[2], st[4], st[5], st[12], st[15]
    OI = st[20]
    first = S[DP_N]
    if p >= 0:
        dep_push(G, S, p)
    if kind == C[EVENT_WAIT_KIND]:
        r = OI[i, RECORD]
        if r >= 0:
            dep_push(G, S, r)
    klass = ST[S_CLASS, s]
    n_streams = C[N_STREAMS]
    if klass == STREAM_LEGACY:
        for b in range(n_streams):
            tb = ST[S_TAIL, b]
            if ST[S_CLASS, b] == STREAM_BLOCKING and tb >= 0 and tb != ST[S_COVERED, b]:
                dep_push(G, S, tb)
                edge(G, S, tb, i, DEP_DEFAULT_STREAM)
                ST[S_COVERED, b] = tb
        S[LAST_DEFAULT] = i
        for b in range(n_streams):
            if ST[S_CLASS, b] == STREAM_BLOCKING:
                ST[S_QUIET, b] = 0
    elif klass == STREAM_BLOCKING:
        ld = S[LAST_DEFAULT]
        if ld >= 0 and ld != ST[S_SEEN_DEFAULT, s]:
            ST[S_SEEN_DEFAULT, s] = ld
            dep_push(G, S, ld)
            edge(G, S, ld, i, DEP_DEFAULT_STREAM)
    if ST[S_SEEN_BARRIER, s] != S[BARRIER_ID]:
        ST[S_SEEN_BARRIER, s] = S[BARRIER_ID]
        for k in range(S[BAR_N]):
            b = BAR[k]
            if b != p and b != i:
                dep_push(G, S, b)
                edge(G, S, b, i, DEP_DEFAULT_STREAM)
    ST[S_QUIET, s] = 1 if klass != STREAM_LEGACY else 0
    OP[i, DSTART] = first
    OI[i, DLEN] = S[DP_N] - first


@njit(cache=True)
def enqueue(st: tuple[Any, ...], i: int, t: int) -> None:
    """RunState.enqueue."""
    OP, C, S, ST, Q, G = st[0], st[2], st[4], st[5], st[6], st[15]
    OI = st[20]
    s, kind = OI[i, STREAM], OI[i, KIND]
    p = ST[S_TAIL, s]
    if not ST[S_QUIET, s]:
        stream_deps(st, i, s, kind, p)
    ST[S_TAIL, s] = i
    q = OI[i, QUEUE]
    OP[i, READY] = t + C[LAUNCH0 + kind]
    queued = Q[Q_LEN, q]
    Q[Q_LEN, q] = queued + 1
    if not queued:
        Q[Q_HEAD, q] = i
        todo_push(G, S, q)


@njit(cache=True)
def set_barrier(st: tuple[Any, ...]) -> None:
    """RunState.set_barrier: later work waits for all work issued so far."""
    OP, C, S, ST, BAR = st[0], st[2], st[4], st[5], st[12]
    k = 0
    for b in range(C[N_STREAMS]):
        x = ST[S_TAIL, b]
        if x >= 0 and OP[x, DONE] < 0:
            BAR[k] = x
            k += 1
    S[BAR_N] = k
    S[BARRIER_ID] += 1
    ST[S_QUIET, :] = 0


@njit(cache=True)
def host_return(st: tuple[Any, ...], t: int, released_by: int) -> None:
    """RunState.host_return: the call of op host_i returns at t."""
    OP, C, S, G = st[0], st[2], st[4], st[15]
    i = S[HOST_I]
    st[16][i] = t
    if released_by >= 0 and released_by != i:
        edge(G, S, released_by, i, DEP_HOST)
    i += 1
    S[HOST_I] = i
    if i < C[N_OPS]:
        S[HOST_T] = t + OP[i, COST]
        if S[HOST_T] >= INF:
            S[BAIL] = 1
    else:
        S[HOST_T] = INF


@njit(cache=True)
def check_host(st: tuple[Any, ...], t: int) -> None:
    """RunState.check_host: return from the blocking call once what it waits for is done."""
    OP, C, S, HWAIT, G = st[0], st[2], st[4], st[13], st[15]
    OI = st[20]
    last = -1
    for k in range(S[HW_N]):
        x = HWAIT[k]
        if OP[x, DONE] < 0:
            add_waiter(OP, G, S, x, HOST)
            return
        if last < 0 or OP[x, DONE] > OP[last, DONE]:  # max(): the first of the latest
            last = x
    S[HOST_WAITING] = 0
    i = S[HOST_I]
    lag = C[SYNC0 + OI[i, HOSTC]] + OP[i, STAGE]  # (+ a pageable D2H's last copy-out)
    if lag:
        u = OP[last, DONE] + lag
        host_return(st, u if u > t else t, last)
    else:
        host_return(st, t, last)


@njit(cache=True)
def host_step(st: tuple[Any, ...], t: int) -> None:
    """RunState.host_step: the call of op host_i takes effect at t."""
    OP, C, S, ST, BAR, HWAIT = st[0], st[2], st[4], st[5], st[12], st[13]
    OI = st[20]
    i = S[HOST_I]
    h = OI[i, HOSTC]
    if h == ENQ:
        enqueue(st, i, t)
        st[16][i] = t
        i += 1
        S[HOST_I] = i
        if i < C[N_OPS]:
            S[HOST_T] = t + OP[i, COST]
            if S[HOST_T] >= INF:
                S[BAIL] = 1
        else:
            S[HOST_T] = INF
        return
    n_wait = 0
    busy = 0
    if OI[i, RUN] >= 0:
        if h == ENQ_BARRIER:
            set_barrier(st)
        enqueue(st, i, t)
        if h == ENQ_WAIT:
            HWAIT[0] = i
            n_wait = 1
        elif h == ENQ_STAGE:
            busy = OP[i, STAGE]
            OP[i, READY] += OP[i, STAGE_OFF]  # the DMA waits for the first chunk (prepare)
        elif h == ENQ_BARRIER:
            BAR[0] = i
            S[BAR_N] = 1
            S[BARRIER_ID] += 1
            ST[S_QUIET, :] = 0
    elif h == WAIT_STREAM:
        s = OI[i, STREAM]
        if s >= 0 and ST[S_TAIL, s] >= 0:
            HWAIT[0] = ST[S_TAIL, s]
            n_wait = 1
    elif h == WAIT_EVENT:
        r = OI[i, RECORD]
        if r >= 0:
            HWAIT[0] = r
            n_wait = 1
    elif h == WAIT_ALL:
        for b in range(C[N_STREAMS]):
            x = ST[S_TAIL, b]
            if x >= 0:
                HWAIT[n_wait] = x
                n_wait += 1
    elif h == BUSY:
        busy = OP[i, SOLO]
    elif h == BARRIER:
        set_barrier(st)
    if n_wait:
        S[HW_N] = n_wait
        S[HOST_WAITING] = 1
        S[HOST_T] = INF
        check_host(st, t)
    else:
        if t + busy >= INF:
            S[BAIL] = 1
        host_return(st, t + busy, -1)
