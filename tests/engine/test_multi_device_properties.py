"""Random multi-device pipelines with peer copies and collectives: the multi-device engine
always ends (a schedule, or a refusal naming an op that can never run), and its schedule
keeps the rules' invariants."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_multi_device_oracle import combined

from swimlanes.engine import get_preset, simulate
from swimlanes.engine.multi import MultiDeviceError
from swimlanes.engine.reference import simulate_reference
from swimlanes.model.document import COLLECTIVE_OPS, Communicator, Op, Pipeline
from swimlanes.model.validate import validate
from swimlanes.timeline.timeline import NO_TIME, Timeline

PRESET = dataclasses.replace(get_preset("4x-h200-nvlink"), copy_engines_per_direction=2)


@st.composite
def interacting(draw: st.DrawFn) -> Pipeline:
    """Independent devices' programs with peer copies and collectives inserted: each device
    makes the communicator's calls in the same order, on streams of its choice."""
    pipeline, parts = draw(combined(most=4))
    n = len(parts)
    names = pipeline.device_names
    streams = {d: [s.name for s in pipeline.streams if s.device == d] for d in names}
    program = list(pipeline.program)
    for _ in range(draw(st.integers(0, 4))):  # peer copies, anywhere
        src, dst = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        on = draw(st.sampled_from(streams[draw(st.sampled_from([src, dst]))]))
        at = draw(st.integers(0, len(program)))
        program.insert(at, Op("peer_copy", stream=on, src_device=src, dst_device=dst,
                              bytes=draw(st.sampled_from([1 << 10, 1 << 20, 1 << 24]))))  # fmt: skip
    calls = [(draw(st.sampled_from(COLLECTIVE_OPS)), draw(st.sampled_from([1 << 12, 1 << 22])))
             for _ in range(draw(st.integers(0, 3)))]  # fmt: skip
    for d in names:  # each device's calls in order, at increasing places
        places = sorted(draw(st.lists(st.integers(0, len(program)), min_size=len(calls),
                                      max_size=len(calls))))  # fmt: skip
        for shift, ((kind, nbytes), at) in enumerate(zip(calls, places, strict=True)):
            on = draw(st.sampled_from(streams[d]))
            program.insert(at + shift, Op(kind, stream=on, communicator="world", bytes=nbytes))
    out = dataclasses.replace(pipeline, program=program,
                              communicators=[Communicator("world", names[:n])])  # fmt: skip
    assert validate(out) == [], validate(out)
    return out


def check_invariants(pipeline: Pipeline, tl: Timeline) -> None:
    enqueued = tl.solo_ns != NO_TIME
    assert (tl.issue_end != NO_TIME).all()
    assert (tl.start[enqueued] != NO_TIME).all() and (tl.end[enqueued] >= tl.start[enqueued]).all()
    collectives = [r for r in range(len(tl)) if tl.op_kind(r) in COLLECTIVE_OPS]
    calls: dict[tuple[int, int], list[int]] = {}
    for device in range(len(tl.device_names)):
        mine = [r for r in collectives if tl.host_device[r] == device]
        for k, r in enumerate(mine):
            calls.setdefault((k, 0), []).append(r)
    for rows in calls.values():
        assert len({(int(tl.start[r]), int(tl.end[r])) for r in rows}) == 1
        assert int(tl.start[rows[0]]) >= max(int(tl.issue_end[r]) for r in rows)
        assert int(tl.end[rows[0]] - tl.start[rows[0]]) == int(tl.solo_ns[rows[0]])
    for r in range(len(tl)):
        op = pipeline.program[int(tl.index[r])]
        if op.op == "peer_copy" and op.src_device != op.dst_device:
            assert int(tl.end[r] - tl.start[r]) >= int(tl.solo_ns[r])  # sharing only slows
            assert str(tl.engine_name(r)).startswith(f"{op.src_device} D2H")  # "D2H 1", ...
            assert tl.links_of(r) == [f"NVLink {op.src_device}→{op.dst_device}"]
    for device in range(len(tl.device_names)):  # each host thread's calls in order
        rows = np.flatnonzero(tl.host_device == device)
        assert (np.diff(tl.issue_end[rows]) >= 0).all()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipeline=interacting())
def test_interacting_devices_end_with_a_schedule_or_a_refusal(pipeline: Pipeline) -> None:
    outcomes = []
    for run in (lambda: simulate(pipeline, PRESET), lambda: simulate_reference(pipeline, PRESET)):
        try:
            tl = run()
        except MultiDeviceError as err:
            assert "never runs" in str(err)
            outcomes.append("refused")
        else:
            check_invariants(pipeline, tl)
            outcomes.append("ran")
    assert outcomes[0] == outcomes[1]  # waiting for each other does not depend on tie order
    kinds = {op.op for op in pipeline.program}
    event(f"{outcomes[0]}, collectives: {bool(kinds & set(COLLECTIVE_OPS))}")
