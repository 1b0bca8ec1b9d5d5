"""The compiled copy engines and block scheduler: engine/copies.py and engine/blocks.py over
struct-of-arrays tables, with the same integer and float operations in the same order (the
fluid copy model's float64 remaining work, the batches' rounding carry, Python's
round-half-even, which numba's round() on a float also does).

Tables (see layout): ``E``/``EF`` per copy engine, ``PT``/``PO`` the ready pools' (ready time,
op), the block scheduler's kernels ("SmWork") in the per-op rows W_* of ``OP``/``F`` (an op
reaches the SMs once), ``PEND`` its pending kernels in (priority, seq) order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swimlanes.engine.core.buffers import next_seq, push, record_occupancy
from swimlanes.engine.core.layout import (
    BAIL,
    BATCH_DONE,
    COPIES,
    D2H,
    DIRTY,
    E_CONTENDED,
    E_DIR,
    E_FACTOR,
    E_FREE_AT,
    E_LAST_STREAM,
    E_OP,
    E_PARTNER,
    E_POOL,
    E_REMAINING,
    E_SINCE,
    E_VERSION,
    E_WAKE_AT,
    EV_BATCH,
    EV_COPY,
    FIXED0,
    FIXED_SLOWED0,
    FLUID,
    FREE,
    H2D,
    H2D_KIND,
    INF,
    KERNEL_DONE,
    KIND,
    KTAIL,
    MAX_RES_K,
    N_ENG,
    OCC,
    OCC_N,
    OLDEST_FIRST,
    PAIRED,
    PEND_N,
    POOL_N,
    POOL_OF_H2D,
    RES_KERNELS,
    REST0,
    RUN,
    RUN_KERNEL,
    RUNNING,
    SHARED,
    SLOTS,
    SLOTS_PER_SM,
    SLOWED0,
    SM_COUNT,
    SMS_IDLE,
    SOLO,
    STICKY,
    STREAM,
    W_BLOCK_NS,
    W_CARRY,
    W_COST,
    W_MAXRES,
    W_PRIO,
    W_REM,
    W_RES,
    W_SEQ,
    W_STARTED,
)

_FLOAT_LIMIT = float(INF)  # a float time at or past this is out of range (see push)


# -- copy engines (copies.CopyEngines) ------------------------------------------------------------
@njit(cache=True)
def to_copy_engine(
    OI: np.ndarray, C: np.ndarray, S: np.ndarray, PT: np.ndarray, PO: np.ndarray, i: int, t: int
) -> None:
    """A copy left its queue at t: into its direction's ready pool."""
    pool = C[POOL_OF_H2D + (0 if OI[i, KIND] == C[H2D_KIND] else 1)]
    k = S[POOL_N + pool]
    PT[pool, k] = t
    PO[pool, k] = i
    S[POOL_N + pool] = k + 1
    S[DIRTY] |= COPIES


@njit(cache=True)
def choose_copy(
    OI: np.ndarray,
    C: np.ndarray,
    S: np.ndarray,
    PT: np.ndarray,
    PO: np.ndarray,
    pool: np.ndarray,
    last_stream: int,
) -> int:
    """copies.choose_copy: the ready copy an idle engine takes (keys are unique by op, so
    the pool's order does not matter)."""
    sticky, oldest = C[STICKY], C[OLDEST_FIRST]
    best = -1
    b0 = b1 = b2 = 0
    for pos in range(S[POOL_N + pool]):
        op = PO[pool, pos]
        same = 0 if not sticky or OI[op, STREAM] == last_stream else 1
        k1 = PT[pool, pos] if oldest else -PT[pool, pos]
        if best < 0 or same < b0 or (same == b0 and (k1 < b1 or (k1 == b1 and op < b2))):
            best, b0, b1, b2 = pos, same, k1, op
    return best


