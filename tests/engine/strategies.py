"""Hypothesis strategies: small random valid pipelines for the engine's property tests."""

from __future__ import annotations

from hypothesis import strategies as st

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
