"""The compiled copy engines and block scheduler: engine/copies.py and engine/blocks.py over
struct-of-arrays tables, with the same integer and float operations in the same order (the
fluid copy model's float64 remaining work, the batches' rounding carry, Python's
round-half-even, which numba's round() on a float also does).

Tables (see layout): ``copy_engines``/``copy_engine_floats`` per copy engine,
``pool_times``/``pool_ops`` the ready pools' (ready time, op), the block scheduler's kernels
("SmWork") in the per-op fields W_* of ``op_times``/``op_codes``/``op_floats`` (an op reaches the
SMs once), ``pending_kernels`` its pending kernels in (priority, seq) order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swimlanes.engine.core.buffers import next_seq, push, record_occupancy
from swimlanes.engine.core.layout import (
    BAIL,
    BATCH_DONE,
    COPIES,
    COPY_KEY,
    D2H,
    DIRTY,
    E_CONTENDED,
    E_DIR,
    E_FACTOR,
    E_FREE_AT,
    E_LAST_COPY_KEY,
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
    op_codes: np.ndarray,
    config: np.ndarray,
    scalars: np.ndarray,
    pool_times: np.ndarray,
    pool_ops: np.ndarray,
    i: int,
    t: int,
) -> None:
    """A copy left its queue at t: into its direction's ready pool."""
    pool = config[POOL_OF_H2D + (0 if op_codes[i, KIND] == config[H2D_KIND] else 1)]
    k = scalars[POOL_N + pool]
    pool_times[pool, k] = t
    pool_ops[pool, k] = i
    scalars[POOL_N + pool] = k + 1
    scalars[DIRTY] |= COPIES


@njit(cache=True)
def choose_copy(
    op_codes: np.ndarray,
    config: np.ndarray,
    scalars: np.ndarray,
    pool_times: np.ndarray,
    pool_ops: np.ndarray,
    pool: int,
    last_copy_key: int,
) -> int:
    """copies.choose_copy: the ready copy an idle engine takes, preferring ``last_copy_key``
    (the copy key of the engine's last copy; sort keys are unique by op, so the pool's order
    does not matter)."""
    sticky, oldest = config[STICKY], config[OLDEST_FIRST]
    best = -1
    b0 = b1 = b2 = 0
    for pos in range(scalars[POOL_N + pool]):
        op = pool_ops[pool, pos]
        same = 0 if not sticky or op_codes[op, COPY_KEY] == last_copy_key else 1
        k1 = pool_times[pool, pos] if oldest else -pool_times[pool, pos]
        if best < 0 or same < b0 or (same == b0 and (k1 < b1 or (k1 == b1 and op < b2))):
            best, b0, b1, b2 = pos, same, k1, op
    return best


@njit(cache=True)
def copies_dispatch(
    op_times: np.ndarray,
    op_codes: np.ndarray,
    config: np.ndarray,
    config_floats: np.ndarray,
    scalars: np.ndarray,
    copy_engines: np.ndarray,
    copy_engine_floats: np.ndarray,
    pool_times: np.ndarray,
    pool_ops: np.ndarray,
    buffers: list[np.ndarray],
    start: np.ndarray,
    t: int,
) -> None:
    """CopyEngines.dispatch: give every idle engine its next copy."""
    changed = False
    for e in range(config[N_ENG]):
        pool = copy_engines[E_POOL, e]
        count = scalars[POOL_N + pool]
        if copy_engines[E_OP, e] >= 0 or count == 0:
            continue
        if copy_engines[E_FREE_AT, e] > t:  # resting: come back when that is over
            if copy_engines[E_WAKE_AT, e] != copy_engines[E_FREE_AT, e]:
                copy_engines[E_WAKE_AT, e] = copy_engines[E_FREE_AT, e]
                push(buffers, scalars, copy_engines[E_FREE_AT, e], EV_COPY, e, -1)
            continue
        pos = (
            0
            if count == 1
            else choose_copy(
                op_codes,
                config,
                scalars,
                pool_times,
                pool_ops,
                pool,
                copy_engines[E_LAST_COPY_KEY, e],
            )
        )
        op = pool_ops[pool, pos]
        pool_times[pool, pos] = pool_times[pool, count - 1]
        pool_ops[pool, pos] = pool_ops[pool, count - 1]
        scalars[POOL_N + pool] = count - 1
        direction = H2D if op_codes[op, KIND] == config[H2D_KIND] else D2H
        work = op_times[op, SOLO]
        copy_engines[E_OP, e] = op
        copy_engines[E_LAST_COPY_KEY, e] = op_codes[op, COPY_KEY]
        copy_engines[E_SINCE, e] = t
        copy_engine_floats[E_REMAINING, e] = float(work)
        copy_engines[E_CONTENDED, e] = 0
        copy_engines[E_DIR, e] = direction
        scalars[RUNNING + direction] += 1
        start[op] = t
        if config[FLUID] and (scalars[RUNNING + direction] > 1 or scalars[RUNNING + 1 - direction]):
            if config[PAIRED]:
                start_against(
                    config, config_floats, scalars, copy_engines, copy_engine_floats, buffers, e, t
                )
                continue
            copy_engine_floats[E_FACTOR, e] = 0.0  # makes reschedule give it an end event
            changed = True
        else:  # alone on the link: full speed
            copy_engine_floats[E_FACTOR, e] = 1.0
            copy_engines[E_VERSION, e] += 1
            push(buffers, scalars, t + work, EV_COPY, e, copy_engines[E_VERSION, e])
    if changed:
        reschedule(config, config_floats, scalars, copy_engines, copy_engine_floats, buffers, t)


