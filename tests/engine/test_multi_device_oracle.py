"""The multi-device engine against the fast engine: devices that never interact (no peer
copies, collectives or events across devices) each get exactly the schedule that the fast
engine gives their part of the program alone, whatever the other devices do and however
the host program interleaves their calls."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import device_presets, pipelines, wide_pipelines

from swimlanes.engine import DevicePreset, simulate
from swimlanes.engine.presets import multi_preset_names
from swimlanes.model.document import HOST_OPS, Device, Op, Pipeline, Stream
from swimlanes.model.validate import validate
from swimlanes.timeline.timeline import DEP_KINDS, Timeline

_MULTI = {"gpus": 8, "link": "nvlink", "link_gbps": 100.0, "nccl_bus_gbps": 80.0,
          "nccl_latency_us": 10.0, "nccl_channels": 4}  # fmt: skip


def _own(op: Op, k: int) -> Op:
    """``op`` of device ``k``'s part, in the combined pipeline: its streams, events and host
    thread are the device's own."""
    op = op.copy()
    if op.event is not None:
        op.event = f"d{k}_{op.event}"
    if op.op in HOST_OPS:
        op.device = f"gpu{k}"
    elif op.stream_name == "default":
        op.stream = f"d{k}_default" if k else None
    elif op.stream is not None:
        op.stream = f"d{k}_{op.stream}"
    return op


def _streams(part: Pipeline, k: int) -> list[Stream]:
    out = []
    for s in part.all_streams:
        if s.name == "default":
            if k:  # the first device's is the implicit one; the others declare theirs
                out.append(Stream(f"d{k}_default", "legacy_default", s.priority, f"gpu{k}"))
            elif s in part.streams:
                out.append(Stream("default", s.kind, s.priority, "gpu0"))
        else:
            out.append(Stream(f"d{k}_{s.name}", s.kind, s.priority, f"gpu{k}"))
    return out


@st.composite
def combined(draw: st.DrawFn, wide: bool = False, most: int = 4) -> tuple[Pipeline, list[Pipeline]]:
    """2..``most`` independent pipelines, and one pipeline of that many devices doing all of
    them, their calls interleaved at random (each device's in its own order)."""
    parts = [draw(wide_pipelines(max_ops=16) if wide else pipelines(max_ops=12))
             for _ in range(draw(st.integers(2, most)))]  # fmt: skip
    order = draw(st.permutations([k for k, p in enumerate(parts) for _ in p.program]))
    taken = [0] * len(parts)
    program = []
    for k in order:
        program.append(_own(parts[k].program[taken[k]], k))
        taken[k] += 1
    streams = [s for k, part in enumerate(parts) for s in _streams(part, k)]
    devices = [Device(f"gpu{k}") for k in range(len(parts))]
    pipeline = Pipeline(name="combined", streams=streams, program=program, devices=devices)
    assert validate(pipeline) == [], validate(pipeline)
    return pipeline, parts


def _edges(tl: Timeline, rows: np.ndarray) -> list[tuple[int, int, str]]:
    """The edges among ``rows`` (renumbered in their order)."""
    at = {int(r): k for k, r in enumerate(rows)}
    return sorted(
        (at[s], at[d], DEP_KINDS[k])
        for s, d, k in zip(tl.dep_src.tolist(), tl.dep_dst.tolist(), tl.dep_kind.tolist(),
                           strict=True)
        if s in at and d in at
    )  # fmt: skip


def assert_device_is_alone(multi: Timeline, k: int, alone: Timeline) -> None:
    rows = np.flatnonzero(multi.host_device == k)
    for col in ("kind", "issue_start", "issue_end", "start", "end", "solo_ns", "bytes"):
        assert getattr(multi, col)[rows].tolist() == getattr(alone, col).tolist(), (k, col)
    engines = [multi.engine_name(int(r)) for r in rows]
    assert engines == [None if e is None else f"gpu{k} {e}" for e in map(alone.engine_name,
                       range(len(alone)))], k  # fmt: skip
    streams = [multi.stream_name(int(r)) for r in rows]
    expected = [s if s is None or (s == "default" and not k) else f"d{k}_{s}"
                for s in map(alone.stream_name, range(len(alone)))]  # fmt: skip
    assert streams == expected, k
    assert _edges(multi, rows) == _edges(alone, np.arange(len(alone))), k
    occ = multi.occupancy_device == k
    assert multi.occupancy_time[occ].tolist() == alone.occupancy_time.tolist(), k
    assert multi.occupancy_sms[occ].tolist() == alone.occupancy_sms.tolist(), k
    assert not len(multi.link_op)


def check(case: tuple[Pipeline, list[Pipeline]], preset: DevicePreset | str) -> None:
    pipeline, parts = case
    multi = simulate(pipeline, preset)
    assert multi.device_names == [f"gpu{k}" for k in range(len(parts))]
    for k, part in enumerate(parts):
        assert_device_is_alone(multi, k, simulate(part, preset))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), preset=st.sampled_from(multi_preset_names()))
def test_independent_devices_on_the_multi_gpu_presets(data: st.DataObject, preset: str) -> None:
    check(data.draw(combined(most=int(preset[0]) if preset[0] == "2" else 4)), preset)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=combined(wide=True))
def test_independent_wide_devices_with_ties(case: tuple[Pipeline, list[Pipeline]]) -> None:
    check(case, "4x-h200-nvlink")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=combined(), base=device_presets())
def test_independent_devices_on_redrawn_presets(case, base: DevicePreset) -> None:
    """Every single-GPU model (Fermi queues, shared copy engines, latencies, signal delays)
    made a machine of several GPUs."""
    check(case, dataclasses.replace(base, **_MULTI))
