"""The multi-device engine's rules, on hand-computed examples: collectives, peer copies, host
threads, events across devices, and the refusals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from swimlanes.engine import DevicePreset, get_preset, simulate
from swimlanes.engine.multi import MultiDeviceError
from swimlanes.model.document import Communicator, Device, Op, Pipeline, Stream
from swimlanes.timeline.timeline import NO_TIME, Timeline

US = 1000
#: The ideal GPU (no call costs or latencies) made a machine of 8, with round figures.
IDEAL8 = dataclasses.replace(
    get_preset("ideal"), name="ideal8", gpus=8, link="nvlink", link_gbps=100.0,
    link_latency_us=2.0, nccl_bus_gbps=50.0, nccl_latency_us=10.0, nccl_channels=16,
)  # fmt: skip


def machine(devices: int, program: list[Op], streams: list[Stream] | None = None,
            communicators: list[Communicator] | None = None) -> Pipeline:  # fmt: skip
    """A pipeline of ``devices`` devices with streams c<k> and m<k> on device k."""
    names = [f"gpu{k}" for k in range(devices)]
    if streams is None:
        streams = [Stream(f"{s}{k}", device=n) for k, n in enumerate(names) for s in "cm"]
    if communicators is None:
        communicators = [Communicator("world", names)]
    return Pipeline(name="multi", streams=streams, program=program,
                    devices=[Device(n) for n in names], communicators=communicators)  # fmt: skip


def kernel(stream: str, us: float, blocks: int = 1, **kw: object) -> Op:
    return Op("kernel", stream=stream, blocks=blocks, threads=1024, duration_us=us, **kw)  # type: ignore[arg-type]


def rows(tl: Timeline, kind: str) -> list[int]:
    return [r for r in range(len(tl)) if tl.op_kind(r) == kind]


def span(tl: Timeline, r: int) -> tuple[int, int]:
    return int(tl.start[r]), int(tl.end[r])


# -- (b) collectives ---------------------------------------------------------------------------------
def test_an_all_reduce_starts_when_its_last_member_is_ready_and_ends_together() -> None:
    waits = [100, 300, 50, 200]  # us of compute before each device's all_reduce
    program = [kernel(f"c{k}", us) for k, us in enumerate(waits)]
    program += [Op("all_reduce", stream=f"c{k}", communicator="world", bytes=100_000_000)
                for k in range(4)]  # fmt: skip
    tl = simulate(machine(4, program), IDEAL8)
    spans = {span(tl, r) for r in rows(tl, "all_reduce")}
    assert len(spans) == 1
    start, end = spans.pop()
    assert start == 300 * US  # the slowest member's kernel
    # latency + bytes * 2(n-1)/n / bus bandwidth: 10 us + 1e8 * 1.5 / 50 GB/s = 3,010 us
    assert end - start == 10 * US + round(100_000_000 * 1.5 / 50.0)
    assert tl.solo_ns[rows(tl, "all_reduce")[0]] == end - start


@pytest.mark.parametrize(
    ("kind", "factor"),
    [("reduce_scatter", 0.75), ("all_gather", 0.75), ("broadcast", 1.0)],
)
def test_the_ring_factor_of_each_collective(kind: str, factor: float) -> None:
    program = [Op(kind, stream=f"c{k}", communicator="world", bytes=8_000_000) for k in range(4)]
    tl = simulate(machine(4, program), IDEAL8)
    start, end = span(tl, 0)
    assert (start, end - start) == (0, 10 * US + round(8_000_000 * factor / 50.0))


def test_a_collective_of_one_device_is_a_local_copy() -> None:
    program = [Op("all_reduce", stream="c0", communicator="solo", bytes=4_000_000)]
    pipeline = machine(2, program, communicators=[Communicator("solo", ["gpu0"])])
    tl = simulate(pipeline, IDEAL8)
    # latency + 2 * bytes / memory bandwidth (ideal: 2,000 GB/s)
    assert span(tl, 0) == (0, 10 * US + round(2 * 4_000_000 / 2000.0))
    assert not len(tl.link_op)


def test_a_collective_takes_nccl_channels_sms_from_the_kernels_beside_it() -> None:
    # 128 one-block-per-SM blocks: one wave alone, two beside an all_reduce holding 16 SMs.
    big = kernel("c0", 10.0, blocks=128, extra={"blocks_per_sm": 1})
    big.duration_us, big.block_us = None, 10.0
    alone = simulate(machine(2, [big.copy()]), IDEAL8)
    assert span(alone, 0) == (0, 10 * US)
    program = [Op("all_reduce", stream=f"m{k}", communicator="world", bytes=10**9)
               for k in range(2)] + [big]  # fmt: skip
    tl = simulate(machine(2, program), IDEAL8)
    assert span(tl, 2) == (0, 20 * US)
    on0 = tl.occupancy_device == 0
    assert tl.occupancy_sms[on0].max() == 128  # 16 for NCCL + 112 for the kernel's blocks
    busy = dict(zip(tl.occupancy_time[on0].tolist(), tl.occupancy_sms[on0].tolist(), strict=True))
    assert busy[10 * US] == 16 + 16  # its second wave: the 16 blocks left
    assert busy[20 * US] == 16  # the all_reduce alone


def test_the_ring_links_are_recorded() -> None:
    program = [Op("all_reduce", stream=f"c{k}", communicator="world", bytes=1000) for k in range(4)]
    tl = simulate(machine(4, program), IDEAL8)
    assert [tl.links_of(r) for r in range(4)] == [
        ["NVLink gpu0→gpu1"],
        ["NVLink gpu1→gpu2"],
        ["NVLink gpu2→gpu3"],
        ["NVLink gpu3→gpu0"],
    ]


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (Op("all_reduce", stream="c1", communicator="world", bytes=2000), "bytes 2000 here"),
        (Op("all_gather", stream="c1", communicator="world", bytes=1000), "kind 'all_gather'"),
        (None, r"different numbers of collectives \(gpu0 1, gpu1 0\)"),
    ],
)
def test_mismatched_collectives_are_refused(second: Op | None, message: str) -> None:
    program = [Op("all_reduce", stream="c0", communicator="world", bytes=1000)]
    program += [second] if second is not None else []
    with pytest.raises(MultiDeviceError, match=message):
        simulate(machine(2, program), IDEAL8)


def test_collectives_waiting_for_each_other_are_refused_not_hung() -> None:
    # gpu0 calls A then B on one stream, gpu1 B then A: neither call can ever start.
    names = ["gpu0", "gpu1"]
    comms = [Communicator("a", names), Communicator("b", names)]
    program = [
        Op("all_reduce", stream="c0", communicator="a", bytes=1000),
        Op("all_reduce", stream="c0", communicator="b", bytes=1000),
        Op("all_reduce", stream="c1", communicator="b", bytes=1000),
        Op("all_reduce", stream="c1", communicator="a", bytes=1000),
    ]
    with pytest.raises(MultiDeviceError, match=r"program\[0\] \(all_reduce on gpu0\) never runs"):
        simulate(machine(2, program, communicators=comms), IDEAL8)


def test_more_devices_than_the_preset_has_gpus_are_refused() -> None:
    program = [kernel(f"c{k}", 1.0) for k in range(3)]
    with pytest.raises(MultiDeviceError, match="names 3 devices but the 2x-h200-nvlink preset "
                       r"has 2 GPUs.*4x-h200-nvlink"):  # fmt: skip
        simulate(machine(3, program), "2x-h200-nvlink")
    with pytest.raises(MultiDeviceError, match="h200 preset has 1 GPU"):
        simulate(machine(2, program[:2]), "h200")


def test_a_collective_longer_than_the_simulator_allows_is_refused() -> None:
    slow = dataclasses.replace(IDEAL8, nccl_bus_gbps=1e-6)
    program = [Op("all_reduce", stream=f"c{k}", communicator="world", bytes=1 << 30)
               for k in range(2)]  # fmt: skip
    with pytest.raises(MultiDeviceError, match=r"program\[0\]: this all_reduce takes .* us per op"):
        simulate(machine(2, program), slow)


def test_kernels_of_more_waves_than_the_simulator_takes_are_refused_at_once() -> None:
    # 2**31 - 1 blocks of 1024 threads: 8 million waves on 128 SMs; the fast engine's limit
    # (one pipeline, 2**20 waves) holds for several devices too instead of a minute's run.
    program = [kernel("c0", 10.0), kernel("c1", 100.0, blocks=2**31 - 1)]
    with pytest.raises(MultiDeviceError, match=r"program\[1\]\.blocks: the kernels need \d+ waves"):
        simulate(machine(2, program), IDEAL8)


# -- (c) peer copies -----------------------------------------------------------------------------------
def _peer(stream: str, src: str, dst: str, nbytes: int) -> Op:
    return Op("peer_copy", stream=stream, src_device=src, dst_device=dst, bytes=nbytes)


def test_a_peer_copy_takes_the_link_latency_plus_its_bytes_at_the_link_rate() -> None:
    tl = simulate(machine(2, [_peer("c0", "gpu0", "gpu1", 50_000_000)]), IDEAL8)
    assert span(tl, 0) == (0, 2 * US + 50_000_000 // 100)
    assert tl.engine_name(0) == "gpu0 D2H"
    assert tl.links_of(0) == ["NVLink gpu0→gpu1"]


def test_two_copies_on_one_link_share_it() -> None:
    two_engines = dataclasses.replace(IDEAL8, copy_engines_per_direction=2)
    program = [_peer("c0", "gpu0", "gpu1", 10_000_000), _peer("m0", "gpu0", "gpu1", 10_000_000)]
    tl = simulate(machine(2, program), two_engines)
    assert span(tl, 0) == span(tl, 1) == (0, 2 * US + 2 * 10_000_000 // 100)
    # With one engine per direction the second waits for the first to free the engines.
    tl = simulate(machine(2, program), IDEAL8)
    assert span(tl, 0) == (0, 102 * US)
    assert span(tl, 1) == (102 * US, 204 * US)


def test_copies_on_different_links_do_not_slow_each_other() -> None:
    program = [
        _peer("c0", "gpu0", "gpu1", 10_000_000),
        _peer("c1", "gpu1", "gpu0", 10_000_000),  # the other direction: a link of its own
        _peer("c2", "gpu2", "gpu3", 10_000_000),
    ]
    tl = simulate(machine(4, program), IDEAL8)
    assert [span(tl, r) for r in range(3)] == [(0, 102 * US)] * 3
    assert [tl.links_of(r) for r in range(3)] == [
        ["NVLink gpu0→gpu1"],
        ["NVLink gpu1→gpu0"],
        ["NVLink gpu2→gpu3"],
    ]


def test_a_peer_copy_holds_the_copy_engines_at_both_ends() -> None:
    program = [
        _peer("c0", "gpu0", "gpu1", 10_000_000),
        Op("h2d", stream="c1", bytes=25_000_000),  # gpu1's incoming engine is held
        Op("d2h", stream="m1", bytes=25_000_000),  # its outgoing one is free
    ]
    tl = simulate(machine(2, program), IDEAL8)
    assert span(tl, 1) == (102 * US, 102 * US + 1000 * US)  # ideal: 25 GB/s
    assert span(tl, 2) == (0, 1000 * US)


def test_a_peer_copy_within_one_device_is_a_d2d_copy() -> None:
    program = [_peer("c0", "gpu0", "gpu0", 8_000_000), Op("d2d", stream="m0", bytes=8_000_000)]
    tl = simulate(machine(2, program), IDEAL8)
    assert span(tl, 0)[1] - span(tl, 0)[0] == IDEAL8.copy_ns("d2d", 8_000_000)
    assert tl.engine_name(0) == "gpu0 Compute"
    assert not len(tl.link_op)


def test_peer_copies_over_pcie() -> None:
    tl = simulate(machine(2, [_peer("c0", "gpu0", "gpu1", 55_000_000)]), "2x-h200-pcie")
    pcie = get_preset("2x-h200-pcie")
    alone = pcie.link_latency_us * US + 55_000_000 / pcie.link_gbps
    assert int(tl.end[0] - tl.start[0]) == round(alone)
    assert tl.link_names == ["PCIe gpu0→gpu1"]


# -- (d) host threads, (e) events across devices ---------------------------------------------------
def test_each_device_has_its_own_host_thread() -> None:
    program = [
        Op("host", device="gpu1", duration_us=1000.0),
        kernel("c0", 5.0),  # listed after gpu1's host work, issued at once by gpu0's thread
        kernel("c1", 5.0),
    ]
    tl = simulate(machine(2, program), IDEAL8)
    assert (tl.issue_start[1], tl.start[1]) == (0, 0)
    assert tl.issue_start[2] == 1000 * US and tl.start[2] == 1000 * US
    assert tl.host_device.tolist() == [1, 0, 1]


def test_an_event_wait_on_one_device_waits_for_a_record_on_another() -> None:
    program = [
        kernel("c0", 100.0),
        Op("event_record", stream="c0", event="ready"),
        Op("event_wait", stream="c1", event="ready"),
        kernel("c1", 5.0),
        Op("event_sync", device="gpu1", event="ready"),
        Op("host", device="gpu1", duration_us=1.0),
    ]
    tl = simulate(machine(2, program), IDEAL8)
    assert tl.start[3] == 100 * US
    edges = set(zip(tl.dep_src.tolist(), tl.dep_dst.tolist(), strict=True))
    assert (1, 3) in edges  # the event edge, across devices
    assert tl.issue_end[4] == 100 * US and tl.issue_start[5] == 100 * US


# -- (f) data-parallel training: all-reduces overlap the backward pass --------------------------------
def ddp_step(devices: int = 8, layers: int = 8, per_bucket: int = 2) -> Pipeline:
    """Each device: backward kernels on its compute stream, an all_reduce per bucket of
    ``per_bucket`` layers on its comm stream after the bucket's kernels (an event), the
    optimizer kernel after every all_reduce."""
    program: list[Op] = []
    for k in range(devices):
        c, m = f"c{k}", f"m{k}"
        for layer in range(layers):
            program.append(kernel(c, 400.0, blocks=264, label=f"backward {layer}"))
            if layer % per_bucket == per_bucket - 1:
                bucket = layer // per_bucket
                program.append(Op("event_record", stream=c, event=f"grads{k}_{bucket}"))
                program.append(Op("event_wait", stream=m, event=f"grads{k}_{bucket}"))
                program.append(Op("all_reduce", stream=m, communicator="world",
                                  bytes=25 << 20, label=f"bucket {bucket}"))  # fmt: skip
        program.append(Op("event_record", stream=m, event=f"reduced{k}"))
        program.append(Op("event_wait", stream=c, event=f"reduced{k}"))
        program.append(kernel(c, 300.0, blocks=264, label="optimizer"))
    return machine(devices, program)


def test_ddp_all_reduces_overlap_the_backward_kernels() -> None:
    tl = simulate(ddp_step(), "8x-h200-nvlink")
    reduces = [r for r in rows(tl, "all_reduce")]
    by_bucket: dict[str, set[tuple[int, int]]] = {}
    for r in reduces:
        by_bucket.setdefault(tl.labels[r], set()).add(span(tl, r))
    assert all(len(spans) == 1 for spans in by_bucket.values())  # one call on all 8 devices
    backward = [r for r in rows(tl, "kernel") if tl.labels[r].startswith("backward")]
    last_backward_end = int(tl.end[backward].max())
    first = by_bucket["bucket 0"].pop()
    assert first[1] < last_backward_end  # the first bucket's all_reduce ran during backward
    optimizer = [r for r in rows(tl, "kernel") if tl.labels[r] == "optimizer"]
    last_reduce_end = int(tl.end[reduces].max())
    assert all(tl.start[r] >= last_reduce_end for r in optimizer)
    # The 8 devices' optimizer steps start together (each waits for the same last call).
    assert len({int(tl.start[r]) for r in optimizer}) == 1
    # Communication hidden behind compute: the step is shorter than compute then comm.
    serial = last_backward_end + sum(e - s for s, e in
                                     {span(tl, r) for r in reduces})  # fmt: skip
    assert tl.device_span_ns < serial


# -- progress and cancel -----------------------------------------------------------------------------
def test_progress_and_cancel_work_for_several_devices() -> None:
    from swimlanes.engine import SimulationCancelled

    pipeline = ddp_step(layers=400, per_bucket=4)
    seen: list[float] = []
    simulate(pipeline, "8x-h200-nvlink", progress=seen.append)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen) and len(seen) > 2
    with pytest.raises(SimulationCancelled):
        simulate(pipeline, "8x-h200-nvlink", cancel=lambda: True)


def test_a_single_device_pipeline_with_a_collective_uses_the_multi_device_engine() -> None:
    pipeline = Pipeline(
        name="one", program=[Op("all_reduce", communicator="solo", bytes=1000)],
        communicators=[Communicator("solo", ["gpu0"])],
    )  # fmt: skip
    tl = simulate(pipeline, "h200")
    assert tl.device_names == ["gpu0"] and tl.end[0] != NO_TIME


def test_the_reference_simulates_several_devices_too() -> None:
    from swimlanes.engine.reference import simulate_reference_with_fast_engine_ties

    pipeline = ddp_step(devices=2, layers=4)
    fast, reference = (
        simulate(pipeline, IDEAL8),
        simulate_reference_with_fast_engine_ties(pipeline, IDEAL8),
    )
    assert np.array_equal(fast.end, reference.end)


def test_preset_type_is_kept() -> None:
    assert isinstance(IDEAL8, DevicePreset)


# -- (g) a simulated multi-device timeline saves and loads ----------------------------------------------
def test_a_multi_device_timeline_round_trips_through_its_file(tmp_path) -> None:
    import json

    from swimlanes.timeline.formats.io import load_run, save_run

    pipeline = ddp_step(devices=4, layers=4)
    pipeline.program.insert(0, _peer("c0", "gpu0", "gpu3", 1_000_000))
    tl = simulate(pipeline, "4x-h200-nvlink")
    assert tl.is_multi_device and len(tl.link_op) > 0
    assert Timeline.from_dict(json.loads(json.dumps(tl.to_dict()))).to_dict() == tl.to_dict()
    save_run(tmp_path / "run.json", tl, pipeline)
    back, saved = load_run(tmp_path / "run.json")
    assert back.to_dict() == {**tl.to_dict(), "name": back.name}
    assert saved is not None and saved.device_names == pipeline.device_names
    assert back.engine_names[back.engine_device.tolist().index(3)] == "gpu3 H2D"