@njit(cache=True)
def copies_finish(
    config: np.ndarray,
    config_floats: np.ndarray,
    scalars: np.ndarray,
    copy_engines: np.ndarray,
    copy_engine_floats: np.ndarray,
    buffers: list[np.ndarray],
    e: int,
    t: int,
) -> int:
    """CopyEngines.finish: engine e's copy ended at t; returns the op."""
    op = copy_engines[E_OP, e]
    copy_engines[E_OP, e] = -1
    direction = copy_engines[E_DIR, e]
    copy_engines[E_FREE_AT, e] = t + config[REST0 + direction * 2 + copy_engines[E_CONTENDED, e]]
    scalars[RUNNING + direction] -= 1
    if config[FLUID] and (scalars[RUNNING] or scalars[RUNNING + 1]):
        if config[PAIRED]:
            end_against(
                scalars, copy_engines, copy_engine_floats, buffers, copy_engines[E_PARTNER, e], t
            )
        else:
            reschedule(config, config_floats, scalars, copy_engines, copy_engine_floats, buffers, t)
    return op


@njit(cache=True)
def _end_time(scalars: np.ndarray, t: int, remaining: float, factor: float) -> int:
    """t + max(0, round(remaining * factor)), or out of range."""
    x = remaining * factor
    if x >= _FLOAT_LIMIT:
        scalars[BAIL] = 1
        return t
    left = round(x)
    return t + left if left > 0 else t


@njit(cache=True)
def start_against(
    config: np.ndarray,
    config_floats: np.ndarray,
    scalars: np.ndarray,
    copy_engines: np.ndarray,
    copy_engine_floats: np.ndarray,
    buffers: list[np.ndarray],
    e: int,
    t: int,
) -> None:
    """CopyEngines._start_against (one engine per direction)."""
    o = copy_engines[E_PARTNER, e]
    direction = copy_engines[E_DIR, e]
    factor = config_floats[SLOWED0 + direction]
    copy_engines[E_CONTENDED, e] = 1
    copy_engine_floats[E_REMAINING, e] += config_floats[FIXED_SLOWED0 + direction]
    copy_engine_floats[E_FACTOR, e] = factor
    copy_engines[E_VERSION, e] += 1
    e_end = _end_time(scalars, t, copy_engine_floats[E_REMAINING, e], factor)
    o_factor = config_floats[SLOWED0 + 1 - direction]
    extra = 0.0
    if not copy_engines[E_CONTENDED, o]:
        copy_engines[E_CONTENDED, o] = 1
        extra = config_floats[FIXED_SLOWED0 + 1 - direction]
    old = copy_engine_floats[E_FACTOR, o]
    if o_factor == old and not extra:
        push(buffers, scalars, e_end, EV_COPY, e, copy_engines[E_VERSION, e])
        return
    if old:
        copy_engine_floats[E_REMAINING, o] -= (t - copy_engines[E_SINCE, o]) / old
    copy_engine_floats[E_REMAINING, o] += extra
    copy_engines[E_SINCE, o] = t
    copy_engine_floats[E_FACTOR, o] = o_factor
    copy_engines[E_VERSION, o] += 1
    o_end = _end_time(scalars, t, copy_engine_floats[E_REMAINING, o], o_factor)
    if o < e:  # end events in engine order, as reschedule pushes them
        push(buffers, scalars, o_end, EV_COPY, o, copy_engines[E_VERSION, o])
        push(buffers, scalars, e_end, EV_COPY, e, copy_engines[E_VERSION, e])
    else:
        push(buffers, scalars, e_end, EV_COPY, e, copy_engines[E_VERSION, e])
        push(buffers, scalars, o_end, EV_COPY, o, copy_engines[E_VERSION, o])


