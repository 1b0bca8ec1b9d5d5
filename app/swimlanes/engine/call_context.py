"""A host call's cost by its place in the program (``DevicePreset.call_cost_factors``).

The preset's ``issue_cost_us`` is measured by calibrate in a varied program of calls. In the
fidelity benchmark's random pipelines (training halves of eleven data sets, H100 and H200
hosts, 2026-11-24 and 2026-11-25) the same calls cost more in three places, by factors that
held on every host (pooled medians of each call's measured time over the model's):

- among the first three calls of a host thread (``first_calls``): 1.75 times, the first
  H2D of a program 2.4 times (code and data not yet in the CPU's caches);
- right after a call that blocked the host (a sync, a synchronous or pageable copy, host
  work, ``malloc``, ``free``; ``after_blocking``): 1.27 times;
- per kind (``memset``, ``d2d``, ``host_func``, and ``roofline_kernel``, a kernel timed by
  ``flops`` and ``bytes``, whose Numba launch packs two arrays): 1.55, 1.6, 2.7 and 1.55
  times what calibrate measured for them.

Kernel launches timed by ``duration_us`` or ``block_us`` keep the preset's cost in every
place: their launches after a blocking call or among the first calls did cost more, but
charging that made the spans of more pipelines worse than better (other misses offset it).
A preset without ``call_cost_factors`` charges calls as before. The fast planner and the
reference simulator both call :func:`context_cost_ns`, so the engines agree to the
nanosecond.
"""

from __future__ import annotations

from swimlanes.engine.plan_model import ENQUEUED, HOST_ONLY
from swimlanes.engine.preset_model import DevicePreset
from swimlanes.model.document import OP_KINDS, Op

#: Calls at the start of a host thread that count as its first calls.
FIRST_CALLS = 3
#: Calls that hold the host until work is done (and synchronous or pageable copies): the
#: host-only calls (syncs, ``free``, ``malloc``, host work).
HOST_BLOCKING_CALLS = frozenset(HOST_ONLY)
#: Calls that enqueue work: the only ones whose cost depends on their place.
ASYNC_CALLS = frozenset(OP_KINDS[code] for code in ENQUEUED)


def blocks_host(op: Op) -> bool:
    """Whether the call holds the host until work is done: syncs, host work, ``malloc``,
    ``free``, and synchronous or pageable copies."""
    if op.op in HOST_BLOCKING_CALLS:
        return True
    if op.op in ("h2d", "d2h"):
        return op.is_async is False or op.effective_host_memory == "pageable"
    return False


def _kind_key(op: Op) -> str:
    """The ``call_cost_factors`` key of a call's kind: a kernel timed by FLOPs and bytes alone
    (no duration, no block time) has its own, ``roofline_kernel``."""
    if op.op == "kernel":
        timed = op.duration_us is not None or op.block_us is not None
        return "roofline_kernel" if not timed and op.flops and op.bytes else "kernel"
    return op.op


def context_cost_ns(
    op: Op, position: int, previous: Op | None, cost_ns: int, preset: DevicePreset
) -> int:
    """The host cost of ``op``'s call, the ``position``-th call of its host thread, after
    ``previous`` (None for the first): ``cost_ns`` (its issue or repeat cost, without the
    host's gap) scaled by the preset's ``call_cost_factors`` that apply to it."""
    factors = preset.call_cost_factors
    if not factors or op.op not in ASYNC_CALLS or blocks_host(op):
        return cost_ns
    scale = factors.get(_kind_key(op), 1.0)
    if op.op != "kernel":
        if position < FIRST_CALLS:
            # Cold, whether or not it repeats the call before it: from the issue cost.
            return round(preset.issue_cost_ns(op.op) * scale * factors.get("first_calls", 1.0))
        if previous is not None and blocks_host(previous):
            scale *= factors.get("after_blocking", 1.0)
    return cost_ns if scale == 1.0 else round(cost_ns * scale)
