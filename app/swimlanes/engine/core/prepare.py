"""The compiled core's tables, filled from a freshly built simulator run (engine.state's
RunState set-up: stream chains, event tables, latency tables, copy engines and block
scheduler as they are before the first event), and the results written back into it.

Plain Python and numpy: nothing here is compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, cast

import numpy as np

from swimlanes.engine.core import layout
from swimlanes.engine.plan import (
    ENQ_STAGE,
    ENQ_WAIT,
    RUN_KERNEL,
    WAIT_ALL,
    WAIT_EVENT,
    WAIT_STREAM,
    K,
)

if TYPE_CHECKING:
    from swimlanes.engine.state import RunState

_ORDERS = {"measured": (1, 0), "stream_fifo": (1, 1), "fifo": (0, 1)}  # (sticky, oldest first)
_WAITING = (ENQ_WAIT, WAIT_STREAM, WAIT_EVENT, WAIT_ALL)


@dataclass
class State:
    """The arrays of one compiled run, in run_chunk's argument order (see layout)."""

    # op_times, op_codes, op_floats, config, config_floats, scalars, streams, queues,
    # copy_engines, copy_engine_floats, pool_times, pool_ops, pending_kernels, barrier_ops,
    # host_wait, groups
    tables: list[np.ndarray]
    buffers: list[np.ndarray]  # heap, waiter nodes, dependency pool, edges, occupancy, todo
    outputs: list[np.ndarray]  # issue_end, start, end, engine (the run's own columns)

    @property
    def scalars(self) -> np.ndarray:
        return self.tables[5]  # (the sixth of the order above)


class OutOfReach(Exception):
    """The run has inputs the compiled core does not take (past INPUT_LIMIT): Python runs it."""


def _column(values: list, n: int) -> np.ndarray:
    """A plan list as int64 (OverflowError for values past int64: the Python loop runs it)."""
    return np.fromiter(values, dtype=np.int64, count=n)


def _picked(run: RunState, name: str, rows: np.ndarray) -> list:
    """Items ``rows`` of the plan's column ``name`` (a list of any values), its list left
    unbuilt where the planner's per-shape values give them."""
    plan = run.plan
    source = plan.source(name)
    if source is not None and source[0] is not None and plan.shape_of_op is not None:
        return list(map(source[0].__getitem__, plan.shape_of_op[rows].tolist()))
    return list(map(getattr(plan, name).__getitem__, rows.tolist()))


