"""The compiled copy engines: engine/copies.py over struct-of-arrays tables, with the same
integer and float operations in the same order (the fluid copy model's float64 remaining work,
Python's round-half-even, which numba's round() on a float also does).

Tables (see layout): ``copy_engines``/``copy_engine_floats`` per copy engine,
``pool_times``/``pool_ops`` the ready pools' (ready time, op).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swimlanes.engine.core.buffers import push
from swimlanes.engine.core.layout import (
    BAIL,
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
    EV_COPY,
    FIXED0,
    FIXED_SLOWED0,
    FLOAT_LIMIT,
    FLUID,
    H2D,
    H2D_KIND,
    KIND,
    N_ENG,
    OLDEST_FIRST,
    PAIRED,
    POOL_N,
    POOL_OF_H2D,
    REST0,
    RUNNING,
    SHARED,
    SLOWED0,
    SOLO,
    STICKY,
)


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
    if x >= FLOAT_LIMIT:
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
