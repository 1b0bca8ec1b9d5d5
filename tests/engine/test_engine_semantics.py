"""Hand-computed schedules, one per piece of CUDA semantics the engine models.

Most use the ``ideal`` preset (no API costs or latencies, 128 SMs x 2048 threads) so every
number can be worked out on paper; the others use presets whose feature is under test.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from swimlanes.engine import get_preset, simulate
from swimlanes.engine.reference import simulate_reference
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, Timeline

US = 1_000
MS = 1_000_000
IDEAL = get_preset("ideal")
FULL = 1024  # blocks of 256 threads that fill the ideal GPU exactly (128 SMs x 8)


def pipe(streams: list[Stream], *program: Op) -> Pipeline:
    return Pipeline(name="t", streams=streams, program=list(program))


def kernel(stream: str | None, ms: float = 1.0, blocks: int = 1, **kw) -> Op:
    return Op("kernel", stream=stream, blocks=blocks, threads=256, duration_us=ms * 1000, **kw)


def copy(kind: str, stream: str | None, ms: float = 1.0, **kw) -> Op:
    return Op(kind, stream=stream, bytes=1 << 20, duration_us=ms * 1000, **kw)


def span(tl: Timeline, row: int) -> tuple[int, int]:
    return int(tl.start[row]), int(tl.end[row])


def deps_of(tl: Timeline, kind: str) -> set[tuple[int, int]]:
    k = DEP_KINDS.index(kind)
    edges = zip(tl.dep_src, tl.dep_dst, tl.dep_kind, strict=True)
    return {(int(s), int(d)) for s, d, dk in edges if dk == k}


S12 = [Stream("s1"), Stream("s2")]
S01 = [Stream("s0"), Stream("s1")]


# -- 1. the host thread -----------------------------------------------------------------------
def test_host_issue_costs_and_launch_latency_delay_device_work() -> None:
    dev = replace(IDEAL, issue_cost_us={"kernel": 10.0, "h2d": 5.0}, kernel_launch_latency_us=3)
    tl = simulate(pipe(S12, copy("h2d", "s1", 0.001), kernel("s2", 0.001)), dev)
    assert (tl.issue_start[0], tl.issue_end[0]) == (0, 5 * US)
    assert (tl.issue_start[1], tl.issue_end[1]) == (5 * US, 15 * US)
    assert tl.start[0] == 5 * US  # a copy starts when its call returns
    assert tl.start[1] == 18 * US  # a kernel also waits out the launch latency


def test_host_work_busies_the_host_thread() -> None:
    tl = simulate(pipe(S12, Op("host", duration_us=300), kernel("s1")), IDEAL)
    assert (tl.issue_start[0], tl.issue_end[0]) == (0, 300 * US)
    assert tl.start[0] == NO_TIME and tl.solo_ns[0] == NO_TIME
    assert tl.start[1] == 300 * US


def test_sync_pinned_d2h_blocks_host_until_done() -> None:
    tl = simulate(pipe(S12, kernel("s1", 2), copy("d2h", "s1", 1, is_async=False)), IDEAL)
    assert span(tl, 1) == (2 * MS, 3 * MS)
    assert tl.issue_end[1] == 3 * MS


def test_pageable_d2h_blocks_host_even_when_async() -> None:
    tl = simulate(pipe(S12, copy("d2h", "s1", 1, host_memory="pageable"), kernel("s2")), IDEAL)
    assert tl.issue_end[0] == 1 * MS
    assert tl.start[1] == 1 * MS


def test_pageable_h2d_returns_once_staged_and_dma_runs_at_pageable_rate() -> None:
    nbytes = 10_000_000  # 1 ms at the ideal preset's 10 GB/s pageable rate, 0.4 ms pinned
    program = [
        Op("h2d", stream="s1", bytes=nbytes, host_memory="pageable"),
        kernel("s2", 0.5),
        Op("h2d", stream="s2", bytes=nbytes),
    ]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert tl.issue_end[0] == 1 * MS  # host staged the data at 10 GB/s
    assert span(tl, 0) == (0, 1 * MS)  # the DMA is pipelined with the staging
    assert tl.start[1] == 1 * MS  # nothing after it was issued earlier
    assert tl.end[2] - tl.start[2] == 400 * US  # pinned: 25 GB/s


def test_a_staged_pageable_h2d_dma_waits_for_its_first_chunk_then_follows_the_staging() -> None:
    # Ideal preset: pageable 10 GB/s (10,000 bytes per us), pinned 25 GB/s, no latencies.
    staged = replace(IDEAL, pageable_h2d_chunk_bytes=1_000_000)
    small = simulate(
        pipe(S12, Op("h2d", stream="s1", bytes=500_000, host_memory="pageable")), staged
    )
    assert small.issue_end[0] == 50 * US  # the host staged it all
    assert span(small, 0) == (50 * US, 70 * US)  # then one DMA at the pinned rate
    big = simulate(
        pipe(S12, Op("h2d", stream="s1", bytes=5_000_000, host_memory="pageable")), staged
    )
    assert big.issue_end[0] == 500 * US
    # The first chunk is staged after 100 us; the DMA moves it at the pinned rate (40 us) and
    # the other 4 MB as fast as the host stages them (400 us).
    assert span(big, 0) == (100 * US, 540 * US)


def test_a_chunked_pageable_d2h_returns_after_copying_out_its_last_chunk() -> None:
    staged = replace(IDEAL, pageable_d2h_chunk_bytes=1_000_000)
    p = pipe(S12, Op("d2h", stream="s1", bytes=3_000_000, host_memory="pageable"), kernel("s2"))
    tl = simulate(p, staged)
    # One chunk at the pinned rate (40 us), the other 2 MB at the copy-out rate (200 us)...
    assert span(tl, 0) == (0, 240 * US)
    # ...and the call returns once the host has copied the last chunk out (100 us more).
    assert tl.issue_end[0] == 340 * US
    assert tl.start[1] == 340 * US


def test_sync_pageable_h2d_returns_when_copied() -> None:
    tl = simulate(
        pipe(S12, kernel("s1", 2), copy("h2d", None, 1, host_memory="pageable", is_async=False)),
        IDEAL,
    )
    assert span(tl, 1) == (2 * MS, 3 * MS)  # on the legacy default stream: after s1's kernel
    assert tl.issue_end[1] == 3 * MS


def test_sync_d2d_returns_at_once() -> None:
    tl = simulate(pipe(S12, kernel("s1", 2), copy("d2d", "s1", 1, is_async=False)), IDEAL)
    assert tl.issue_end[1] == 0
    assert span(tl, 1) == (2 * MS, 3 * MS)


def test_stream_sync_event_sync_device_sync_and_free_wait_for_the_right_work() -> None:
    program = [
        kernel("s1", 1),
        Op("event_record", stream="s1", event="e"),
        kernel("s2", 3),
        kernel("s1", 1),
        Op("event_sync", event="e"),  # 4: waits for the record (1 ms), not s1's second kernel
        Op("stream_sync", stream="s1"),  # 5: waits for s1's tail (2 ms)
        Op("device_sync"),  # 6: waits for everything (3 ms)
        kernel("s1", 1),  # 7
        Op("free"),  # 8: cudaFree synchronises the device
    ]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert [int(tl.issue_end[r]) for r in (4, 5, 6)] == [1 * MS, 2 * MS, 3 * MS]
    assert tl.issue_end[8] == 4 * MS
    assert (1, 4) in deps_of(tl, "host")


def test_event_sync_on_never_recorded_event_returns_at_once() -> None:
    tl = simulate(pipe(S12, kernel("s1", 1), Op("event_sync", event="never")), IDEAL)
    assert tl.issue_end[1] == 0


# -- 2. streams and events ----------------------------------------------------------------------
def test_ops_in_one_stream_run_in_order_and_streams_overlap() -> None:
    program = [copy("h2d", "s1"), kernel("s1"), copy("d2h", "s1"), copy("h2d", "s2")]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert [span(tl, r) for r in range(3)] == [(0, MS), (MS, 2 * MS), (2 * MS, 3 * MS)]
    assert span(tl, 3) == (MS, 2 * MS)  # one H2D engine: waits for s1's copy, not for s1
    assert {(0, 1), (1, 2)} <= deps_of(tl, "stream")


def test_event_wait_orders_streams() -> None:
    program = [
        kernel("s1", 2),
        Op("event_record", stream="s1", event="e"),
        Op("event_wait", stream="s2", event="e"),
        kernel("s2", 1),
    ]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert span(tl, 1) == (2 * MS, 2 * MS)  # a record completes after prior work, no engine
    assert tl.engine[1] == -1
    assert span(tl, 3) == (2 * MS, 3 * MS)
    assert (1, 3) in deps_of(tl, "event")


def test_event_wait_on_never_recorded_event_is_a_no_op() -> None:
    program = [kernel("s1", 2), Op("event_wait", stream="s2", event="e"), kernel("s2", 1)]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert tl.start[2] == 0


def test_event_wait_uses_the_record_issued_before_it() -> None:
    program = [
        kernel("s1", 1),
        Op("event_record", stream="s1", event="e"),
        Op("event_wait", stream="s2", event="e"),
        kernel("s1", 5),
        Op("event_record", stream="s1", event="e"),  # re-recorded after the wait: ignored
        kernel("s2", 1),
    ]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert tl.start[5] == 1 * MS


def test_back_to_back_waits_each_hold_the_next_op_and_draw_their_edge_to_it() -> None:
    streams = [Stream("s1"), Stream("s2"), Stream("s3")]
    program = [
        kernel("s1", 2),
        Op("event_record", stream="s1", event="a"),
        kernel("s2", 3),
        Op("event_record", stream="s2", event="b"),
        Op("event_wait", stream="s3", event="a"),
        Op("event_wait", stream="s3", event="b"),
        kernel("s3", 1),
        Op("event_record", stream="s1", event="a"),  # after the waits: not theirs
    ]
    tl = simulate(pipe(streams, *program), IDEAL)
    assert span(tl, 6) == (3 * MS, 4 * MS)  # the later of the two records
    assert deps_of(tl, "event") == {(1, 6), (3, 6)}


def test_event_sync_waits_for_the_record_issued_before_it() -> None:
    program = [
        kernel("s1", 1),
        Op("event_record", stream="s1", event="e"),
        kernel("s2", 4),
        Op("event_record", stream="s2", event="e"),
        Op("event_sync", event="e"),
        Op("host", duration_us=1.0),
    ]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert int(tl.issue_end[4]) == 4 * MS  # the second record (s2's kernel), not the first


# -- 3. legacy default stream and implicit synchronisation --------------------------------------
@pytest.mark.parametrize(("kind", "serialised"), [("blocking", True), ("non_blocking", False)])
def test_legacy_default_stream_barrier(kind: str, serialised: bool) -> None:
    streams = [Stream("s1", kind), Stream("s2", kind)]
    program = [kernel("s1", 1), kernel(None, 1), kernel("s2", 1)]
    tl = simulate(pipe(streams, *program), IDEAL)
    if serialised:
        assert [span(tl, r) for r in range(3)] == [(0, MS), (MS, 2 * MS), (2 * MS, 3 * MS)]
        assert {(0, 1), (1, 2)} <= deps_of(tl, "default_stream")
    else:
        assert [int(tl.start[r]) for r in range(3)] == [0, 0, 0]
        assert not deps_of(tl, "default_stream")


def test_per_thread_default_stream_is_a_blocking_stream() -> None:
    streams = [Stream("ptds", "per_thread_default")]
    tl = simulate(pipe(streams, kernel("ptds", 1), kernel(None, 1)), IDEAL)
    assert tl.start[1] == 1 * MS


def test_sync_copy_without_stream_goes_to_the_legacy_default_stream() -> None:
    tl = simulate(pipe(S12, kernel("s1", 2), copy("h2d", None, 1, is_async=False)), IDEAL)
    assert tl.stream_name(1) == "default"
    assert tl.start[1] == 2 * MS


@pytest.mark.parametrize("barrier", [Op("malloc"), copy("memset", "s2", 1, is_async=False)])
def test_malloc_and_sync_memset_synchronise_the_device(barrier: Op) -> None:
    streams = [Stream("s1", "non_blocking"), Stream("s2", "non_blocking")]
    tl = simulate(pipe(streams, kernel("s1", 2), barrier, kernel("s2", 1)), IDEAL)
    if barrier.op == "memset":
        assert span(tl, 1) == (2 * MS, 3 * MS)
        assert tl.start[2] == 3 * MS
    else:
        assert tl.start[2] == 2 * MS
    assert tl.issue_end[1] == 0  # neither blocks the host


def test_async_memset_does_not_synchronise() -> None:
    streams = [Stream("s1", "non_blocking"), Stream("s2", "non_blocking")]
    tl = simulate(pipe(streams, kernel("s1", 2), copy("memset", "s2", 1)), IDEAL)
    assert tl.start[1] == 0


# -- 4./5. hardware queues ----------------------------------------------------------------------
@pytest.mark.parametrize(("connections", "k3_start"), [(1, 1 * MS), (8, 0)])
def test_streams_sharing_a_connection_get_a_false_dependency(connections, k3_start) -> None:
    dev = replace(IDEAL, connections=connections)
    program = [kernel("s1", 1), kernel("s1", 1), kernel("s2", 1)]
    tl = simulate(pipe(S12, *program), dev)
    assert tl.start[2] == k3_start
    assert ((1, 2) in deps_of(tl, "queue")) == (connections == 1)


@pytest.mark.parametrize("own_copy_queues", [False, True])
def test_copies_of_streams_sharing_a_connection_can_have_queues_of_their_own(
    own_copy_queues,
) -> None:
    dev = replace(IDEAL, connections=1, copy_queue_per_stream=own_copy_queues)
    # s1's D2H waits for its kernel; s2's H2D, issued after it, needs the idle H2D engine.
    program = [kernel("s1", 1), copy("d2h", "s1", 1), copy("h2d", "s2", 1), kernel("s2", 1)]
    tl = simulate(pipe(S12, *program), dev)
    assert span(tl, 1) == (1 * MS, 2 * MS)
    assert tl.start[2] == (0 if own_copy_queues else 1 * MS)
    # Kernels still share the connection: s2's kernel waits for the copy before it, which
    # (sharing the queue) waited behind s1's D2H, or waits for s1's kernel at the queue head.
    assert tl.start[3] >= 1 * MS


@pytest.mark.parametrize("own_copy_queues", [False, True])
def test_copies_take_the_copy_channels_round_robin_whatever_their_stream(
    own_copy_queues,
) -> None:
    streams = [Stream(f"s{k}") for k in range(6)]
    dev = replace(IDEAL, connections=0, copy_queue_per_stream=own_copy_queues, copy_channels=4)
    # s0's H2D waits for its kernel; the H2Ds of s1..s5 are ready at once. The fourth copy
    # after s0's shares its channel and waits behind it; the others run back to back.
    program = [kernel("s0", 5), copy("h2d", "s0", 1)]
    program += [copy("h2d", f"s{k}", 1) for k in range(1, 6)]
    tl = simulate(pipe(streams, *program), dev)
    assert span(tl, 1) == (5 * MS, 6 * MS)
    assert [tl.start[r] for r in (2, 3, 4, 6)] == [0, 1 * MS, 2 * MS, 3 * MS]
    assert span(tl, 5) == (6 * MS, 7 * MS)  # s4's copy: behind s0's in channel 0
    assert (1, 5) in deps_of(tl, "queue")
    # Without copy channels (as before) every ready copy runs while s0's waits.
    tl = simulate(pipe(streams, *program), replace(dev, copy_channels=0))
    assert sorted(int(tl.start[r]) for r in range(2, 7)) == [k * MS for k in range(5)]


def test_copy_channels_are_per_direction() -> None:
    streams = [Stream(f"s{k}") for k in range(5)]
    dev = replace(IDEAL, connections=0, copy_channels=1)
    # One channel per direction: s1's H2D waits behind s0's held H2D, s2's D2H does not.
    program = [kernel("s0", 5), copy("h2d", "s0", 1), copy("h2d", "s1", 1)]
    program.append(copy("d2h", "s2", 1))
    tl = simulate(pipe(streams, *program), dev)
    assert tl.start[2] == 6 * MS
    assert tl.start[3] == 0


def test_copies_of_few_streams_keep_a_copy_channel_per_stream() -> None:
    dev = replace(IDEAL, connections=0, copy_channels=4)
    # Two streams copy: each keeps a channel of its own, so s1's four H2Ds run back to back
    # while s0's waits for its kernel (round-robin would put s1's fourth behind s0's).
    program = [kernel("s0", 5), copy("h2d", "s0", 1)]
    program += [copy("h2d", "s1", 1) for _ in range(4)]
    for tl in (simulate(pipe(S01, *program), dev), simulate_reference(pipe(S01, *program), dev)):
        assert [int(tl.start[r]) for r in range(2, 6)] == [k * MS for k in range(4)]
        assert span(tl, 1) == (5 * MS, 6 * MS)
        assert not deps_of(tl, "queue")


def test_a_copy_engine_keeps_serving_the_copy_channel_it_served_last() -> None:
    streams = [Stream(f"s{k}") for k in range(5)]
    dev = replace(IDEAL, connections=0, copy_channels=4, copy_order="stream_fifo")
    # Five streams: the channels round-robin. When s0's first copy (channel 0) ends, the
    # engine takes s3's (channel 0, behind it), not s0's second (channel 1, just readied),
    # then the longest-waiting heads.
    program = [copy("h2d", "s0", 1), copy("h2d", "s0", 1), copy("h2d", "s1", 1)]
    program += [copy("h2d", "s2", 1), copy("h2d", "s3", 1), copy("h2d", "s4", 1)]
    for tl in (
        simulate(pipe(streams, *program), dev),
        simulate_reference(pipe(streams, *program), dev),
    ):
        assert [int(tl.start[r]) // MS for r in range(6)] == [0, 4, 2, 3, 1, 5]


def test_a_call_repeating_the_one_before_it_costs_its_repeat_cost() -> None:
    dev = replace(
        IDEAL,
        issue_cost_us={**IDEAL.issue_cost_us, "kernel": 40.0, "h2d": 8.0},
        repeat_issue_cost_us={"kernel": 15.0},
    )
    program = [
        kernel("s1", 0.01),
        kernel("s2", 0.01),  # the same launch on another stream: warm
        kernel("s1", 0.02),  # another kernel: cold
        copy("h2d", "s1"),
        copy("h2d", "s2"),  # no repeat cost for copies: issue_cost_us
    ]
    tl = simulate(pipe(S12, *program), dev)
    calls = (tl.issue_end - tl.issue_start).tolist()
    assert calls == [40 * US, 15 * US, 40 * US, 8 * US, 8 * US]


def test_a_host_function_starts_once_its_callback_thread_wakes() -> None:
    dev = replace(IDEAL, host_func_latency_us=150.0)
    program = [
        kernel("s1", 1),
        Op("host_func", stream="s1", duration_us=10),
        Op("host_func", stream="s2", duration_us=10),
    ]
    tl = simulate(pipe(S12, *program), dev)
    assert span(tl, 1) == (1 * MS + 150 * US, 1 * MS + 160 * US)  # after the kernel it follows
    assert span(tl, 2) == (150 * US, 160 * US)  # on an idle stream: after its call


def test_the_runs_first_host_function_waits_for_the_idle_callback_thread_to_wake() -> None:
    # Measured on H100 and H200 hosts (fidelity benchmark, training halves): a run's first host
    # function started 93 to 186 us (median per host) after it could run, later ones about
    # as calibrate's probe, with callbacks a few hundred microseconds apart, measured.
    dev = replace(IDEAL, host_func_latency_us=50.0, host_func_cold_latency_us=200.0)
    program = [
        Op("host_func", stream="s1", duration_us=10),  # wakes the thread: 200 us
        Op("host_func", stream="s2", duration_us=10),  # could start at 50: the thread wakes at 200
        kernel("s1", 1),
        Op("host_func", stream="s1", duration_us=10),  # the thread is awake: 50 us
    ]
    tl = simulate(pipe(S12, *program), dev)
    assert span(tl, 0) == (200 * US, 210 * US)
    assert span(tl, 1) == (200 * US, 210 * US)
    assert span(tl, 2) == (210 * US, 1210 * US)
    assert span(tl, 3) == (1260 * US, 1270 * US)
    cold_as_warm = simulate(pipe(S12, *program), replace(dev, host_func_cold_latency_us=0.0))
    assert span(cold_as_warm, 0) == (50 * US, 60 * US)


@pytest.mark.parametrize(("overlap", "expected_us"), [(1.0, 100), (0.5, 125), (0.0, 150)])
def test_a_roofline_kernel_hides_as_much_of_its_shorter_part_as_the_preset_says(
    overlap, expected_us
) -> None:
    # Ideal preset: 128 SMs; compute 100 us at the peak, memory traffic 50 us at memory_gbps.
    dev = replace(IDEAL, roofline_overlap=overlap)
    flops = dev.peak_tflops * 1e6 * 100  # 100 us
    nbytes = round(dev.memory_gbps * 1000 * 50)  # 50 us
    op = Op("kernel", stream="s1", blocks=FULL, threads=256, flops=flops, bytes=nbytes)
    tl = simulate(pipe(S12, op), dev)
    assert tl.end[0] - tl.start[0] == expected_us * US


def test_fermi_issue_order_breadth_first_beats_depth_first_with_one_copy_engine() -> None:
    def chunks(order: str) -> Pipeline:
        work = {s: [copy("h2d", s), kernel(s, 1, FULL), copy("d2h", s)] for s in ("s1", "s2")}
        if order == "depth":
            program = work["s1"] + work["s2"]
        else:
            program = [work[s][k] for k in range(3) for s in ("s1", "s2")]
        return pipe(S12, *program)

    c1060 = replace(get_preset("c1060"), issue_cost_us={}, kernel_launch_latency_us=0)
    depth, breadth = simulate(chunks("depth"), c1060), simulate(chunks("breadth"), c1060)
    # Depth-first: the shared copy queue holds H2D1, D2H1, H2D2, D2H2, so H2D2 waits for
    # D2H1, which waits for kernel 1: no overlap at all. Breadth-first: H2D1 0-1, H2D2 1-2
    # beside K1, K2 2-3 beside D2H1, D2H2 3-4.
    assert depth.makespan_ns == 6 * MS
    assert breadth.makespan_ns == 4 * MS
    assert (2, 3) in deps_of(depth, "queue")  # D2H1 held H2D2 back in the copy queue
    # A Hyper-Q GPU does not care about issue order here.
    k20c = replace(get_preset("k20c"), issue_cost_us={}, kernel_launch_latency_us=0)
    assert simulate(chunks("depth"), k20c).makespan_ns == 4 * MS


def test_c2050_delays_completion_of_back_to_back_kernels() -> None:
    program = [kernel("s1", 1), kernel("s2", 3), copy("d2h", "s1", 1)]
    c2050 = replace(get_preset("c2050"), issue_cost_us={}, kernel_launch_latency_us=0)
    tl = simulate(pipe(S12, *program), c2050)
    assert span(tl, 0) == (0, 1 * MS)  # the kernel itself ends on time...
    assert tl.start[2] == 3 * MS  # ...but s1's copy only sees it when the last kernel ends
    no_delay = simulate(pipe(S12, *program), replace(c2050, completion_signal_delay=False))
    assert no_delay.start[2] == 1 * MS


def test_c2050_kernel_that_depends_on_the_previous_kernel_is_not_grouped_with_it() -> None:
    # The default-stream kernel must finish before s1's kernel may start: grouping them would
    # make each wait for the other.
    c2050 = replace(get_preset("c2050"), issue_cost_us={}, kernel_launch_latency_us=0)
    tl = simulate(pipe(S12, kernel(None, 2), kernel("s1", 1), copy("d2h", None, 1)), c2050)
    assert span(tl, 1) == (2 * MS, 3 * MS)
    assert span(tl, 2) == (3 * MS, 4 * MS)


def test_pre_fermi_runs_one_kernel_at_a_time() -> None:
    c1060 = replace(get_preset("c1060"), issue_cost_us={}, kernel_launch_latency_us=0)
    tl = simulate(pipe(S12, kernel("s1", 1), kernel("s2", 1)), c1060)
    assert span(tl, 1) == (1 * MS, 2 * MS)


# -- 6. copy engines ----------------------------------------------------------------------------
# copy_order="measured" is the order one H200 host served ready copies in (2026-11-21); the
# hosts measured since served them first come first served, and calibrate says which.
MEASURED_ORDER = replace(get_preset("h200"), copy_order="measured")


def test_copy_engine_runs_one_copy_at_a_time_in_the_measured_order() -> None:
    streams = [Stream("s1"), Stream("s2"), Stream("s3")]
    h200 = MEASURED_ORDER
    program = [Op("h2d", stream=s.name, bytes=64 << 20) for s in streams]
    tl = simulate(pipe(streams, *program), h200)
    order = sorted(range(3), key=lambda r: tl.start[r])
    assert order == [0, 2, 1]  # measured on an H200: s1, s3, s2
    spans = sorted(span(tl, r) for r in range(3))
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    alone = h200.copy_ns("h2d", 64 << 20)
    assert all(tl.end[r] - tl.start[r] == alone for r in range(3))


def test_copy_engine_keeps_serving_the_same_stream() -> None:
    program = [copy("h2d", "s1", 1), copy("h2d", "s2", 1), copy("h2d", "s1", 1)]
    tl = simulate(pipe(S12, *program), MEASURED_ORDER)
    assert tl.start[2] < tl.start[1]  # s1's second copy before s2's earlier one


def test_a_fifo_copy_engine_serves_ready_copies_in_the_order_they_became_ready() -> None:
    program = [copy("h2d", "s1", 1), copy("h2d", "s2", 1), copy("h2d", "s1", 1)]
    tl = simulate(pipe(S12, *program), replace(IDEAL, copy_order="fifo"))
    assert [span(tl, r) for r in range(3)] == [(0, MS), (MS, 2 * MS), (2 * MS, 3 * MS)]


def test_a_stream_fifo_copy_engine_keeps_serving_its_stream_then_the_longest_waiting() -> None:
    # What calibrate measured on the H100 and H200 hosts of 2026-11-24 (copy_order_of).
    dev = replace(IDEAL, copy_order="stream_fifo")
    program = [copy("h2d", "s1", 1), copy("h2d", "s2", 1), copy("h2d", "s1", 1)]
    tl = simulate(pipe(S12, *program), dev)
    assert [span(tl, r) for r in range(3)] == [(0, MS), (2 * MS, 3 * MS), (MS, 2 * MS)]
    streams = [Stream("s1"), Stream("s2"), Stream("s3")]
    at_once = [Op("h2d", stream=s.name, bytes=64 << 20) for s in streams]
    tl = simulate(pipe(streams, *at_once), dev)
    assert sorted(range(3), key=lambda r: tl.start[r]) == [0, 1, 2]  # issue order


def test_h2d_and_d2h_overlap_with_the_bidirectional_slowdown(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SWIMLANES_RESOURCES", str(tmp_path))  # the built-in H200 figures
    h200 = get_preset("h200")
    size = 256 << 20
    program = [Op("h2d", stream="s1", bytes=size), Op("d2h", stream="s2", bytes=size)]
    dev = replace(h200, issue_cost_us={})
    tl = simulate(pipe(S12, *program), dev)
    alone = h200.copy_ns("h2d", size)
    assert tl.start[0] == tl.start[1] == 0
    assert tl.end[0] == pytest.approx(alone * (1 + h200.bidirectional_slowdown), abs=2)
    total_gbps = 2 * size / (tl.end[0] - tl.start[0])
    assert 95 < total_gbps < 105  # H200: ~99.5 GB/s both directions together
    assert 53 < size / alone < 57  # ~55 GB/s alone


def test_bidirectional_slowdown_applies_only_while_both_run() -> None:
    dev = replace(IDEAL, bidirectional_slowdown=1.0)  # both at once: each at half speed
    program = [copy("h2d", "s1", 2), kernel("s2", 1), copy("d2h", "s2", 2)]
    tl = simulate(pipe(S12, *program), dev)
    # 0-1 ms: H2D alone (1 ms done). 1 ms on: both at half speed; H2D's last 1 ms takes 2 ms.
    assert span(tl, 0) == (0, 3 * MS)
    # D2H: 1-3 ms at half speed (1 ms done), then 1 ms alone.
    assert span(tl, 2) == (1 * MS, 4 * MS)


def test_shared_copy_engine_serialises_both_directions() -> None:
    dev = replace(IDEAL, shared_copy_engine=True)
    tl = simulate(pipe(S12, copy("h2d", "s1"), copy("d2h", "s2")), dev)
    assert span(tl, 1) == (1 * MS, 2 * MS)
    assert tl.engine_names[: len(tl.engine_names) - 1] == ["Copy"]


def test_two_engines_per_direction_share_the_link() -> None:
    dev = replace(IDEAL, copy_engines_per_direction=2)
    tl = simulate(pipe(S12, copy("h2d", "s1", 1), copy("h2d", "s2", 1)), dev)
    assert tl.engine_names[:4] == ["H2D 1", "H2D 2", "D2H 1", "D2H 2"]
    assert {tl.engine_name(0), tl.engine_name(1)} == {"H2D 1", "H2D 2"}
    assert span(tl, 0) == span(tl, 1) == (0, 2 * MS)  # side by side at half the bandwidth each


def test_d2d_and_memset_run_on_the_sms_at_memory_bandwidth() -> None:
    tl = simulate(
        pipe(S12, Op("d2d", stream="s1", bytes=2_000_000), Op("memset", stream="s2", bytes=10**6)),
        IDEAL,
    )
    assert tl.engine_name(0) == tl.engine_name(1) == "Compute"
    assert span(tl, 0) == (0, 2 * US)  # read + write at 2000 GB/s
    assert span(tl, 1) == (0, 500)


def test_copy_time_from_bandwidth_table() -> None:
    table = {"h2d_pinned": [[1_000, 1.0], [1_000_000, 10.0]]}
    dev = replace(IDEAL, bandwidth_table=table)
    assert dev.copy_ns("h2d", 1_000) == 1_000
    assert dev.copy_ns("h2d", 1_000_000) == 100_000
    assert dev.copy_ns("h2d", 31_623) == pytest.approx(31_623 / 5.5, rel=1e-3)
    assert dev.copy_ns("d2h", 1_000_000) == 40_000  # no table: 25 GB/s


# -- 7. block scheduler -------------------------------------------------------------------------
def test_kernel_runs_in_waves_of_resident_blocks() -> None:
    # 1024 threads per block: 2 blocks per SM, 256 per wave; 600 blocks -> 3 waves.
    op = Op("kernel", stream="s1", blocks=600, threads=1024, block_us=10)
    tl = simulate(pipe(S12, op), IDEAL)
    assert span(tl, 0) == (0, 30 * US)
    assert tl.solo_ns[0] == 30 * US
    assert int(tl.occupancy_sms.max()) == 128


def test_duration_us_is_the_whole_kernel_time_alone() -> None:
    tl = simulate(pipe(S12, kernel("s1", 1, blocks=3 * FULL + 5)), IDEAL)
    assert span(tl, 0) == (0, 1 * MS)


def test_blocks_per_sm_override_limits_residency() -> None:
    op = Op("kernel", stream="s1", blocks=256, threads=32, block_us=10, extra={"blocks_per_sm": 1})
    tl = simulate(pipe(S12, op), IDEAL)
    assert span(tl, 0) == (0, 20 * US)  # 128 per wave


def test_small_kernels_share_the_gpu_and_big_ones_queue() -> None:
    program = [kernel("s1", 1, FULL // 2), kernel("s2", 1, FULL // 2)]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert tl.start[1] == 0
    program = [kernel("s1", 1, FULL), kernel("s2", 1, FULL)]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert span(tl, 1) == (1 * MS, 2 * MS)


@pytest.mark.parametrize(("priority", "high_span"), [(-1, (MS, 2 * MS)), (0, (2 * MS, 3 * MS))])
def test_higher_priority_blocks_dispatch_first_without_preemption(priority, high_span) -> None:
    streams = [Stream("low", priority=0), Stream("high", priority=priority)]
    program = [
        Op("kernel", stream="low", blocks=2 * FULL, threads=256, block_us=1000),
        Op("host", duration_us=500),
        Op("kernel", stream="high", blocks=FULL, threads=256, block_us=1000),
    ]
    tl = simulate(pipe(streams, *program), IDEAL)
    assert span(tl, 2) == high_span  # the low kernel's running wave is never preempted
    assert tl.end[0] == (3 * MS if priority < 0 else 2 * MS)


def test_priority_is_clamped_into_the_device_range() -> None:
    streams = [Stream("low", priority=0), Stream("high", priority=-100)]
    program = [
        Op("kernel", stream="low", blocks=2 * FULL, threads=256, block_us=1000),
        Op("host", duration_us=500),
        Op("kernel", stream="high", blocks=FULL, threads=256, block_us=1000),
    ]
    flat = replace(IDEAL, priority_greatest=0)  # no priorities on this device
    assert simulate(pipe(streams, *program), flat).start[2] == 2 * MS


def test_roofline_kernel_time() -> None:
    op = Op("kernel", stream="s1", blocks=1, threads=256, flops=20e9)
    assert simulate(pipe(S12, op), IDEAL).end[0] == 1 * MS  # 20 GFLOP at 20 TFLOP/s
    op = Op("kernel", stream="s1", blocks=1, threads=256, flops=1.0, bytes=4_000_000)
    assert simulate(pipe(S12, op), IDEAL).end[0] == 2 * US  # memory bound at 2000 GB/s


def test_host_func_runs_in_stream_order() -> None:
    program = [kernel("s1", 1), Op("host_func", stream="s1", duration_us=500), kernel("s1", 1)]
    tl = simulate(pipe(S12, *program), IDEAL)
    assert span(tl, 1) == (1 * MS, 1500 * US)
    assert tl.start[2] == 1500 * US


def test_copies_starting_together_against_the_other_direction_pay_the_fixed_cost_alike() -> None:
    from swimlanes.engine.reference import simulate_reference

    # Two D2H engines take two equal copies at one instant while an H2D runs: each pays the
    # fixed cost of running against the other direction at the speed they share (the
    # reference used to charge the first of the two at the speed it had alone for a moment).
    dev = replace(IDEAL, copy_engines_per_direction=2, bidirectional_overhead_us=0.5)
    streams = [Stream("s0"), Stream("s1"), Stream("s2")]
    program = [Op("h2d", stream="s0", bytes=1 << 20), Op("d2h", stream="s1", bytes=1 << 20),
               Op("d2h", stream="s2", bytes=1 << 20)]  # fmt: skip
    fast = simulate(pipe(streams, *program), dev)
    reference = simulate_reference(pipe(streams, *program), dev)
    assert fast.start[1] == fast.start[2] and fast.end[1] == fast.end[2]
    for col in ("start", "end"):
        assert getattr(reference, col).tolist() == getattr(fast, col).tolist()