def _op_tables(run: RunState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The per-op tables op_times (int64), op_codes (int32) and op_floats (float64), one row
    per op plus the row past the program (host code END, cost INF)."""
    plan, n = run.plan, run.n
    arrays = plan.arrays
    op_times = np.empty((n + 1, layout.N_OP_TIME_FIELDS), np.int64)
    op_codes = np.empty((n + 1, layout.N_OP_CODE_FIELDS), np.int32)
    op_floats = np.zeros((n + 1, layout.N_OP_FLOAT_FIELDS), np.float64)
    op_codes[n, :] = -1
    # kind, stream, run and queue: as RunState read them (the Timeline's arrays).
    for row, name in (
        (layout.KIND, "kind"),
        (layout.STREAM, "stream"),
        (layout.RUN, "run"),
        (layout.QUEUE, "queue"),
    ):
        op_codes[:n, row] = arrays[name]
    # Host codes, costs and device times: as the loop reads them (adjust_plan changes them).
    op_codes[:n, layout.HOSTC] = plan.column("host")
    op_codes[:n, layout.COPY_KEY] = plan.column("copy_key")
    op_times[:n, layout.COST] = plan.column("cost")
    op_times[n, layout.COST] = layout.INF
    op_times[:n, layout.SOLO] = plan.column("solo")
    op_times[n, layout.SOLO] = 0
    if (
        op_times[:n, layout.COST].max() >= layout.INPUT_LIMIT
        or op_times[:n, layout.SOLO].max() >= layout.INPUT_LIMIT
    ):
        raise OutOfReach
    for row in (layout.READY, layout.W_SEQ, layout.W_REM, layout.W_RES, layout.W_MAXRES):
        op_times[:, row] = 0
    for row in (layout.DONE, layout.DSTART, layout.WHEAD, layout.WTAIL):
        op_times[:, row] = -1
    op_codes[:n, layout.NEXTQ] = np.asarray(run.next_in_queue)
    op_codes[:n, layout.PREV] = run.prev_array
    op_codes[:n, layout.ORIGIN] = _column(run.origin, n) if run.origin else 0
    op_codes[:, layout.RECORD] = -1
    if run.record_of:
        count = len(run.record_of)
        waits = np.fromiter(run.record_of, np.int64, count)
        op_codes[waits, layout.RECORD] = np.fromiter(run.record_of.values(), np.int64, count)
    op_codes[:, layout.GROUP] = op_codes[:, layout.NEXTDEF] = -1
    for row in (layout.DLEN, layout.W_PRIO, layout.W_COST, layout.W_STARTED):
        op_codes[:, row] = 0
    _stage_rows(run, op_times, op_codes)
    _kernel_rows(run, op_times, op_codes, op_floats)
    return op_times, op_codes, op_floats


def _stage_rows(run: RunState, op_times: np.ndarray, op_codes: np.ndarray) -> None:
    """Staging and copy-out times where the host reads them (pageable copies' calls), and the
    DMA's head start of a chunked pageable H2D (Python ints: exact whatever the product)."""
    plan, n = run.plan, run.n
    op_times[:, layout.STAGE] = 0
    op_times[:, layout.STAGE_OFF] = 0
    if plan.source("stage") is None and not plan.stage:
        return
    host = op_codes[:n, layout.HOSTC]
    rows = np.flatnonzero(np.isin(host, (ENQ_STAGE, *_WAITING)))
    stage = [x or 0 for x in _picked(run, "stage", rows)]
    busy = _column(stage, len(rows))
    if len(rows) and busy.max() >= layout.INPUT_LIMIT:
        raise OutOfReach
    op_times[rows, layout.STAGE] = busy
    chunk, nbytes = run.h2d_chunk, plan.arrays["nbytes"]
    if not chunk:
        return
    for k in np.flatnonzero(host[rows] == ENQ_STAGE).tolist():
        i, staged = int(rows[k]), stage[k]
        size = int(nbytes[i])
        op_times[i, layout.STAGE_OFF] = staged if size <= chunk else staged * chunk // size


def _kernel_rows(
    run: RunState, op_times: np.ndarray, op_codes: np.ndarray, op_floats: np.ndarray
) -> None:
    """The kernels' shapes (blocks, slots per block, resident limit, ns per block) where the
    block scheduler keeps them (W_REM, W_COST, W_MAXRES, W_BLOCK_NS)."""
    rows = np.flatnonzero(op_codes[: run.n, layout.RUN] == RUN_KERNEL)
    if not len(rows):
        return
    # (Kernels' shapes are never None.)
    shapes = cast(list[tuple[int, int, int, float]], _picked(run, "kernel", rows))
    m = len(rows)
    op_times[rows, layout.W_REM] = np.fromiter(map(itemgetter(0), shapes), np.int64, m)
    op_codes[rows, layout.W_COST] = np.fromiter(map(itemgetter(1), shapes), np.int64, m)
    op_times[rows, layout.W_MAXRES] = np.fromiter(map(itemgetter(2), shapes), np.int64, m)
    op_floats[rows, layout.W_BLOCK_NS] = np.fromiter(map(itemgetter(3), shapes), np.float64, m)
    if op_floats[rows, layout.W_BLOCK_NS].max() >= layout.INPUT_LIMIT:
        raise OutOfReach


def _config(run: RunState) -> tuple[np.ndarray, np.ndarray]:
    """The run's constants: config (int64) and config_floats (float64)."""
    preset, copies, blocks = run.preset, run.copies, run.blocks
    config = np.zeros(layout.N_CONFIG, np.int64)
    config[layout.N_OPS], config[layout.COMPUTE] = run.n, run.compute_engine
    config[layout.SIGNAL] = bool(run.signal_delay)
    config[layout.TRACK] = bool(run.track_queue_delay)
    config[layout.LAT_ON], config[layout.KTAIL] = run.dep_latency is not None, run.kernel_tail
    config[layout.SM_COUNT], config[layout.SLOTS_PER_SM], config[layout.SLOTS] = (
        blocks.sm_count, blocks.slots_per_sm, blocks.slots
    )  # fmt: skip
    config[layout.MAX_RES_K] = blocks.max_resident_kernels
    config[layout.SHARED], config[layout.N_ENG] = bool(copies.shared), len(copies.engines)
    config[layout.STICKY], config[layout.OLDEST_FIRST] = _ORDERS[copies.order]
    config[layout.FLUID], config[layout.PAIRED] = bool(copies._fluid), bool(copies._paired)
    per_sm = max(1, min(preset.max_blocks_per_sm, preset.max_threads_per_sm // 256))
    config[layout.SMC_COST] = preset.max_threads_per_sm // per_sm
    config[layout.SMC_MAXRES] = preset.sm_count * per_sm
    config[layout.POOL_OF_H2D], config[layout.POOL_OF_D2H] = 0, 0 if copies.shared else 1
    config[layout.H2D_KIND], config[layout.EVENT_WAIT_KIND] = K["h2d"], K["event_wait"]
    config[layout.N_STREAMS] = len(run.plan.stream_names)
    config[layout.CB_COLD] = run.callback_cold
    config[layout.FREE_TOP] = run.free.top if run.free is not None else 0
    if run.dep_latency is not None:
        config[layout.LAT0 : layout.LAT0 + 25] = run.dep_latency
    config[layout.LAUNCH0 : layout.LAUNCH0 + len(run.launch_latency)] = run.launch_latency
    config[layout.SYNC0 : layout.SYNC0 + len(run.sync_return)] = run.sync_return
    for direction in (0, 1):
        for contended in (0, 1):
            config[layout.REST0 + direction * 2 + contended] = copies._rest[direction][contended]
    if max(config.max(), -config.min()) >= layout.INPUT_LIMIT:
        raise OutOfReach
    config_floats = np.zeros(layout.N_FCONFIG, np.float64)
    config_floats[layout.SLOWED0 : layout.SLOWED0 + 2] = copies._slowed
    config_floats[layout.FIXED0 : layout.FIXED0 + 2] = copies._fixed
    config_floats[layout.FIXED_SLOWED0 : layout.FIXED_SLOWED0 + 2] = copies._fixed_slowed
    return config, config_floats


def _engines(run: RunState) -> tuple[np.ndarray, np.ndarray]:
    """The copy engines, idle: copy_engines (int64) and copy_engine_floats (float64)."""
    engines = run.copies.engines
    copy_engines = np.zeros((layout.N_ENGINE_ROWS, len(engines)), np.int64)
    copy_engines[layout.E_POOL] = [e.pool for e in engines]
    copy_engines[layout.E_OP] = -1
    copy_engines[layout.E_LAST_COPY_KEY] = -1
    copy_engines[layout.E_WAKE_AT] = -1
    copy_engines[layout.E_PARTNER] = -1
    if run.copies._paired:
        copy_engines[layout.E_PARTNER] = [1, 0]
    copy_engine_floats = np.zeros((2, len(engines)), np.float64)
    copy_engine_floats[layout.E_FACTOR] = 1.0
    return copy_engines, copy_engine_floats


def build_state(run: RunState) -> State:
    """The tables of ``run`` before its first event (OutOfReach, OverflowError: not here)."""
    plan, n = run.plan, run.n
    op_times, op_codes, op_floats = _op_tables(run)
    config, config_floats = _config(run)
    scalars = np.zeros(layout.N_SCALARS, np.int64)
    scalars[layout.HOST_T] = run.host_t
    scalars[layout.HEAP_N] = 1
    scalars[layout.LAST_DEFAULT], scalars[layout.LK_OP] = -1, -2
    scalars[layout.LK_STREAM], scalars[layout.LK_GROUP] = -1, 0
    scalars[layout.GROUP_N] = 1  # group 0: the empty group last_kernel starts with
    scalars[layout.FREE] = run.blocks.free
    scalars[layout.CB_WAKE] = run.callback_wake
    n_streams, n_queues = len(plan.stream_names), plan.queue_count
    streams = np.zeros((layout.N_STREAM_ROWS, n_streams), np.int64)
    streams[layout.S_CLASS], streams[layout.S_PRIO] = plan.stream_class, plan.priority
    streams[layout.S_TAIL] = streams[layout.S_COVERED] = streams[layout.S_SEEN_DEFAULT] = -1
    queues = np.zeros((layout.N_QUEUE_ROWS, n_queues), np.int64)
    for row in (layout.Q_HEAD, layout.Q_LAST_STREAM, layout.Q_PREV_POP, layout.Q_PREV_POP_T,
                layout.Q_TAIL):  # fmt: skip
        queues[row] = -1
    copy_engines, copy_engine_floats = _engines(run)
    copies = max(1, int(np.count_nonzero(op_codes[:n, layout.RUN] == 0)))
    pool_times = np.zeros((2, copies), np.int64)
    pool_ops = np.zeros((2, copies), np.int64)
    groups = np.zeros((3, n + 2 if run.signal_delay else 1), np.int64)
    groups[layout.G_HEAD] = -1
    heap = np.zeros(layout.HEAP_ENTRY * 64, np.int64)
    heap[: layout.HEAP_ENTRY] = (layout.NEVER, -1, 0, 0, 0)
    # The event waits' dependencies, set before the loop (RunState._event_tables).
    pool: list[int] = []
    for w in run.record_of:
        deps = run.deps_of[w]
        if deps is not None:
            op_times[w, layout.DSTART], op_codes[w, layout.DLEN] = len(pool), len(deps)
            pool.extend(deps)
    scalars[layout.DP_N] = len(pool)
    dpool = np.zeros(max(64, 2 * len(pool) + n), np.int64)
    dpool[: len(pool)] = pool
    # The "event" edges RunState drew before the loop come first, as in its lists.
    src, dst, kind = run.deps
    scalars[layout.EDGE_N] = len(src)
    edges = np.zeros(max(64, 3 * len(src) + n), np.int64)
    edges[: 3 * len(src)] = np.column_stack([src, dst, kind]).ravel() if src else []
    occ = np.zeros(64, np.int64)  # (time 0, 0 SMs)
    scalars[layout.OCC_N] = 1
    pending_kernels = np.zeros(n + 1, np.int64)
    barrier_ops = np.zeros(n_streams + 1, np.int64)
    host_wait = np.zeros(n_streams + 1, np.int64)
    tables = [
        op_times, op_codes, op_floats, config, config_floats, scalars, streams, queues,
        copy_engines, copy_engine_floats, pool_times, pool_ops, pending_kernels, barrier_ops,
        host_wait, groups,
    ]  # fmt: skip
    buffers = [heap, np.zeros(max(256, n), np.int64), dpool, edges, occ, np.zeros(64, np.int64)]
    outputs = [run.columns[name] for name in ("issue_end", "start", "end", "engine")]
    return State(tables, buffers, outputs)


def write_back(run: RunState, state: State) -> None:
    """The results into ``run``, as the Python loop leaves them for build_timeline: the
    columns (written in place already), the host's position, the dependency edges and the
    SMs-busy step function."""
    scalars = state.scalars
    run.host_i = int(scalars[layout.HOST_I])
    edges = state.buffers[layout.EDGES][: 3 * int(scalars[layout.EDGE_N])].reshape(-1, 3)
    run.deps = (edges[:, 0], edges[:, 1], edges[:, 2])  # type: ignore[assignment]
    occ = state.buffers[layout.OCC][: 2 * int(scalars[layout.OCC_N])].reshape(-1, 2)
    run.blocks.occupancy_time = occ[:, 0].copy()  # type: ignore[assignment]
    run.blocks.occupancy_sms = occ[:, 1].copy()  # type: ignore[assignment]


def reset_outputs(state: State) -> None:
    """Undo what a compiled run wrote into the run's columns (the Python loop runs it)."""
    from swimlanes.timeline.timeline import NO_TIME

    for column in state.outputs[:3]:
        column.fill(NO_TIME)
    state.outputs[3].fill(-1)
