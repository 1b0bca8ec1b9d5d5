"""Where the compiled core keeps each piece of a simulation's state: the field numbers of its
tables, event tags and codes (the same values as the Python engine's), and the clock's bounds.

Numba reads module-level ints as compile-time constants, so the compiled functions index their
tables (and the state tuple) with these names at no cost. Each table is one 2-D array, so that a
function takes a handful of arrays, not dozens: the per-op tables (op_times, op_codes,
op_floats) hold a row per op and a column per field (an op's fields share a cache line or two),
the small ones (streams, queues, copy_engines, copy_engine_floats) a row per field and a column
per stream, queue or copy engine.
"""

from __future__ import annotations

# -- the clock -------------------------------------------------------------------------------------
#: The host's time while it waits or when it is done (state.INF).
INF = 1 << 62
#: INF as a float: a float time at or past this is out of range (see buffers.push).
FLOAT_LIMIT = float(INF)
#: The heap sentinel's time. The Python engine's NEVER (2**63) does not fit int64: int64's
#: largest value is as good, since no event at INF or later is ever kept (see BAIL).
NEVER = (1 << 63) - 1
#: Inputs (host costs, device times, latencies) at or past this are not run compiled: with every
#: time below INF, a sum of a time and an input stays inside int64.
INPUT_LIMIT = 1 << 61

# -- heap event tags (simulator, blocks, copies, queues) -------------------------------------------
EV_BATCH, EV_COPY, EV_TIMER, EV_CALLBACK = 1, 2, 3, 4
#: Heap entry width: (time, seq, tag, a, b).
HEAP_ENTRY = 5

# -- plan codes (plan_model) -----------------------------------------------------------------------
RUN_COPY, RUN_SM, RUN_KERNEL, RUN_INSTANT, RUN_CALLBACK = range(5)
ENQ, ENQ_WAIT, ENQ_STAGE, ENQ_BARRIER = 0, 1, 2, 3
WAIT_STREAM, WAIT_EVENT, WAIT_ALL, BUSY, BARRIER = 4, 5, 6, 7, 8
END = -1  # host code of the row past the program
STREAM_LEGACY, STREAM_BLOCKING = 0, 1
HOST = -1  # waiter id of the host thread
# Dependency kinds (timeline.DEP_KINDS): only those the loop records.
DEP_DEFAULT_STREAM, DEP_QUEUE, DEP_HOST = 2, 3, 4
H2D, D2H = 0, 1
COPIES, BLOCKS = 1, 2  # dirty bits
BATCH_DONE, KERNEL_DONE, SMS_IDLE = 0, 1, 2

# -- per-op int64 table (op_times) columns: times, costs and counts --------------------------------
(
    COST, SOLO, STAGE, STAGE_OFF, READY, DONE, DSTART, WHEAD, WTAIL, W_SEQ, W_REM, W_RES,
    W_MAXRES,
) = range(13)  # fmt: skip
N_OP_TIME_FIELDS = 13
# -- per-op int32 table (op_codes) columns: codes and op numbers (half an int64 column's memory)
(
    KIND, STREAM, QUEUE, RUN, HOSTC, NEXTQ, PREV, ORIGIN, RECORD, DLEN, GROUP, NEXTDEF,
    W_PRIO, W_COST, W_STARTED, COPY_KEY,
) = range(16)  # fmt: skip
N_OP_CODE_FIELDS = 16
# -- per-op float64 table (op_floats) columns: a kernel's (or SM copy's) ns per block, carry
W_BLOCK_NS, W_CARRY = range(2)
N_OP_FLOAT_FIELDS = 2

