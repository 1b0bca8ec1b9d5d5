"""What one simulation may take: the planner refuses a program past the limits of
engine.plan_model (MAX_BLOCK_WAVES, MAX_STREAM_CHECKS, MAX_TOTAL_NS), naming the op and the
limit, before the event loop runs.
"""

from __future__ import annotations

import numpy as np

from swimlanes.engine import plan_model as _model  # its limits: read when used (tests change them)
from swimlanes.engine.plan_columns import within_limits
from swimlanes.engine.plan_model import (
    BARRIER,
    ENQ_BARRIER,
    RUN_COPY,
    RUN_KERNEL,
    RUN_SM,
    STREAM_LEGACY,
    WAIT_ALL,
    Plan,
    Shapes,
)
from swimlanes.engine.presets import DevicePreset


def check_work(
    shapes: Shapes,
    shape_of_op: np.ndarray,
    first: list[int],
    plan: Plan,
    preset: DevicePreset,
) -> None:
    """Refuse (ValueError naming the op and the limit) a program that would take the
    simulator too long (MAX_BLOCK_WAVES, MAX_STREAM_CHECKS) or whose times would not fit its
    clock (MAX_TOTAL_NS); worked out per shape, times how often each shape occurs (first
    in bulk, and shape by shape only when that comes near a limit, to name it exactly)."""
    count_array = np.bincount(shape_of_op, minlength=len(shapes.extras))
    slack, slowest_copy = _slack(preset)
    if within_limits(shapes, count_array, plan, slack, slowest_copy):
        return
    count = count_array.tolist()
    total_ns, total_waves, checks, most = _work_totals(shapes, count, plan, slack, slowest_copy)
    n_streams = len(plan.stream_names)
    max_waves, max_checks, max_total = (
        _model.MAX_BLOCK_WAVES, _model.MAX_STREAM_CHECKS, _model.MAX_TOTAL_NS
    )  # fmt: skip
    if total_waves > max_waves:
        n = most[1]
        i = first[n]
        these = "this kernel" if count[n] == 1 else f"the {count[n]} kernels like this one"
        raise ValueError(_model.too_many_waves(i, total_waves, most[0], these, preset.name))
    if checks > max_checks:
        raise ValueError(
            f"program: {checks // max(1, n_streams)} ops on the legacy default stream or "
            f"synchronising the whole device, each checking all {n_streams} streams: the "
            f"simulator takes at most {max_checks} such checks in one pipeline (fewer "
            "streams, or fewer such ops)"
        )
    if total_ns > max_total:
        raise ValueError(
            f"program: its ops one after another take {total_ns / 1000.0:.4g} us on "
            f"{preset.name}, past the simulator's clock of {max_total / 1000.0:.4g} us "
            f"({max_total / 3.15576e16:.3g} years)"
        )


def _slack(p: DevicePreset) -> tuple[int, float]:
    """A bound on the slack one op may add beyond its host call and its time alone (launch and
    dependency latencies, a blocking call's return, a copy engine's rests, the fixed cost of a
    copy against the other direction), in ns; and the slowest a copy may run, as a factor."""
    slack_us = (
        max(p.kernel_launch_latency_us, p.copy_launch_latency_us)
        + max(p.dependency_latency_us, p.kernel_dependency_latency_us)
        + max(p.sync_return_us.values(), default=0.0)
        + p.copy_engine_gap_us
        + max(p.bidirectional_rest_us, p.bidirectional_rest_d2h_us or 0.0)
        + max(p.bidirectional_overhead_us, p.bidirectional_overhead_d2h_us or 0.0)
    )
    return round(slack_us * 1000.0), 1.0 + max(
        p.bidirectional_slowdown, p.bidirectional_slowdown_d2h or 0.0
    )


def _work_totals(
    shapes: Shapes, count: list[int], plan: Plan, slack: int, slowest_copy: float
) -> tuple[float, int, int, tuple[int, int]]:
    """The program's ops one after another at their slowest (ns), its kernels' waves of
    blocks, its streams' checks, and (waves, shape) of the kernel shape with the most waves:
    shape by shape, in Python ints (exact whatever the counts)."""
    total_ns: float = 0
    total_waves = checks = 0
    most = (0, 0)
    n_streams = len(plan.stream_names)
    for n, ((_k, s, run, _q, cost, host, solo, _b), extra) in enumerate(shapes.rows()):
        c = count[n]
        device = max(solo, 0) * (slowest_copy if run == RUN_COPY else 1.0)
        stage = extra if isinstance(extra, int) else 0
        total_ns += c * (cost + device + stage + slack)
        if run == RUN_KERNEL:
            assert isinstance(extra, tuple)  # a kernel's extra is its shape
            blocks, _cost, max_resident, _block_ns = extra
            w = -(-blocks // max_resident)
            most = max(most, (c * w, n))
        else:
            w = 1 if run == RUN_SM else 0  # d2d copies and memsets: one wave
        total_waves += c * w
        legacy = run >= 0 and s >= 0 and plan.stream_class[s] == STREAM_LEGACY
        if legacy or host in (BARRIER, ENQ_BARRIER, WAIT_ALL):
            checks += c * n_streams
    return total_ns, total_waves, checks, most
