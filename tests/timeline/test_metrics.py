"""Schedule metrics on hand-computed timelines, and the interval helpers against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swimlanes.timeline import NO_TIME, Metrics, Timeline, TimelineBuilder, compute_metrics
from swimlanes.timeline.metrics import (
    covered_at_least,
    covered_before,
    interval_union,
    metrics_json,
    overlap_length,
    union_length,
)


def two_stream_timeline() -> Timeline:
    """H2D/kernel/D2H on s1 beside H2D/kernel on s2, plus host work; times in ns.

    Engines: H2D [10,210], compute [110,260], D2H [210,310]; host issues [0,50] and [260,300].
    """
    b = TimelineBuilder(["s1", "s2"], ["H2D", "compute", "D2H"])
    add = b.add
    add(index=0, kind="h2d", stream="s1", engine="H2D", issue_start=0, issue_end=10,
        start=10, end=110, nbytes=1000)  # fmt: skip
    add(index=1, kind="kernel", stream="s1", engine="compute", issue_start=10, issue_end=20,
        start=110, end=210)  # fmt: skip
    add(index=2, kind="h2d", stream="s2", engine="H2D", issue_start=20, issue_end=30,
        start=110, end=210)  # fmt: skip
    add(index=3, kind="kernel", stream="s2", engine="compute", issue_start=30, issue_end=40,
        start=210, end=260, solo_ns=40)  # fmt: skip
    add(index=4, kind="host", stream=None, engine=None, issue_start=260, issue_end=300)
    add(index=5, kind="d2h", stream="s1", engine="D2H", issue_start=40, issue_end=50,
        start=210, end=310)  # fmt: skip
    return b.build(source="simulated", device="h200")


def test_hand_computed_metrics() -> None:
    m = compute_metrics(two_stream_timeline())
    assert m.makespan_ns == 310
    # solo_ns where given (40 for the shared kernel), else the device span.
    assert m.serial_ns == 100 + 100 + 100 + 40 + 100
    assert m.speedup == pytest.approx(440 / 310)
    assert m.engine_busy_ns == {"H2D": 200, "compute": 150, "D2H": 100}
    assert m.engine_busy_pct["H2D"] == pytest.approx(100 * 200 / 310)
    assert m.stream_busy_ns == {"s1": 300, "s2": 150}
    assert m.overlap_ns == 100 + 50  # H2D+compute, then compute+D2H
    assert m.overlap_pct == pytest.approx(100 * 150 / 310)
    assert m.compute_copy_overlap_ns == 150
    assert m.gpu_idle_ns == 10
    assert m.host_busy_ns == 50 + 40
    # Only [0, 10): the host is issuing the first copy and nothing runs on the device.
    assert m.gpu_waiting_on_host_ns == 10
    assert m.device_ops == 5


def test_sync_ops_with_device_spans_are_not_engine_work() -> None:
    b = TimelineBuilder(["s"], ["compute"])
    b.add(index=0, kind="kernel", stream="s", engine="compute", issue_start=0, issue_end=1,
          start=1, end=11)  # fmt: skip
    b.add(index=1, kind="stream_sync", stream="s", engine=None, issue_start=2, issue_end=11,
          start=2, end=11)  # fmt: skip
    m = compute_metrics(b.build(source="measured"))
    assert m.serial_ns == 10
    assert m.stream_busy_ns == {"s": 10}
    assert m.device_ops == 1


def test_empty_timeline_gives_zeros() -> None:
    m = compute_metrics(Timeline())
    assert isinstance(m, Metrics)
    assert (m.makespan_ns, m.serial_ns, m.speedup, m.overlap_ns) == (0, 0, 0.0, 0)
    assert m.engine_busy_ns == {} and m.gpu_waiting_on_host_ns == 0


def test_metrics_json_uses_microseconds() -> None:
    b = TimelineBuilder(["s"], ["compute"])
    b.add(index=0, kind="kernel", stream="s", engine="compute", issue_start=0,
          issue_end=1_000, start=2_000, end=1_502_000)  # fmt: skip
    out = metrics_json(compute_metrics(b.build()))
    assert out["makespan_us"] == 1502.0
    assert out["serial_us"] == 1500.0
    assert out["engine_busy_us"] == {"compute": 1500.0}
    assert out["gpu_waiting_on_host_us"] == 1.0
    assert out["gpu_idle_us"] == 2.0
    assert set(out) >= {"speedup", "overlap_us", "overlap_pct", "host_busy_us", "stream_busy_us"}


def test_interval_union_merges_and_drops_empty() -> None:
    s, e = interval_union(np.array([5, 0, 2, 20, 30, 9]), np.array([8, 3, 4, 25, 30, 12]))
    assert s.tolist() == [0, 5, 9, 20]
    assert e.tolist() == [4, 8, 12, 25]
    s, e = interval_union(np.array([0, 10]), np.array([10, 20]))  # touching: one interval
    assert (s.tolist(), e.tolist()) == ([0], [20])


intervals = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 15)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=12,
)


def _cover(ivs: list[tuple[int, int]]) -> np.ndarray:
    grid = np.zeros(80, dtype=np.int64)
    for a, b in ivs:
        grid[a:b] = 1
    return grid


def _arr(ivs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([a for a, _ in ivs], np.int64), np.array([b for _, b in ivs], np.int64))


@settings(max_examples=150, deadline=None)
@given(intervals, intervals, intervals)
def test_interval_helpers_match_brute_force(a: list, b: list, c: list) -> None:
    ca, cb, cc = _cover(a), _cover(b), _cover(c)
    assert union_length(*_arr(a)) == ca.sum()
    assert overlap_length(_arr(a), _arr(b)) == (ca & cb).sum()
    assert covered_at_least([_arr(a), _arr(b), _arr(c)], 2) == ((ca + cb + cc) >= 2).sum()
    assert covered_at_least([_arr(a), _arr(b), _arr(c)], 3) == ((ca + cb + cc) >= 3).sum()


def test_no_time_solo_falls_back_to_span() -> None:
    tl = two_stream_timeline()
    tl.solo_ns[:] = NO_TIME
    assert compute_metrics(tl).serial_ns == 100 + 100 + 100 + 50 + 100


def test_large_timeline_is_vectorised() -> None:
    # 50k ops on 4 engines through the vectorised path; totals must still add up exactly.
    n = 50_000
    rng = np.random.default_rng(1)
    start = np.sort(rng.integers(0, 10**9, n))
    tl = Timeline(
        index=np.arange(n), kind=np.full(n, 4, np.int8), stream=(np.arange(n) % 8).astype(np.int16),
        engine=(np.arange(n) % 4).astype(np.int16), issue_start=start - 100, issue_end=start - 50,
        start=start, end=start + 1000, solo_ns=np.full(n, NO_TIME), bytes=np.zeros(n, np.int64),
        labels=[""] * n, stream_names=[f"s{i}" for i in range(8)],
        engine_names=["a", "b", "c", "d"],
    )  # fmt: skip
    m = compute_metrics(tl)
    assert m.serial_ns == n * 1000
    assert sum(m.stream_busy_ns.values()) >= m.engine_busy_ns["a"]


def test_covered_before_counts_the_union_up_to_each_time() -> None:
    union = interval_union(np.array([0, 5, 20]), np.array([10, 12, 30]))  # [0,12) and [20,30)
    times = np.array([-1, 0, 6, 12, 15, 25, 40])
    assert covered_before(union, times).tolist() == [0, 0, 6, 12, 12, 17, 22]
    empty = interval_union(np.array([], np.int64), np.array([], np.int64))
    assert covered_before(empty, times).tolist() == [0] * 7