# -- scalars ---------------------------------------------------------------------------------------
(
    HOST_I, HOST_T, DIRTY, HEAP_N, SEQ, WN_N, DP_N, EDGE_N, OCC_N, TODO_N, LAST_DEFAULT,
    BARRIER_ID, BAR_N, HOST_WAITING, HW_N, LK_OP, LK_STREAM, LK_GROUP, GROUP_N, FREE,
    RES_KERNELS, PEND_N, RUNNING, RUNNING_D2H, POOL_N, POOL_N_D2H, BAIL, CB_WAKE, TURN,
) = range(29)  # fmt: skip
N_SCALARS = 29

# -- configuration (config: int64, config_floats: float64) -----------------------------------------
(
    N_OPS, COMPUTE, SIGNAL, TRACK, LAT_ON, KTAIL, SM_COUNT, SLOTS_PER_SM, SLOTS, MAX_RES_K,
    SHARED, N_ENG, STICKY, OLDEST_FIRST, FLUID, PAIRED, SMC_COST, SMC_MAXRES, POOL_OF_H2D,
    POOL_OF_D2H, H2D_KIND, EVENT_WAIT_KIND, N_STREAMS, CB_COLD, FREE_TOP,
) = range(25)  # fmt: skip
LAT0 = 25  # 25 entries: state._dependency_latency's table
LAUNCH0 = LAT0 + 25  # 32 entries: launch latency per op kind code
SYNC0 = LAUNCH0 + 32  # 9 entries: sync_return per host code
REST0 = SYNC0 + 9  # 4 entries: rest after a copy, [direction * 2 + contended]
N_CONFIG = REST0 + 4
SLOWED0, FIXED0, FIXED_SLOWED0 = 0, 2, 4  # config_floats: two each, by direction
N_FCONFIG = 6

# -- rows of the tables streams, queues, copy_engines and copy_engine_floats ---------------------
# (S_WAITING, S_QUEUE and Q_TAIL: queue_choice "free", see engine.queue_choice.FreeQueues;
# FREE_TOP in config is its last connection queue, 0 without it, and TURN its round-robin.)
(S_CLASS, S_PRIO, S_TAIL, S_COVERED, S_SEEN_DEFAULT, S_SEEN_BARRIER, S_QUIET, S_WAITING,
 S_QUEUE) = range(9)  # fmt: skip
N_STREAM_ROWS = 9
Q_HEAD, Q_LEN, Q_LAST_STREAM, Q_PREV_POP, Q_PREV_POP_T, Q_TAIL = range(6)
N_QUEUE_ROWS = 6
# (E_LAST_COPY_KEY: the copy key, op_codes' COPY_KEY, of the engine's last copy.)
(E_POOL, E_OP, E_DIR, E_LAST_COPY_KEY, E_SINCE, E_VERSION, E_CONTENDED, E_FREE_AT,
 E_WAKE_AT, E_PARTNER) = range(10)  # fmt: skip
N_ENGINE_ROWS = 10
E_REMAINING, E_FACTOR = 0, 1
# -- Fermi completion groups (groups): running members, deferred ops' list head and tail
G_COUNT, G_HEAD, G_TAIL = range(3)

# -- growable buffers (the list ``buffers``): heap, waiter nodes, dependency pool, edges,
# occupancy, to-do stack
HEAP, WNODES, DPOOL, EDGES, OCC, TODO = range(6)

# -- the state tuple's slots: the tables, the growable buffers and the run's output columns, as
# run_chunk passes them to every compiled function (state[SCALARS] is the scalars table)
(
    OP_TIMES, OP_FLOATS, CONFIG, CONFIG_FLOATS, SCALARS, STREAMS, QUEUES, COPY_ENGINES,
    COPY_ENGINE_FLOATS, POOL_TIMES, POOL_OPS, PENDING_KERNELS, BARRIER_OPS, HOST_WAIT, GROUPS,
    BUFFERS, ISSUE_END_TIMES, START_TIMES, END_TIMES, OP_ENGINES, OP_CODES,
) = range(21)  # fmt: skip

# -- what a compiled run returns -------------------------------------------------------------------
DONE_STATUS, MORE, OUT_OF_RANGE = 0, 1, 2
