"""The device and host timing figures a calibrated preset adds to the ideal model: how late
blocking calls return, kernel overhead, launch and dependency latencies, the copy engine's rest,
per-direction bidirectional copy costs and the host's gap between calls; and fitting them back
from a run (engine.fit)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from swimlanes.engine import get_preset, simulate
from swimlanes.engine.fit import fit_timing
from swimlanes.engine.presets import DevicePreset
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.timeline.timeline import Timeline

IDEAL = get_preset("ideal")
US = 1000
MS = 1_000_000
S12 = [Stream("s1"), Stream("s2")]


def pipe(*program: Op, streams: list[Stream] = S12) -> Pipeline:
    return Pipeline(name="t", streams=streams, program=list(program))


def kernel(stream: str, ms: float = 1.0) -> Op:
    return Op("kernel", stream=stream, blocks=1, threads=256, duration_us=ms * 1000)


def copy(kind: str, stream: str | None, ms: float = 1.0, **kw) -> Op:
    return Op(kind, stream=stream, bytes=1 << 20, duration_us=ms * 1000, **kw)


def span(tl: Timeline, row: int) -> tuple[int, int]:
    return int(tl.start[row]), int(tl.end[row])


# -- host side ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("wait", "key"),
    [
        (Op("stream_sync", stream="s1"), "stream_sync"),
        (Op("event_sync", event="e"), "event_sync"),
        (Op("device_sync"), "device_sync"),
        (Op("free"), "device_sync"),
    ],
)
def test_blocking_calls_return_their_lag_after_the_work_is_done(wait: Op, key: str) -> None:
    dev = replace(IDEAL, sync_return_us={key: 3.0})
    tl = simulate(pipe(kernel("s1"), Op("event_record", stream="s1", event="e"), wait), dev)
    assert tl.issue_end[2] == MS + 3 * US


def test_a_synchronous_copy_returns_its_lag_after_the_copy() -> None:
    dev = replace(IDEAL, sync_return_us={"sync_copy": 4.0})
    tl = simulate(pipe(copy("d2h", "s1", is_async=False), kernel("s1")), dev)
    assert tl.issue_end[0] == MS + 4 * US
    assert tl.issue_start[1] == tl.issue_end[0]


def test_a_wait_for_work_done_long_ago_returns_as_its_call_ends() -> None:
    dev = replace(IDEAL, sync_return_us={"stream_sync": 3.0})
    program = [kernel("s1"), Op("host", duration_us=2000), Op("stream_sync", stream="s1")]
    tl = simulate(pipe(*program), dev)
    assert tl.issue_end[2] == tl.issue_start[2] == 2 * MS


def test_the_host_pays_its_gap_between_calls_but_not_before_the_first() -> None:
    dev = replace(IDEAL, host_call_gap_us=0.5, issue_cost_us={"kernel": 10.0})
    tl = simulate(pipe(kernel("s1"), kernel("s1"), kernel("s2")), dev)
    assert list(tl.issue_start) == [0, 10_500, 21_000]
    assert list(tl.issue_end) == [10_000, 20_500, 31_000]


# -- device side ----------------------------------------------------------------------------------
def test_kernel_overhead_lengthens_each_kernel_once_not_per_wave() -> None:
    dev = replace(IDEAL, kernel_overhead_us=0.5)
    waves = Op("kernel", stream="s1", blocks=3 * 1024, threads=256, block_us=100)
    tl = simulate(pipe(waves, kernel("s1")), dev)
    assert span(tl, 0) == (0, 300 * US + 500)
    assert tl.solo_ns[0] == 300 * US + 500
    assert span(tl, 1) == (300 * US + 500, 300 * US + 500 + MS + 500)


def test_copies_and_kernels_start_their_launch_latency_after_the_call() -> None:
    dev = replace(IDEAL, copy_launch_latency_us=2.0, kernel_launch_latency_us=3.0)
    tl = simulate(pipe(copy("h2d", "s1"), kernel("s2")), dev)
    assert tl.start[0] == 2 * US and tl.start[1] == 3 * US


def test_a_dependency_on_another_engine_costs_the_dependency_latency() -> None:
    dev = replace(IDEAL, dependency_latency_us=7.0, kernel_dependency_latency_us=1.0)
    tl = simulate(pipe(copy("h2d", "s1"), kernel("s1"), kernel("s1"), copy("d2h", "s1")), dev)
    assert tl.start[1] == tl.end[0] + 7 * US  # H2D -> SMs
    assert tl.start[2] == tl.end[1] + 1 * US  # kernel -> kernel
    assert tl.start[3] == tl.end[2] + 7 * US  # SMs -> D2H


def test_an_event_chain_costs_one_latency_from_the_engine_that_released_it() -> None:
    dev = replace(IDEAL, dependency_latency_us=7.0, kernel_dependency_latency_us=1.0)
    program = [
        kernel("s1"),
        Op("event_record", stream="s1", event="e"),
        Op("event_wait", stream="s2", event="e"),
        kernel("s2"),
        Op("event_wait", stream="s2", event="e"),
        copy("d2h", "s2"),
    ]
    tl = simulate(pipe(*program), dev)
    assert tl.start[3] == MS + 1 * US  # SMs -> SMs through the event
    assert tl.start[5] == tl.end[3] + 7 * US


def test_the_ideal_preset_has_none_of_these_figures() -> None:
    for key in ("kernel_overhead_us", "dependency_latency_us", "kernel_dependency_latency_us",
                "copy_launch_latency_us", "copy_engine_gap_us", "host_call_gap_us",
                "bidirectional_overhead_us", "bidirectional_rest_us"):  # fmt: skip
        assert getattr(IDEAL, key) == 0.0, key
    assert IDEAL.sync_return_us == {} and IDEAL.bidirectional_slowdown_d2h is None


def test_a_copy_engine_rests_between_copies_and_keeps_its_order() -> None:
    dev = replace(get_preset("h200"), issue_cost_us={}, repeat_issue_cost_us={},
                  host_call_gap_us=0.0, copy_launch_latency_us=0.0, copy_engine_gap_us=2.0,
                  copy_order="measured")  # fmt: skip
    program = [copy("h2d", "s1"), copy("h2d", "s2"), copy("h2d", "s1")]
    tl = simulate(pipe(*program), dev)
    assert span(tl, 2) == (MS + 2 * US, 2 * MS + 2 * US)  # s1's second copy first, as measured
    assert span(tl, 1) == (2 * MS + 4 * US, 3 * MS + 4 * US)


def test_bidirectional_costs_per_direction() -> None:
    dev = replace(IDEAL, bidirectional_slowdown=0.05, bidirectional_slowdown_d2h=0.1,
                  bidirectional_overhead_us=1.0, bidirectional_overhead_d2h_us=3.0,
                  bidirectional_rest_d2h_us=5.0)  # fmt: skip
    program = [copy("h2d", "s1", 2), copy("d2h", "s2", 1), copy("d2h", "s2", 1)]
    tl = simulate(pipe(*program), dev)
    # Both from 0: the D2H at 1/1.1 speed plus its fixed 3 us, then the engine rests 5 us.
    d2h_end = round(1.1 * MS) + 3 * US
    assert span(tl, 1) == (0, d2h_end)
    assert tl.start[2] == d2h_end + 5 * US
    # The H2D ran against D2H copies for all but the 5 us rest: 1.05x plus its 1 us.
    assert tl.end[0] == pytest.approx(5 * US + (2 * MS - 5 * US) * 1.05 + US, abs=2)


def test_preset_files_keep_the_timing_figures(tmp_path) -> None:
    h200 = get_preset("h200")
    again = DevicePreset.from_dict(h200.to_dict())
    assert again == h200
    data = h200.to_dict() | {"bidirectional_slowdown_d2h": None, "sync_return_us": {}}
    assert DevicePreset.from_dict(data).bidirectional_slowdown_d2h is None


# -- fitting --------------------------------------------------------------------------------------
def test_fit_timing_recovers_the_figures_a_run_was_made_with() -> None:
    truth = replace(
        get_preset("h200"),
        host_call_gap_us=0.2,
        copy_launch_latency_us=1.5,
        dependency_latency_us=6.0,
        kernel_dependency_latency_us=1.2,
        copy_engine_gap_us=1.8,
        bidirectional_slowdown=0.05,
        bidirectional_slowdown_d2h=0.09,
        bidirectional_overhead_us=0.7,
        bidirectional_overhead_d2h_us=3.0,
        bidirectional_rest_us=0.0,
        bidirectional_rest_d2h_us=5.0,
    )
    runs = [(p, simulate(p, truth)) for p in _fit_pipelines()]
    fitted = fit_timing(runs, truth)
    for key, value in fitted.items():
        assert value == pytest.approx(getattr(truth, key), abs=0.002), key
    assert set(fitted) >= {"dependency_latency_us", "copy_engine_gap_us",
                           "bidirectional_slowdown_d2h", "bidirectional_rest_d2h_us"}  # fmt: skip


def _fit_pipelines() -> list[Pipeline]:
    mb4, mb64 = 4 << 20, 64 << 20
    chain: list[Op] = []
    for _ in range(6):
        chain += [Op("h2d", stream="a", bytes=mb4), kernel("a", 0.05), kernel("a", 0.05)]
        chain += [Op("d2h", stream="a", bytes=mb4), Op("stream_sync", stream="a")]
    chain += [Op("h2d", stream="a", bytes=mb4) for _ in range(4)] + [Op("device_sync")]
    both: list[Op] = []
    for size in (mb4, mb64):
        both += [Op("h2d", stream="a", bytes=size) for _ in range(6)]
        both += [Op("d2h", stream="b", bytes=size) for _ in range(6)]
        both.append(Op("device_sync"))
    streams = [Stream("a", kind="non_blocking"), Stream("b", kind="non_blocking")]
    return [pipe(*chain, streams=streams), pipe(*both, streams=streams)]
