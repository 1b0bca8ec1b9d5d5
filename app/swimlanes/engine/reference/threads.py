"""The host threads of a program for the reference system model (``system.py``): which thread
issues each op, in what order, and what each call costs on its own thread.

A program without declared host threads has one per device, which issues the device's ops in
program order: then this is exactly the per-device thread the multi-device model always had.
With several threads on one device, each issues its own ops in program order, concurrently
with the others; a call that repeats its own thread's previous call runs warm (the preset's
``repeat_issue_cost_us``), as the single-device tables say of one thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from swimlanes.engine.call_context import context_cost_ns
from swimlanes.engine.presets import DevicePreset
from swimlanes.engine.reference.layout import Layout
from swimlanes.engine.reference.program import HostCall, _call_key
from swimlanes.model.document import Op, Pipeline


@dataclass
class ThreadLayout:
    """One host thread's part of the program."""

    index: int
    name: str
    device: int  # its device's index
    ops: list[int] = field(default_factory=list)  # what it issues, in order


def device_threads(layout: Layout) -> list[ThreadLayout]:
    """One thread per device, named after it, issuing the device's ops (no declared threads)."""
    return [ThreadLayout(d.index, d.name, d.index, list(d.ops)) for d in layout.devices]


def thread_layout(pipeline: Pipeline, layout: Layout, preset: DevicePreset) -> list[ThreadLayout]:
    """The program's host threads (grouped by device, in device order); with several threads
    on a device, the ops' call costs are worked out again per thread (in ``layout.ops``)."""
    if not pipeline.is_multi_thread:
        return device_threads(layout)
    pairs = pipeline.thread_list()
    names = [d.name for d in layout.devices]
    threads = [ThreadLayout(k, name, names.index(dev)) for k, (name, dev) in enumerate(pairs)]
    index = {t.name: t for t in threads}
    for i, op in enumerate(pipeline.program):
        index[pipeline.op_thread(op)].ops.append(i)
    _thread_costs(pipeline, layout, preset, threads)
    return threads


def _thread_costs(
    pipeline: Pipeline, layout: Layout, preset: DevicePreset, threads: list[ThreadLayout]
) -> None:
    """Each call's cost with "the call before it" being its own thread's."""
    gap = round(preset.host_call_gap_us * 1000.0)
    for thread in threads:
        previous: tuple | None = None
        previous_op: Op | None = None
        for position, i in enumerate(thread.ops):
            op = pipeline.program[i]
            key = _call_key(op)
            repeat = bool(preset.repeat_issue_cost_us) and key == previous
            previous = key
            cost = preset.repeat_issue_cost_ns(op.op) if repeat else preset.issue_cost_ns(op.op)
            cost = context_cost_ns(op, position, previous_op, cost, preset)
            previous_op = op
            fact = layout.ops[i]
            if op.call_us is not None:
                measured = round(op.call_us * 1000.0)
                if fact.call is HostCall.ENQUEUE_AND_STAGE:  # the whole call: staging is the rest
                    layout.ops[i] = replace(
                        fact, cost_ns=gap + cost, stage_ns=max(0, measured - cost)
                    )
                    continue
                cost = measured
            layout.ops[i] = replace(fact, cost_ns=gap + cost)


def op_threads(threads: list[ThreadLayout], n: int) -> list[int]:
    """Each op's thread index."""
    out = [0] * n
    for thread in threads:
        for i in thread.ops:
            out[i] = thread.index
    return out
