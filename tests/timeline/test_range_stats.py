"""Figures of a time range (the chart ruler's table) on a hand-built timeline."""

from __future__ import annotations

import pytest

from swimlanes.timeline import Timeline, TimelineBuilder, compute_metrics
from swimlanes.timeline.range_stats import range_stats


def pipeline_timeline(t0: int = 0) -> Timeline:
    """Times in ns (plus ``t0``): H2D [10,110] then kernel [110,210] then D2H [210,310] on s1;
    H2D [110,210] then kernel [210,260] on s2; host work [260,300]."""
    b = TimelineBuilder(["s1", "s2"], ["H2D", "compute", "D2H"])
    add = b.add
    add(index=0, kind="h2d", stream="s1", engine="H2D", issue_start=t0, issue_end=t0 + 10,
        start=t0 + 10, end=t0 + 110, nbytes=1000)  # fmt: skip
    add(index=1, kind="kernel", stream="s1", engine="compute", issue_start=t0 + 10,
        issue_end=t0 + 20, start=t0 + 110, end=t0 + 210)  # fmt: skip
    add(index=2, kind="h2d", stream="s2", engine="H2D", issue_start=t0 + 20, issue_end=t0 + 30,
        start=t0 + 110, end=t0 + 210)  # fmt: skip
    add(index=3, kind="kernel", stream="s2", engine="compute", issue_start=t0 + 30,
        issue_end=t0 + 40, start=t0 + 210, end=t0 + 260)  # fmt: skip
    add(index=4, kind="host", stream=None, engine=None, issue_start=t0 + 260, issue_end=t0 + 300)
    add(index=5, kind="d2h", stream="s1", engine="D2H", issue_start=t0 + 40, issue_end=t0 + 50,
        start=t0 + 210, end=t0 + 310)  # fmt: skip
    return b.build(source="simulated", device="h200")


def busy(stats, kind: str, name: str) -> tuple[int, float]:
    lane = next(x for x in stats.lanes if (x.kind, x.name) == (kind, name))
    return lane.busy_ns, lane.busy_pct


def test_busy_time_per_lane_is_clipped_to_the_range() -> None:
    s = range_stats(pipeline_timeline(), 100, 220)
    assert s.span_ns == 120
    assert busy(s, "host", "Host") == (0, 0.0)  # the host only issues before 50 and after 260
    assert busy(s, "stream", "s1") == (120, 100.0)  # copy tail, kernel, start of D2H
    assert busy(s, "stream", "s2")[0] == 110
    assert busy(s, "stream", "s2")[1] == pytest.approx(100 * 110 / 120)
    assert busy(s, "engine", "H2D")[0] == 110
    assert busy(s, "engine", "compute")[0] == 110
    assert busy(s, "engine", "D2H")[0] == 10


def test_overlaps_and_op_counts_in_a_range() -> None:
    s = range_stats(pipeline_timeline(), 100, 220)
    assert s.device_busy_ns == 120
    assert s.engines_overlap_ns == 110  # H2D with compute 110-210, compute with D2H 210-220
    assert s.copy_ns == 120 and s.compute_ns == 110
    assert s.copy_compute_overlap_ns == 110
    assert s.op_counts == {"h2d": 2, "kernel": 2, "d2h": 1}
    assert s.pct(s.copy_compute_overlap_ns) == pytest.approx(100 * 110 / 120)


def test_host_work_counts_by_its_call_and_the_range_may_be_reversed() -> None:
    s = range_stats(pipeline_timeline(), 320, 250)
    assert (s.start_ns, s.end_ns) == (250, 320)
    assert busy(s, "host", "Host")[0] == 40  # host work 260-300
    assert s.op_counts == {"kernel": 1, "d2h": 1, "host": 1}
    assert s.copy_compute_overlap_ns == 10  # kernel until 260 beside the D2H


def test_absolute_times_and_the_whole_run_agree_with_the_metrics() -> None:
    tl = pipeline_timeline(t0=1_700_000_000_000_000_000)  # epoch ns, like measured runs
    whole = range_stats(tl, tl.t0, tl.t0 + tl.makespan_ns)
    m = compute_metrics(tl)
    for name, ns in m.engine_busy_ns.items():
        assert busy(whole, "engine", name)[0] == ns
    for name, ns in m.stream_busy_ns.items():
        assert busy(whole, "stream", name)[0] == ns
    assert whole.copy_compute_overlap_ns == m.compute_copy_overlap_ns
    assert whole.engines_overlap_ns == m.overlap_ns
    assert busy(whole, "host", "Host")[0] == m.host_busy_ns


def test_an_empty_range_has_nothing() -> None:
    s = range_stats(pipeline_timeline(), 400, 500)
    assert s.device_busy_ns == 0 and s.op_counts == {} and s.pct(0) == 0.0
    assert all(lane.busy_ns == 0 for lane in s.lanes)
