"""The multi-device engine: pipelines of several devices, or with peer copies or NCCL
collectives, simulated by the reference model extended to several devices
(``engine/reference/system.py``; its docstrings give the semantics).

:func:`swimlanes.engine.simulate` sends such pipelines here (:func:`needs_multi_device`); the
fast engine keeps every other pipeline. On devices that do not interact the result per device
is the fast engine's schedule of that device's part of the program alone: the multi-device
engine orders what happens at one instant as the fast engine does (see
``simulate_reference_with_fast_engine_ties``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from swimlanes.engine import plan_model
from swimlanes.engine.plan import MAX_OP_NS
from swimlanes.engine.presets import DevicePreset, get_preset
from swimlanes.engine.reference.collectives import instances
from swimlanes.engine.reference.columns import op_columns
from swimlanes.engine.reference.layout import MultiDeviceError, layout
from swimlanes.engine.reference.program import OpFacts
from swimlanes.engine.reference.system import System
from swimlanes.engine.reference.threads import op_threads, thread_layout
from swimlanes.model.document import MULTI_DEVICE_OPS, Pipeline
from swimlanes.timeline.thread_columns import check_thread_columns
from swimlanes.timeline.timeline import Timeline

__all__ = ["MultiDeviceError", "needs_multi_device", "simulate_multi_device"]


def needs_multi_device(pipeline: Pipeline) -> bool:
    """Whether ``pipeline`` needs the multi-device engine: more than one device, several host
    threads on a device, or any op of a kind that involves several devices (a peer copy, a
    collective)."""
    if len(pipeline.device_names) > 1 or pipeline.is_multi_thread:
        return True
    kinds = set(MULTI_DEVICE_OPS)
    return any(op.op in kinds for op in pipeline.program)


def simulate_multi_device(
    pipeline: Pipeline,
    device: DevicePreset | str = "8x-h200-nvlink",
    *,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    fast_engine_ties: bool = True,
) -> Timeline:
    """Simulate a multi-device ``pipeline`` on ``device`` (a preset whose ``gpus`` covers its
    devices). Raises :class:`MultiDeviceError` (a ValueError) for what it cannot run, and
    :class:`~swimlanes.engine.SimulationCancelled` when ``cancel`` returns True."""
    preset = device if isinstance(device, DevicePreset) else get_preset(device)
    facts = layout(pipeline, preset)
    by_op = instances(pipeline, preset, facts.op_device, facts.members)
    for i, instance in by_op.items():  # a collective's time alone is its call's
        facts.ops[i] = replace(facts.ops[i], solo_ns=instance.duration_ns)
    _check_times(facts.ops, preset)
    threads = thread_layout(pipeline, facts, preset)
    system = System(facts, preset, by_op, fast_engine_ties, progress, cancel, threads)
    system.run()
    if progress is not None:
        progress(1.0)
    timeline = multi_timeline(system, pipeline.name)
    if pipeline.host_threads:  # rows named by the program's threads
        set_thread_columns(timeline, system)
    return timeline


def _check_times(ops: list[OpFacts], preset: DevicePreset) -> None:
    """Every op's time alone within the simulator's per-op limit, and the kernels' waves of
    thread blocks within its limit for one pipeline (as plan.py checks for the fast engine),
    so that every time of the run fits its int64 clock and the run ends in reasonable time."""
    waves, most = 0, (0, -1)  # (waves of one kernel, its index)
    for op in ops:
        if op.solo_ns > MAX_OP_NS:
            raise MultiDeviceError(
                f"program[{op.index}]: this {op.kind} takes {op.solo_ns / 1000.0:.4g} us on "
                f"{preset.name}: the simulator takes at most {MAX_OP_NS / 1000.0:g} us per op"
            )
        if op.kernel is not None:
            w = -(-op.kernel.blocks // max(1, op.kernel.max_resident))
            waves += w
            most = max(most, (w, op.index))
    if waves > plan_model.MAX_BLOCK_WAVES:
        raise MultiDeviceError(
            plan_model.too_many_waves(most[1], waves, most[0], "this kernel", preset.name)
        )


def multi_timeline(system: System, name: str) -> Timeline:
    """The timeline of a finished multi-device run (device columns and link usage set)."""
    preset, facts, n = system.preset, system.layout, len(system.ops)
    columns, serial = op_columns(system.ops, system.state, system.edges)
    issue_end = columns["issue_end"].tolist()
    issue_start = [0] * n
    gap = round(preset.host_call_gap_us * 1000.0)
    for th in system.threads:  # each host thread: a call starts after its previous one ended
        ops = th.layout.ops
        for prev, i in zip(ops, ops[1:], strict=False):
            issue_start[i] = issue_end[prev] + gap
    engine_names, engine_device, occ_t, occ_s, occ_d = [], [], [], [], []
    for d, device in enumerate(system.devices):
        names = [*device.copies.names, "Compute"]
        engine_names += [f"{device.layout.name} {e}" for e in names]
        engine_device += [d] * len(names)
        occ_t += [t for t, _ in device.sms.occupancy]
        occ_s += [s for _, s in device.sms.occupancy]
        occ_d += [d] * len(device.sms.occupancy)
    use = system.link_use
    return Timeline(
        **columns,
        issue_start=np.asarray(issue_start, dtype=np.int64),
        stream_names=[s.name for s in system.streams],
        engine_names=engine_names,
        occupancy_time=np.asarray(occ_t, dtype=np.int64),
        occupancy_sms=np.asarray(occ_s, dtype=np.int32),
        sm_count=preset.sm_count,
        source="simulated",
        device=preset.name,
        name=name,
        meta={
            "preset": preset.name,
            "serial_ns": serial,
            "connections": preset.connections or len(system.streams),
            "devices": len(system.devices),
        },
        device_names=[d.layout.name for d in system.devices],
        stream_device=np.asarray(facts.stream_device, dtype=np.int16),
        engine_device=np.asarray(engine_device, dtype=np.int16),
        host_device=np.asarray(facts.op_device, dtype=np.int16),
        link_names=list(use.names),
        link_op=np.asarray(use.ops, dtype=np.int32),
        link_id=np.asarray(use.links, dtype=np.int16),
        occupancy_device=np.asarray(occ_d, dtype=np.int16),
    )


def set_thread_columns(timeline: Timeline, system: System) -> None:
    """The timeline's host-thread columns: each thread's name and device, each op's thread."""
    threads = [th.layout for th in system.threads]
    timeline.thread_names = [th.name for th in threads]
    timeline.thread_device = np.asarray([th.device for th in threads], dtype=np.int16)
    timeline.host_thread = np.asarray(op_threads(threads, len(system.ops)), dtype=np.int16)
    check_thread_columns(timeline)
