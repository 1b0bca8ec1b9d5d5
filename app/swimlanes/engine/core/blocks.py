"""The compiled block scheduler: engine/blocks.py over struct-of-arrays tables, with the same
integer and float operations in the same order (the batches' rounding carry, Python's
round-half-even, which numba's round() on a float also does).

Its kernels ("SmWork") live in the per-op fields W_* of ``op_times``/``op_codes``/``op_floats``
(an op reaches the SMs once), ``pending_kernels`` holds its pending kernels in (priority, seq)
order (see layout).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swimlanes.engine.core.buffers import next_seq, push, record_occupancy
from swimlanes.engine.core.layout import (
    BAIL,
    BATCH_DONE,
    EV_BATCH,
    FLOAT_LIMIT,
    FREE,
    KERNEL_DONE,
    KTAIL,
    MAX_RES_K,
    OCC,
    OCC_N,
    PEND_N,
    RES_KERNELS,
    RUN,
    RUN_KERNEL,
    SLOTS,
    SLOTS_PER_SM,
    SM_COUNT,
    SMS_IDLE,
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
    if d >= FLOAT_LIMIT:
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