@njit(cache=True)
def copies_dispatch(
    OP: np.ndarray,
    OI: np.ndarray,
    C: np.ndarray,
    CF: np.ndarray,
    S: np.ndarray,
    E: np.ndarray,
    EF: np.ndarray,
    PT: np.ndarray,
    PO: np.ndarray,
    G: list[np.ndarray],
    start: np.ndarray,
    t: int,
) -> None:
    """CopyEngines.dispatch: give every idle engine its next copy."""
    changed = False
    for e in range(C[N_ENG]):
        pool = E[E_POOL, e]
        count = S[POOL_N + pool]
        if E[E_OP, e] >= 0 or count == 0:
            continue
        if E[E_FREE_AT, e] > t:  # resting: come back when that is over
            if E[E_WAKE_AT, e] != E[E_FREE_AT, e]:
                E[E_WAKE_AT, e] = E[E_FREE_AT, e]
                push(G, S, E[E_FREE_AT, e], EV_COPY, e, -1)
            continue
        pos = 0 if count == 1 else choose_copy(OI, C, S, PT, PO, pool, E[E_LAST_STREAM, e])
        op = PO[pool, pos]
        PT[pool, pos] = PT[pool, count - 1]
        PO[pool, pos] = PO[pool, count - 1]
        S[POOL_N + pool] = count - 1
        direction = H2D if OI[op, KIND] == C[H2D_KIND] else D2H
        work = OP[op, SOLO]
        E[E_OP, e] = op
        E[E_LAST_STREAM, e] = OI[op, STREAM]
        E[E_SINCE, e] = t
        EF[E_REMAINING, e] = float(work)
        E[E_CONTENDED, e] = 0
        E[E_DIR, e] = direction
        S[RUNNING + direction] += 1
        start[op] = t
        if C[FLUID] and (S[RUNNING + direction] > 1 or S[RUNNING + 1 - direction]):
            if C[PAIRED]:
                start_against(C, CF, S, E, EF, G, e, t)
                continue
            EF[E_FACTOR, e] = 0.0  # makes reschedule give it an end event
            changed = True
        else:  # alone on the link: full speed
            EF[E_FACTOR, e] = 1.0
            E[E_VERSION, e] += 1
            push(G, S, t + work, EV_COPY, e, E[E_VERSION, e])
    if changed:
        reschedule(C, CF, S, E, EF, G, t)


@njit(cache=True)
def copies_finish(
    C: np.ndarray,
    CF: np.ndarray,
    S: np.ndarray,
    E: np.ndarray,
    EF: np.ndarray,
    G: list[np.ndarray],
    e: int,
    t: int,
) -> int:
    """CopyEngines.finish: engine e's copy ended at t; returns the op."""
    op = E[E_OP, e]
    E[E_OP, e] = -1
    direction = E[E_DIR, e]
    E[E_FREE_AT, e] = t + C[REST0 + direction * 2 + E[E_CONTENDED, e]]
    S[RUNNING + direction] -= 1
    if C[FLUID] and (S[RUNNING] or S[RUNNING + 1]):
        if C[PAIRED]:
            end_against(S, E, EF, G, E[E_PARTNER, e], t)
        else:
            reschedule(C, CF, S, E, EF, G, t)
    return op


@njit(cache=True)
def _end_time(S: np.ndarray, t: int, remaining: float, factor: float) -> int:
    """t + max(0, round(remaining * factor)), or out of range."""
    x = remaining * factor
    if x >= _FLOAT_LIMIT:
        S[BAIL] = 1
        return t
    left = round(x)
    return t + left if left > 0 else t


@njit(cache=True)
def start_against(
    C: np.ndarray,
    CF: np.ndarray,
    S: np.ndarray,
    E: np.ndarray,
    EF: np.ndarray,
    G: list[np.ndarray],
    e: int,
    t: int,
) -> None:
    """CopyEngines._start_against (one engine per direction)."""
    o = E[E_PARTNER, e]
    direction = E[E_DIR, e]
    factor = CF[SLOWED0 + direction]
    E[E_CONTENDED, e] = 1
    EF[E_REMAINING, e] += CF[FIXED_SLOWED0 + direction]
    EF[E_FACTOR, e] = factor
    E[E_VERSION, e] += 1
    e_end = _end_time(S, t, EF[E_REMAINING, e], factor)
    o_factor = CF[SLOWED0 + 1 - direction]
    extra = 0.0
    if not E[E_CONTENDED, o]:
        E[E_CONTENDED, o] = 1
        extra = CF[FIXED_SLOWED0 + 1 - direction]
    old = EF[E_FACTOR, o]
    if o_factor == old and not extra:
        push(G, S, e_end, EV_COPY, e, E[E_VERSION, e])
        return
    if old:
        EF[E_REMAINING, o] -= (t - E[E_SINCE, o]) / old
    EF[E_REMAINING, o] += extra
    E[E_SINCE, o] = t
    EF[E_FACTOR, o] = o_factor
    E[E_VERSION, o] += 1
    o_end = _end_time(S, t, EF[E_REMAINING, o], o_factor)
    if o < e:  # end events in engine order, as reschedule pushes them
        push(G, S, o_end, EV_COPY, o, E[E_VERSION, o])
        push(G, S, e_end, EV_COPY, e, E[E_VERSION, e])
    else:
        push(G, S, e_end, EV_COPY, e, E[E_VERSION, e])
        push(G, S, o_end, EV_COPY, o, E[E_VERSION, o])


