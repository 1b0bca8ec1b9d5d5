"""Hypothesis strategies: small random valid pipelines for the engine's property tests."""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from swimlanes.engine import DevicePreset, get_preset, preset_names
from swimlanes.engine.preset_model import FITTED_CALL_COSTS
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.model.validate import validate

EVENTS = ("e0", "e1", "e2")
_STREAM_KINDS = ("blocking", "blocking", "non_blocking", "per_thread_default")


@st.composite
def streams(draw: st.DrawFn) -> list[Stream]:
    n = draw(st.integers(1, 4))
    return [
        Stream(
            f"s{k}",
            kind=draw(st.sampled_from(_STREAM_KINDS)),
            priority=draw(st.integers(-3, 0)),
        )
        for k in range(n)
    ]


@st.composite
def ops(draw: st.DrawFn, stream_names: list[str]) -> Op:
    """One op of any kind with plausible parameters (None stream: the legacy default)."""
    on = st.sampled_from([None, *stream_names])
    kind = draw(
        st.sampled_from(
            [
                "h2d",
                "d2h",
                "h2d",
                "d2h",
                "kernel",
                "kernel",
                "kernel",
                "d2d",
                "memset",
                "event_record",
                "event_wait",
                "event_sync",
                "stream_sync",
                "device_sync",
                "host",
                "host_func",
                "malloc",
                "free",
            ]
        )  # fmt: skip
    )
    if kind in ("h2d", "d2h"):
        return Op(
            kind,
            stream=draw(on),
            bytes=draw(st.integers(1 << 10, 1 << 26)),
            host_memory=draw(st.sampled_from(["pinned", "pinned", "pageable"])),
            is_async=draw(st.sampled_from([True, True, False])),
        )
    if kind in ("d2d", "memset"):
        return Op(
            kind,
            stream=draw(on),
            bytes=draw(st.integers(1 << 10, 1 << 28)),
            is_async=draw(st.sampled_from([True, True, False])),
        )
    if kind == "kernel":
        timing = draw(st.sampled_from(["duration_us", "block_us", "flops"]))
        op = Op(
            kind,
            stream=draw(on),
            blocks=draw(st.integers(1, 3000)),
            threads=draw(st.sampled_from([32, 128, 256, 512, 1024])),
        )
        value = draw(st.floats(1.0, 2000.0))
        if timing == "flops":
            op.flops = value * 1e9
        else:
            setattr(op, timing, value if timing == "duration_us" else value / 20.0)
        return op
    if kind in ("event_record", "event_wait"):
        return Op(kind, stream=draw(on), event=draw(st.sampled_from(EVENTS)))
    if kind == "event_sync":
        return Op(kind, event=draw(st.sampled_from(EVENTS)))
    if kind == "stream_sync":
        return Op(kind, stream=draw(on))
    if kind == "host":
        return Op(kind, duration_us=draw(st.floats(0.0, 500.0)))
    if kind == "host_func":
        return Op(kind, stream=draw(on), duration_us=draw(st.floats(1.0, 200.0)))
    return Op(kind)


@st.composite
def pipelines(draw: st.DrawFn, max_ops: int = 24) -> Pipeline:
    """A valid pipeline of 1..``max_ops`` ops over 1..4 declared streams."""
    declared = draw(streams())
    names = [s.name for s in declared]
    program = draw(st.lists(ops(names), min_size=1, max_size=max_ops))
    pipeline = Pipeline(name="random", streams=declared, program=program)
    assert validate(pipeline) == [], validate(pipeline)
    return pipeline


# -- Bigger and stranger pipelines (the reference simulator's differential tests) ---------------
# Many streams (more than a preset's hardware connections), explicit legacy default streams,
# and quantities drawn from a few values, so that ops tie: copies of equal size, kernels of
# equal time, several ops released at one instant.
_SIZES = (1 << 10, 1 << 20, 3 << 20, 1 << 22, 1 << 24)
_TIMES_US = (0.5, 1.0, 5.0, 10.0, 40.0)


@st.composite
def many_streams(draw: st.DrawFn) -> list[Stream]:
    """1..12 streams of any kind and priority (beyond a preset's range: it clamps them),
    sometimes with the legacy default stream declared among them."""
    n = draw(st.integers(1, 12))
    declared = [
        Stream(
            f"s{k}",
            kind=draw(st.sampled_from(_STREAM_KINDS)),
            priority=draw(st.integers(-7, 1)),
        )
        for k in range(n)
    ]
    if draw(st.booleans()):
        at = draw(st.integers(0, n))
        declared.insert(at, Stream("default", "legacy_default", draw(st.integers(-2, 0))))
    return declared


