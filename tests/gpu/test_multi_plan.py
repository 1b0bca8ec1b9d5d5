"""Planning a multi-device run (no GPU, no numba): devices, buffers, ranks, cross-device
events."""

from __future__ import annotations

import pytest

from swimlanes.gpu.backend_api import flag_reached
from swimlanes.gpu.device_threads import cross_device_waits
from swimlanes.gpu.errors import GpuError
from swimlanes.gpu.multi_plan import check_device_count, make_multi_plan, needs_multi
from swimlanes.gpu.plan import DeviceInfo
from swimlanes.model.validate import pipeline_from_dict

INFO = DeviceInfo("gpu", 132, 2048, 32, 8 << 30, 8 << 30)


def doc(program: list[dict], devices: int = 2) -> dict:
    names = [f"gpu{d}" for d in range(devices)]
    return pipeline_from_dict({
        "format": "swimlanes-pipeline", "version": 1, "name": "p",
        "devices": [{"name": n} for n in names],
        "communicators": [{"name": "world", "devices": names}],
        "streams": [{"name": f"s{d}", "device": n} for d, n in enumerate(names)],
        "program": program,
    })  # fmt: skip


def test_each_op_goes_to_its_devices_plan_with_per_op_buffers() -> None:
    p = doc([
        {"op": "h2d", "stream": "s1", "bytes": 4096},
        {"op": "peer_copy", "stream": "s0", "bytes": 1000, "src_device": "gpu0",
         "dst_device": "gpu1"},
        {"op": "reduce_scatter", "stream": "s0", "bytes": 4096, "communicator": "world"},
        {"op": "reduce_scatter", "stream": "s1", "bytes": 4096, "communicator": "world"},
        {"op": "host", "duration_us": 5, "device": "gpu1"},
    ])  # fmt: skip
    plan = make_multi_plan(p, [INFO, INFO])
    assert [(o.device, o.local) for o in plan.ops] == [(1, 0), (0, 0), (0, 1), (1, 1), (1, 2)]
    # gpu1 has no legacy default stream of its own: only gpu0's plan holds "default".
    assert [s.name for s in plan.plans[1].streams] == ["s1"]
    rs = plan.ops[2]
    assert (rs.rank, rs.nranks, rs.send_bytes, rs.recv_bytes, rs.count) == (0, 2, 4096, 2048, 512)
    # Per-op buffers: the copy's source on gpu0, destination on gpu1; each rank's own two.
    assert plan.extra_bytes == [1000 + 4096 + 2048, 1000 + 4096 + 2048]
    assert plan.pairs() == {(0, 1), (1, 0)}
    assert needs_multi(p)


def test_more_devices_than_the_machine_has_are_refused() -> None:
    with pytest.raises(GpuError, match="names 3 devices .* this machine has 2 GPUs"):
        check_device_count(doc([{"op": "device_sync"}], devices=3), 2)


def test_waits_on_another_devices_event_are_found() -> None:
    p = doc([
        {"op": "event_record", "stream": "s0", "event": "e"},
        {"op": "event_wait", "stream": "s1", "event": "e"},
        {"op": "event_record", "stream": "s1", "event": "e"},
        {"op": "event_wait", "stream": "s1", "event": "e"},
        {"op": "event_sync", "event": "e"},
    ])  # fmt: skip
    plan = make_multi_plan(p, [INFO, INFO])
    # op 1 waits for gpu0's record; op 3 for gpu1's own; the host sync on gpu0 for gpu1's.
    assert cross_device_waits(p, plan) == {1: 0, 4: 2}


def test_a_flag_is_reached_cyclically_as_cuda_compares() -> None:
    assert flag_reached(5, 5) and flag_reached(6, 5) and not flag_reached(4, 5)
    assert flag_reached(2, 0xFFFFFFFF)  # the counter wrapped
    assert not flag_reached(0, 1)