@njit(cache=True)
def end_against(
    S: np.ndarray, E: np.ndarray, EF: np.ndarray, G: list[np.ndarray], o: int, t: int
) -> None:
    """CopyEngines._end_against: the copy against o's ended; o runs alone now."""
    old = EF[E_FACTOR, o]
    if old == 1.0:
        return
    if old:
        EF[E_REMAINING, o] -= (t - E[E_SINCE, o]) / old
    E[E_SINCE, o] = t
    EF[E_FACTOR, o] = 1.0
    E[E_VERSION, o] += 1
    push(G, S, _end_time(S, t, EF[E_REMAINING, o], 1.0), EV_COPY, o, E[E_VERSION, o])


@njit(cache=True)
def reschedule(
    C: np.ndarray,
    CF: np.ndarray,
    S: np.ndarray,
    E: np.ndarray,
    EF: np.ndarray,
    G: list[np.ndarray],
    t: int,
) -> None:
    """CopyEngines._reschedule: every running copy's speed after the set changed."""
    both_ways = not C[SHARED]
    for e in range(C[N_ENG]):
        if E[E_OP, e] < 0:
            continue
        direction = E[E_DIR, e]
        factor = float(S[RUNNING + direction])
        extra = 0.0
        if both_ways and S[RUNNING + 1 - direction]:
            factor *= CF[SLOWED0 + direction]
            if not E[E_CONTENDED, e]:
                E[E_CONTENDED, e] = 1
                extra = CF[FIXED0 + direction] / factor
        old = EF[E_FACTOR, e]
        if factor == old and not extra:
            continue  # its pending end event stays valid
        if old:
            EF[E_REMAINING, e] -= (t - E[E_SINCE, e]) / old
        EF[E_REMAINING, e] += extra
        E[E_SINCE, e] = t
        EF[E_FACTOR, e] = factor
        E[E_VERSION, e] += 1
        push(G, S, _end_time(S, t, EF[E_REMAINING, e], factor), EV_COPY, e, E[E_VERSION, e])


# -- block scheduler (blocks.BlockScheduler) ------------------------------------------------------
@njit(cache=True)
def new_work(
    OP: np.ndarray, OI: np.ndarray, F: np.ndarray, S: np.ndarray, op: int, prio: int
) -> None:
    """SmWork(op, prio, next_seq(), ...) in op's W_* rows (its shape, blocks to go, slots
    per block, resident limit and ns per block, is there already)."""
    OI[op, W_PRIO] = prio
    OP[op, W_SEQ] = next_seq(S)
    OP[op, W_RES] = 0
    OI[op, W_STARTED] = 0
    F[op, W_CARRY] = 0.0


@njit(cache=True)
def blocks_add(OP: np.ndarray, OI: np.ndarray, S: np.ndarray, PEND: np.ndarray, w: int) -> None:
    """BlockScheduler.add: keep PEND in (priority, seq) order (most work arrives last)."""
    n = S[PEND_N]
    p, sq = OI[w, W_PRIO], OP[w, W_SEQ]
    k = n
    while k > 0:
        last = PEND[k - 1]
        lp = OI[last, W_PRIO]
        if p < lp or (p == lp and sq < OP[last, W_SEQ]):
            PEND[k] = last
            k -= 1
        else:
            break
    PEND[k] = w
    S[PEND_N] = n + 1


@njit(cache=True)
def _round_batch(F: np.ndarray, S: np.ndarray, w: int) -> int:
    """The next batch's duration, carrying the rounding from batch to batch."""
    d = F[w, W_BLOCK_NS] + F[w, W_CARRY]
    if d >= _FLOAT_LIMIT:
        S[BAIL] = 1
        return 1
    di = round(d)
    if di < 1:
        di = 1
    F[w, W_CARRY] = d - di
    return di