@st.composite
def tied_ops(draw: st.DrawFn, stream_names: list[str]) -> Op:
    """One op of any kind whose sizes and times come from a few values (ties are common)."""
    on = st.sampled_from([None, *stream_names])
    kind = draw(
        st.sampled_from(
            ["h2d", "d2h", "h2d", "d2h", "kernel", "kernel", "kernel", "kernel", "d2d", "memset",
             "event_record", "event_record", "event_wait", "event_wait", "event_sync",
             "stream_sync", "device_sync", "host", "host_func", "malloc", "free"]
        )
    )  # fmt: skip
    time_us = st.sampled_from(_TIMES_US)
    if kind in ("h2d", "d2h", "d2d", "memset"):
        op = Op(
            kind,
            stream=draw(on),
            bytes=draw(st.sampled_from(_SIZES)),
            is_async=draw(st.sampled_from([True, True, True, False])),
        )
        if kind in ("h2d", "d2h"):
            op.host_memory = draw(st.sampled_from([None, "pinned", "pageable"]))
        if draw(st.integers(0, 4)) == 0:
            op.duration_us = draw(time_us)
        return op
    if kind == "kernel":
        op = Op(
            kind,
            stream=draw(on),
            blocks=draw(st.sampled_from([1, 2, 64, 132, 264, 1000, 4000])),
            threads=draw(st.sampled_from([64, 256, 1024])),
        )
        timing = draw(st.sampled_from(["duration_us", "block_us", "flops"]))
        if timing == "flops":
            op.flops = draw(st.sampled_from([1e6, 1e9, 1e11]))
            op.bytes = draw(st.sampled_from([None, *_SIZES]))
        else:
            setattr(op, timing, draw(time_us))
        if draw(st.integers(0, 5)) == 0:
            op.extra = {"blocks_per_sm": draw(st.integers(1, 4))}
        return op
    if kind in ("event_record", "event_wait"):
        return Op(kind, stream=draw(on), event=draw(st.sampled_from(EVENTS)))
    if kind == "event_sync":
        return Op(kind, event=draw(st.sampled_from(EVENTS)))
    if kind == "stream_sync":
        return Op(kind, stream=draw(on))
    if kind == "host":
        return Op(kind, duration_us=draw(st.sampled_from([0.0, *_TIMES_US])))
    if kind == "host_func":
        return Op(kind, stream=draw(on), duration_us=draw(time_us))
    return Op(kind)


@st.composite
def wide_pipelines(draw: st.DrawFn, max_ops: int = 40) -> Pipeline:
    """A valid pipeline of 1..``max_ops`` tie-prone ops over 1..12 streams."""
    declared = draw(many_streams())
    names = [s.name for s in declared if s.name != "default"]
    program = draw(st.lists(tied_ops(names), min_size=1, max_size=max_ops))
    pipeline = Pipeline(name="random-wide", streams=declared, program=program)
    assert validate(pipeline) == [], validate(pipeline)
    return pipeline


@st.composite
def device_presets(draw: st.DrawFn) -> DevicePreset:
    """A built-in preset with its queue, copy-engine, latency and scheduler figures redrawn:
    the combinations no built-in preset has (Fermi queues with several copy engines, shared
    engines with a slowdown, one resident kernel on a Hyper-Q GPU ...)."""
    base = get_preset(draw(st.sampled_from(preset_names())))
    us = st.sampled_from([0.0, 0.0, 0.5, 2.0, 7.0])
    queues = draw(st.sampled_from(["hyperq", "hyperq", "fermi"]))
    changes: dict = {
        "hardware_queues": queues,
        "connections": draw(st.integers(0 if queues == "hyperq" else 1, 4)),
        "copy_queue_per_stream": queues == "hyperq" and draw(st.booleans()),
        "copy_channels": draw(st.sampled_from([0, 0, 1, 2, 4])),
        "queue_choice": draw(st.sampled_from(["stream", "free"])),
        "call_cost_factors": draw(st.sampled_from([{}, FITTED_CALL_COSTS["call_cost_factors"]])),
        "copy_engines_per_direction": draw(st.integers(1, 2)),
        "shared_copy_engine": draw(st.booleans()),
        "copy_order": draw(st.sampled_from(["measured", "fifo", "stream_fifo"])),
        "roofline_startup_us": draw(st.sampled_from([0.0, 3.0])),
        "roofline_tail_efficiency": draw(st.sampled_from([1.0, 0.6])),
        "bidirectional_slowdown": draw(st.sampled_from([0.0, 0.1, 0.5])),
        "bidirectional_slowdown_d2h": draw(st.sampled_from([None, 0.0, 0.3])),
        "bidirectional_overhead_us": draw(us),
        "bidirectional_rest_us": draw(us),
        "max_resident_kernels": draw(st.sampled_from([1, 2, 4, 128])),
        "completion_signal_delay": draw(st.booleans()),
        "pageable_h2d_chunk_bytes": draw(st.sampled_from([0, 1 << 20])),
        "pageable_d2h_chunk_bytes": draw(st.sampled_from([0, 1 << 21])),
        "sync_return_us": draw(
            st.sampled_from(
                [{}, {"stream_sync": 3.0, "sync_copy": 6.0, "device_sync": 1.0, "event_sync": 2.0}]
            )
        ),
    }
    for name in (
        "kernel_launch_latency_us", "copy_launch_latency_us", "host_func_latency_us",
        "host_func_cold_latency_us",
        "kernel_overhead_us", "dependency_latency_us", "kernel_dependency_latency_us",
        "copy_engine_gap_us", "host_call_gap_us",
    ):  # fmt: skip
        changes[name] = draw(us)
    return dataclasses.replace(base, name=f"{base.name}-redrawn", **changes)