@njit(cache=True)
def end_against(
    scalars: np.ndarray,
    copy_engines: np.ndarray,
    copy_engine_floats: np.ndarray,
    buffers: list[np.ndarray],
    o: int,
    t: int,
) -> None:
    """CopyEngines._end_against: the copy against o's ended; o runs alone now."""
    old = copy_engine_floats[E_FACTOR, o]
    if old == 1.0:
        return
    if old:
        copy_engine_floats[E_REMAINING, o] -= (t - copy_engines[E_SINCE, o]) / old
    copy_engines[E_SINCE, o] = t
    copy_engine_floats[E_FACTOR, o] = 1.0
    copy_engines[E_VERSION, o] += 1
    push(
        buffers,
        scalars,
        _end_time(scalars, t, copy_engine_floats[E_REMAINING, o], 1.0),
        EV_COPY,
        o,
        copy_engines[E_VERSION, o],
    )


@njit(cache=True)
def reschedule(
    config: np.ndarray,
    config_floats: np.ndarray,
    scalars: np.ndarray,
    copy_engines: np.ndarray,
    copy_engine_floats: np.ndarray,
    buffers: list[np.ndarray],
    t: int,
) -> None:
    """CopyEngines._reschedule: every running copy's speed after the set changed."""
    both_ways = not config[SHARED]
    for e in range(config[N_ENG]):
        if copy_engines[E_OP, e] < 0:
            continue
        direction = copy_engines[E_DIR, e]
        factor = float(scalars[RUNNING + direction])
        extra = 0.0
        if both_ways and scalars[RUNNING + 1 - direction]:
            factor *= config_floats[SLOWED0 + direction]
            if not copy_engines[E_CONTENDED, e]:
                copy_engines[E_CONTENDED, e] = 1
                extra = config_floats[FIXED0 + direction] / factor
        old = copy_engine_floats[E_FACTOR, e]
        if factor == old and not extra:
            continue  # its pending end event stays valid
        if old:
            copy_engine_floats[E_REMAINING, e] -= (t - copy_engines[E_SINCE, e]) / old
        copy_engine_floats[E_REMAINING, e] += extra
        copy_engines[E_SINCE, e] = t
        copy_engine_floats[E_FACTOR, e] = factor
        copy_engines[E_VERSION, e] += 1
        push(
            buffers,
            scalars,
            _end_time(scalars, t, copy_engine_floats[E_REMAINING, e], factor),
            EV_COPY,
            e,
            copy_engines[E_VERSION, e],
        )


# -- block scheduler (blocks.BlockScheduler) ------------------------------------------------------
@njit(cache=True)
def new_work(
    op_times: np.ndarray,
    op_codes: np.ndarray,
    op_floats: np.ndarray,
    scalars: np.ndarray,
    op: int,
    prio: int,
) -> None:
    """SmWork(op, prio, next_seq(), ...) in op's W_* rows (its shape, blocks to go, slots
    per block, resident limit and ns per block, is there already)."""
    op_codes[op, W_PRIO] = prio
    op_times[op, W_SEQ] = next_seq(scalars)
    op_times[op, W_RES] = 0
    op_codes[op, W_STARTED] = 0
    op_floats[op, W_CARRY] = 0.0


@njit(cache=True)
def blocks_add(
    op_times: np.ndarray,
    op_codes: np.ndarray,
    scalars: np.ndarray,
    pending_kernels: np.ndarray,
    w: int,
) -> None:
    """BlockScheduler.add: keep pending_kernels in (priority, seq) order (most work arrives
    last)."""
    n = scalars[PEND_N]
    p, sq = op_codes[w, W_PRIO], op_times[w, W_SEQ]
    k = n
    while k > 0:
        last = pending_kernels[k - 1]
        lp = op_codes[last, W_PRIO]
        if p < lp or (p == lp and sq < op_times[last, W_SEQ]):
            pending_kernels[k] = last
            k -= 1
        else:
            break
    pending_kernels[k] = w
    scalars[PEND_N] = n + 1


@njit(cache=True)
def _round_batch(op_floats: np.ndarray, scalars: np.ndarray, w: int) -> int:
    """The next batch's duration, carrying the rounding from batch to batch."""
    d = op_floats[w, W_BLOCK_NS] + op_floats[w, W_CARRY]
    if d >= _FLOAT_LIMIT:
        scalars[BAIL] = 1
        return 1
    di = round(d)
    if di < 1:
        di = 1
    op_floats[w, W_CARRY] = d - di
    return di


