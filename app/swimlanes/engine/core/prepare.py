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

from swimlanes.engine.core import layout as L
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

    tables: list[np.ndarray]  # OP, OI, F, C, CF, S, ST, Q, E, EF, PT, PO, PEND, BAR, HWAIT, GR
    buffers: list[np.ndarray]  # heap, waiter nodes, dependency pool, edges, occupancy, todo
    outputs: list[np.ndarray]  # issue_end, start, end, engine (the run's own columns)

    @property
    def scalars(self) -> np.ndarray:
        return self.tables[5]


class OutOfReach(Exception):
    """The run has inputs the compiled core does not take (past INPUT_LIMIT): Python runs it."""


def _column(values: list, n: int) -> np.ndarray:
    """A plan list as int64 (OverflowError for values past int64: the Python loop runs it)."""
    return np.fromiter(values, dtype=np.int64, count=n)


def _op_tables(run: RunState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The per-op tables OP (int64), OI (int32) and F (float64), one column per op plus the
    column past the program (host code END, cost INF)."""
    plan, n = run.plan, run.n
    arrays = plan.arrays
    OP = np.empty((n + 1, L.N_OP_ROWS), np.int64)
    OI = np.empty((n + 1, L.N_OI_ROWS), np.int32)
    F = np.zeros((n + 1, L.N_OP_FROWS), np.float64)
    OI[n, :] = -1
    # kind, stream, run and queue: as RunState read them (the Timeline's arrays).
    for row, name in ((L.KIND, "kind"), (L.STREAM, "stream"), (L.RUN, "run"), (L.QUEUE, "queue")):
        OI[:n, row] = arrays[name]
    # Host codes, costs and device times: the lists the loop reads (adjust_plan changes them).
    OI[:n, L.HOSTC] = _column(plan.host, n)
    OP[:n, L.COST] = _column(plan.cost, n)
    OP[n, L.COST] = L.INF
    OP[:n, L.SOLO] = _column(plan.solo, n)
    OP[n, L.SOLO] = 0
    if OP[:n, L.COST].max() >= L.INPUT_LIMIT or OP[:n, L.SOLO].max() >= L.INPUT_LIMIT:
        raise OutOfReach
    for row in (L.READY, L.W_SEQ, L.W_REM, L.W_RES, L.W_MAXRES):
        OP[:, row] = 0
    OP[:, L.DONE] = OP[:, L.DSTART] = OP[:, L.WHEAD] = OP[:, L.WTAIL] = -1
    OI[:n, L.NEXTQ] = np.asarray(run.next_in_queue)
    OI[:n, L.PREV] = run.prev_array
    OI[:n, L.ORIGIN] = _column(run.origin, n) if run.origin else 0
    OI[:, L.RECORD] = -1
    if run.record_of:
        count = len(run.record_of)
        waits = np.fromiter(run.record_of, np.int64, count)
        OI[waits, L.RECORD] = np.fromiter(run.record_of.values(), np.int64, count)
    OI[:, L.GROUP] = OI[:, L.NEXTDEF] = -1
    for row in (L.DLEN, L.W_PRIO, L.W_COST, L.W_STARTED):
        OI[:, row] = 0
    _stage_rows(run, OP, OI)
    _kernel_rows(run, OP, OI, F)
    return OP, OI, F


def _stage_rows(run: RunState, OP: np.ndarray, OI: np.ndarray) -> None:
    """Staging and copy-out times where the host reads them (pageable copies' calls), and the
    DMA's head start of a chunked pageable H2D (Python ints: exact whatever the product)."""
    plan, n = run.plan, run.n
    OP[:, L.STAGE] = 0
    OP[:, L.STAGE_OFF] = 0
    if not plan.stage:
        return
    host = OI[:n, L.HOSTC]
    rows = np.flatnonzero(np.isin(host, (ENQ_STAGE, *_WAITING)))
    stage = plan.stage
    busy = np.fromiter((stage[i] or 0 for i in rows.tolist()), np.int64, len(rows))
    if len(rows) and busy.max() >= L.INPUT_LIMIT:
        raise OutOfReach
    OP[rows, L.STAGE] = busy
    chunk, nbytes = run.h2d_chunk, plan.arrays["nbytes"]
    if not chunk:
        return
    for i in rows[host[rows] == ENQ_STAGE].tolist():
        staged, size = stage[i] or 0, int(nbytes[i])
        OP[i, L.STAGE_OFF] = staged if size <= chunk else staged * chunk // size


def _kernel_rows(run: RunState, OP: np.ndarray, OI: np.ndarray, F: np.ndarray) -> None:
    """The kernels' shapes (blocks, slots per block, resident limit, ns per block) where the
    block scheduler keeps them (W_REM, W_COST, W_MAXRES, W_BLOCK_NS)."""
    plan = run.plan
    rows = np.flatnonzero(OI[: run.n, L.RUN] == RUN_KERNEL)
    if not len(rows):
        return
    # (Kernels' shapes are never None.)
    shapes = cast(list[tuple[int, int, int, float]], [plan.kernel[i] for i in rows.tolist()])
    m = len(rows)
    OP[rows, L.W_REM] = np.fromiter(map(itemgetter(0), shapes), np.int64, m)
    OI[rows, L.W_COST] = np.fromiter(map(itemgetter(1), shapes), np.int64, m)
    OP[rows, L.W_MAXRES] = np.fromiter(map(itemgetter(2), shapes), np.int64, m)
    F[rows, L.W_BLOCK_NS] = np.fromiter(map(itemgetter(3), shapes), np.float64, m)
    if F[rows, L.W_BLOCK_NS].max() >= L.INPUT_LIMIT:
        raise OutOfReach


def _config(run: RunState) -> tuple[np.ndarray, np.ndarray]:
    """The run's constants: C (int64) and CF (float64)."""
    preset, copies, blocks = run.preset, run.copies, run.blocks
    C = np.zeros(L.N_CONFIG, np.int64)
    C[L.N_OPS], C[L.COMPUTE] = run.n, run.compute_engine
    C[L.SIGNAL], C[L.TRACK] = bool(run.signal_delay), bool(run.track_queue_delay)
    C[L.LAT_ON], C[L.KTAIL] = run.dep_latency is not None, run.kernel_tail
    C[L.SM_COUNT], C[L.SLOTS_PER_SM], C[L.SLOTS] = (
        blocks.sm_count, blocks.slots_per_sm, blocks.slots
    )  # fmt: skip
    C[L.MAX_RES_K] = blocks.max_resident_kernels
    C[L.SHARED], C[L.N_ENG] = bool(copies.shared), len(copies.engines)
    C[L.STICKY], C[L.OLDEST_FIRST] = _ORDERS[copies.order]
    C[L.FLUID], C[L.PAIRED] = bool(copies._fluid), bool(copies._paired)
    per_sm = max(1, min(preset.max_blocks_per_sm, preset.max_threads_per_sm // 256))
    C[L.SMC_COST] = preset.max_threads_per_sm // per_sm
    C[L.SMC_MAXRES] = preset.sm_count * per_sm
    C[L.POOL_OF_H2D], C[L.POOL_OF_D2H] = 0, 0 if copies.shared else 1
    C[L.H2D_KIND], C[L.EVENT_WAIT_KIND] = K["h2d"], K["event_wait"]
    C[L.N_STREAMS] = len(run.plan.stream_names)
    if run.dep_latency is not None:
        C[L.LAT0 : L.LAT0 + 25] = run.dep_latency
    C[L.LAUNCH0 : L.LAUNCH0 + len(run.launch_latency)] = run.launch_latency
    C[L.SYNC0 : L.SYNC0 + len(run.sync_return)] = run.sync_return
    for direction in (0, 1):
        for contended in (0, 1):
            C[L.REST0 + direction * 2 + contended] = copies._rest[direction][contended]
    if max(C.max(), -C.min()) >= L.INPUT_LIMIT:
        raise OutOfReach
    CF = np.zeros(L.N_FCONFIG, np.float64)
    CF[L.SLOWED0 : L.SLOWED0 + 2] = copies._slowed
    CF[L.FIXED0 : L.FIXED0 + 2] = copies._fixed
    CF[L.FIXED_SLOWED0 : L.FIXED_SLOWED0 + 2] = copies._fixed_slowed
    return C, CF


def _engines(run: RunState) -> tuple[np.ndarray, np.ndarray]:
    """The copy engines, idle: E (int64) and EF (float64)."""
    engines = run.copies.engines
    E = np.zeros((L.N_ENGINE_ROWS, len(engines)), np.int64)
    E[L.E_POOL] = [e.pool for e in engines]
    E[L.E_OP] = -1
    E[L.E_LAST_STREAM] = -1
    E[L.E_WAKE_AT] = -1
    E[L.E_PARTNER] = -1
    if run.copies._paired:
        E[L.E_PARTNER] = [1, 0]
    EF = np.zeros((2, len(engines)), np.float64)
    EF[L.E_FACTOR] = 1.0
    return E, EF


def build_state(run: RunState) -> State:
    """The tables of ``run`` before its first event (OutOfReach, OverflowError: not here)."""
    plan, n = run.plan, run.n
    OP, OI, F = _op_tables(run)
    C, CF = _config(run)
    S = np.zeros(L.N_SCALARS, np.int64)
    S[L.HOST_T] = run.host_t
    S[L.HEAP_N] = 1
    S[L.LAST_DEFAULT], S[L.LK_OP], S[L.LK_STREAM], S[L.LK_GROUP] = -1, -2, -1, 0
    S[L.GROUP_N] = 1  # group 0: the empty group last_kernel starts with
    S[L.FREE] = run.blocks.free
    n_streams, n_queues = len(plan.stream_names), plan.queue_count
    ST = np.zeros((L.N_STREAM_ROWS, n_streams), np.int64)
    ST[L.S_CLASS], ST[L.S_PRIO] = plan.stream_class, plan.priority
    ST[L.S_TAIL] = ST[L.S_COVERED] = ST[L.S_SEEN_DEFAULT] = -1
    Q = np.zeros((L.N_QUEUE_ROWS, n_queues), np.int64)
    Q[L.Q_HEAD] = Q[L.Q_LAST_STREAM] = Q[L.Q_PREV_POP] = Q[L.Q_PREV_POP_T] = -1
    E, EF = _engines(run)
    copies = max(1, int(np.count_nonzero(OI[:n, L.RUN] == 0)))
    PT = np.zeros((2, copies), np.int64)
    PO = np.zeros((2, copies), np.int64)
    GR = np.zeros((3, n + 2 if run.signal_delay else 1), np.int64)
    GR[L.G_HEAD] = -1
    heap = np.zeros(L.HW * 64, np.int64)
    heap[: L.HW] = (L.NEVER, -1, 0, 0, 0)
    # The event waits' dependencies, set before the loop (RunState._event_tables).
    pool: list[int] = []
    for w in run.record_of:
        deps = run.deps_of[w]
        if deps is not None:
            OP[w, L.DSTART], OI[w, L.DLEN] = len(pool), len(deps)
            pool.extend(deps)
    S[L.DP_N] = len(pool)
    dpool = np.zeros(max(64, 2 * len(pool) + n), np.int64)
    dpool[: len(pool)] = pool
    # The "event" edges RunState drew before the loop come first, as in its lists.
    src, dst, kind = run.deps
    S[L.EDGE_N] = len(src)
    edges = np.zeros(max(64, 3 * len(src) + n), np.int64)
    edges[: 3 * len(src)] = np.column_stack([src, dst, kind]).ravel() if src else []
    occ = np.zeros(64, np.int64)  # (time 0, 0 SMs)
    S[L.OCC_N] = 1
    tables = [OP, OI, F, C, CF, S, ST, Q, E, EF, PT, PO]
    tables += [np.zeros(n + 1, np.int64), np.zeros(n_streams + 1, np.int64)]  # PEND, BAR
    tables += [np.zeros(n_streams + 1, np.int64), GR]  # HWAIT
    buffers = [heap, np.zeros(max(256, n), np.int64), dpool, edges, occ, np.zeros(64, np.int64)]
    outputs = [run.columns[name] for name in ("issue_end", "start", "end", "engine")]
    return State(tables, buffers, outputs)


def write_back(run: RunState, state: State) -> None:
    """The results into ``run``, as the Python loop leaves them for build_timeline: the
    columns (written in place already), the host's position, the dependency edges and the
    SMs-busy step function."""
    S = state.scalars
    run.host_i = int(S[L.HOST_I])
    edges = state.buffers[L.EDGES][: 3 * int(S[L.EDGE_N])].reshape(-1, 3)
    run.deps = (edges[:, 0], edges[:, 1], edges[:, 2])  # type: ignore[assignment]
    occ = state.buffers[L.OCC][: 2 * int(S[L.OCC_N])].reshape(-1, 2)
    run.blocks.occupancy_time = occ[:, 0].copy()  # type: ignore[assignment]
    run.blocks.occupancy_sms = occ[:, 1].copy()  # type: ignore[assignment]


def reset_outputs(state: State) -> None:
    """Undo what a compiled run wrote into the run's columns (the Python loop runs it)."""
    from swimlanes.timeline.timeline import NO_TIME

    for column in state.outputs[:3]:
        column.fill(NO_TIME)
    state.outputs[3].fill(-1)