@njit(cache=True)
def blocks_dispatch(
    OP: np.ndarray,
    OI: np.ndarray,
    F: np.ndarray,
    C: np.ndarray,
    S: np.ndarray,
    PEND: np.ndarray,
    G: list[np.ndarray],
    start: np.ndarray,
    t: int,
) -> None:
    """BlockScheduler.dispatch: start batches for every pending kernel that fits, best
    priority first; record the occupancy."""
    n = S[PEND_N]
    occ = G[OCC]
    last_sms = occ[2 * S[OCC_N] - 1]
    if n == 0:  # the SMs are idle
        if last_sms:
            record_occupancy(G, S, t, 0)
        return
    if n == 1 and S[FREE] == C[SLOTS]:
        start_alone(OP, OI, F, C, S, G, start, PEND[0], t, last_sms)
        return
    sm_count, free, busy = C[SM_COUNT], S[FREE], 0
    for k in range(n):
        w = PEND[k]
        remaining, cost, resident = OP[w, W_REM], OI[w, W_COST], OP[w, W_RES]
        if remaining and free >= cost:
            if not OI[w, W_STARTED] and S[RES_KERNELS] >= C[MAX_RES_K]:
                continue
            fit = free // cost
            if remaining < fit:
                fit = remaining
            if OP[w, W_MAXRES] - resident < fit:
                fit = OP[w, W_MAXRES] - resident
            if fit > 0:
                if not OI[w, W_STARTED]:
                    OI[w, W_STARTED] = 1
                    S[RES_KERNELS] += 1
                    start[w] = t
                free -= fit * cost
                resident += fit
                OP[w, W_RES] = resident
                OP[w, W_REM] = remaining - fit
                di = _round_batch(F, S, w)
                if remaining - fit == 0:
                    di += C[KTAIL] if OI[w, RUN] == RUN_KERNEL else 0  # SM copies: none
                push(G, S, t + di, EV_BATCH, w, fit)
        busy += resident if resident < sm_count else sm_count
    S[FREE] = free
    by_slots = -(-(C[SLOTS] - free) // C[SLOTS_PER_SM])
    sms = busy if busy > by_slots else by_slots
    if sms > sm_count:
        sms = sm_count
    if sms != last_sms:
        record_occupancy(G, S, t, sms)


@njit(cache=True)
def start_alone(
    OP: np.ndarray,
    OI: np.ndarray,
    F: np.ndarray,
    C: np.ndarray,
    S: np.ndarray,
    G: list[np.ndarray],
    start: np.ndarray,
    w: int,
    t: int,
    last_sms: int,
) -> None:
    """BlockScheduler._start_alone (with _batch_alone): w alone on idle SMs."""
    remaining, cost = OP[w, W_REM], OI[w, W_COST]
    fit = min(C[SLOTS] // cost, remaining, OP[w, W_MAXRES])
    di = _round_batch(F, S, w)
    if remaining == fit:
        di += C[KTAIL] if OI[w, RUN] == RUN_KERNEL else 0  # SM copies: none
    by_slots = -(-(fit * cost) // C[SLOTS_PER_SM])
    sms = min(max(min(fit, C[SM_COUNT]), by_slots), C[SM_COUNT])
    if not OI[w, W_STARTED]:
        OI[w, W_STARTED] = 1
        S[RES_KERNELS] += 1
        start[w] = t
    S[FREE] -= fit * cost
    OP[w, W_RES] = fit
    OP[w, W_REM] = remaining - fit
    push(G, S, t + di, EV_BATCH, w, fit)
    if sms != last_sms:
        record_occupancy(G, S, t, sms)


@njit(cache=True)
def batch_end(
    OP: np.ndarray,
    OI: np.ndarray,
    S: np.ndarray,
    PEND: np.ndarray,
    G: list[np.ndarray],
    w: int,
    fit: int,
    t: int,
) -> int:
    """BlockScheduler.batch_end: BATCH_DONE, KERNEL_DONE or SMS_IDLE."""
    S[FREE] += fit * OI[w, W_COST]
    OP[w, W_RES] -= fit
    if OP[w, W_REM] or OP[w, W_RES]:
        return BATCH_DONE
    n = S[PEND_N]
    k = 0
    while PEND[k] != w:
        k += 1
    PEND[k : n - 1] = PEND[k + 1 : n]
    S[PEND_N] = n - 1
    S[RES_KERNELS] -= 1
    if n - 1:
        return KERNEL_DONE
    if G[OCC][2 * S[OCC_N] - 1]:
        record_occupancy(G, S, t, 0)
    return SMS_IDLE