@njit(cache=True)
def blocks_dispatch(
    op_times: np.ndarray,
    op_codes: np.ndarray,
    op_floats: np.ndarray,
    config: np.ndarray,
    scalars: np.ndarray,
    pending_kernels: np.ndarray,
    buffers: list[np.ndarray],
    start: np.ndarray,
    t: int,
) -> None:
    """BlockScheduler.dispatch: start batches for every pending kernel that fits, best
    priority first; record the occupancy."""
    n = scalars[PEND_N]
    occ = buffers[OCC]
    last_sms = occ[2 * scalars[OCC_N] - 1]
    if n == 0:  # the SMs are idle
        if last_sms:
            record_occupancy(buffers, scalars, t, 0)
        return
    if n == 1 and scalars[FREE] == config[SLOTS]:
        start_alone(
            op_times,
            op_codes,
            op_floats,
            config,
            scalars,
            buffers,
            start,
            pending_kernels[0],
            t,
            last_sms,
        )
        return
    sm_count, free, busy = config[SM_COUNT], scalars[FREE], 0
    for k in range(n):
        w = pending_kernels[k]
        remaining, cost, resident = op_times[w, W_REM], op_codes[w, W_COST], op_times[w, W_RES]
        if remaining and free >= cost:
            if not op_codes[w, W_STARTED] and scalars[RES_KERNELS] >= config[MAX_RES_K]:
                continue
            fit = free // cost
            if remaining < fit:
                fit = remaining
            if op_times[w, W_MAXRES] - resident < fit:
                fit = op_times[w, W_MAXRES] - resident
            if fit > 0:
                if not op_codes[w, W_STARTED]:
                    op_codes[w, W_STARTED] = 1
                    scalars[RES_KERNELS] += 1
                    start[w] = t
                free -= fit * cost
                resident += fit
                op_times[w, W_RES] = resident
                op_times[w, W_REM] = remaining - fit
                di = _round_batch(op_floats, scalars, w)
                if remaining - fit == 0:
                    di += config[KTAIL] if op_codes[w, RUN] == RUN_KERNEL else 0  # SM copies: none
                push(buffers, scalars, t + di, EV_BATCH, w, fit)
        busy += resident if resident < sm_count else sm_count
    scalars[FREE] = free
    by_slots = -(-(config[SLOTS] - free) // config[SLOTS_PER_SM])
    sms = busy if busy > by_slots else by_slots
    if sms > sm_count:
        sms = sm_count
    if sms != last_sms:
        record_occupancy(buffers, scalars, t, sms)


@njit(cache=True)
def start_alone(
    op_times: np.ndarray,
    op_codes: np.ndarray,
    op_floats: np.ndarray,
    config: np.ndarray,
    scalars: np.ndarray,
    buffers: list[np.ndarray],
    start: np.ndarray,
    w: int,
    t: int,
    last_sms: int,
) -> None:
    """BlockScheduler._start_alone (with _batch_alone): w alone on idle SMs."""
    remaining, cost = op_times[w, W_REM], op_codes[w, W_COST]
    fit = min(config[SLOTS] // cost, remaining, op_times[w, W_MAXRES])
    di = _round_batch(op_floats, scalars, w)
    if remaining == fit:
        di += config[KTAIL] if op_codes[w, RUN] == RUN_KERNEL else 0  # SM copies: none
    by_slots = -(-(fit * cost) // config[SLOTS_PER_SM])
    sms = min(max(min(fit, config[SM_COUNT]), by_slots), config[SM_COUNT])
    if not op_codes[w, W_STARTED]:
        op_codes[w, W_STARTED] = 1
        scalars[RES_KERNELS] += 1
        start[w] = t
    scalars[FREE] -= fit * cost
    op_times[w, W_RES] = fit
    op_times[w, W_REM] = remaining - fit
    push(buffers, scalars, t + di, EV_BATCH, w, fit)
    if sms != last_sms:
        record_occupancy(buffers, scalars, t, sms)


@njit(cache=True)
def batch_end(
    op_times: np.ndarray,
    op_codes: np.ndarray,
    scalars: np.ndarray,
    pending_kernels: np.ndarray,
    buffers: list[np.ndarray],
    w: int,
    fit: int,
    t: int,
) -> int:
    """BlockScheduler.batch_end: BATCH_DONE, KERNEL_DONE or SMS_IDLE."""
    scalars[FREE] += fit * op_codes[w, W_COST]
    op_times[w, W_RES] -= fit
    if op_times[w, W_REM] or op_times[w, W_RES]:
        return BATCH_DONE
    n = scalars[PEND_N]
    k = 0
    while pending_kernels[k] != w:
        k += 1
    pending_kernels[k : n - 1] = pending_kernels[k + 1 : n]
    scalars[PEND_N] = n - 1
    scalars[RES_KERNELS] -= 1
    if n - 1:
        return KERNEL_DONE
    if buffers[OCC][2 * scalars[OCC_N] - 1]:
        record_occupancy(buffers, scalars, t, 0)
    return SMS_IDLE
