"""Two timelines matched op by op: before/after, two designs, two devices."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from swimlanes.engine import get_preset, simulate
from swimlanes.model.document import Op
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_path, measurements_dir
from swimlanes.timeline.diff import diff_json, diff_timelines
from swimlanes.timeline.formats.io import load_run
from swimlanes.timeline.timeline import NO_TIME


def _sim(name: str, device: str = "h200"):
    return simulate(load_pipeline(example_path(name)), get_preset(device))


def test_one_pipeline_on_two_devices_matches_by_index() -> None:
    a, b = _sim("chunked-overlap", "h200"), _sim("chunked-overlap", "ideal")
    d = diff_timelines(a, b)
    assert d.matched_by == "index" and len(d.rows_a) == len(a)
    assert len(d.only_a) == 0 and len(d.only_b) == 0
    assert d.makespan_delta_ns == b.makespan_ns - a.makespan_ns < 0
    start, duration = d.deltas()
    last = int(np.flatnonzero(d.rows_a == len(a) - 2)[0])  # the last D2H
    sa, ea = d.spans("a")
    sb, eb = d.spans("b")
    assert start[last] == sb[last] - sa[last]
    assert duration[last] == (eb[last] - sb[last]) - (ea[last] - sa[last])


def test_a_timeline_against_itself_has_no_deltas() -> None:
    tl, _ = load_run(measurements_dir() / "event-dependency.h200.json")
    d = diff_timelines(tl, tl)
    start, duration = d.deltas()
    have = start != NO_TIME
    assert have.any() and (start[have] == 0).all() and (duration[have] == 0).all()
    assert d.makespan_delta_ns == 0


def test_reordered_programs_pair_ops_by_label() -> None:
    a, b = _sim("breadth-vs-depth"), _sim("chunked-overlap")
    d = diff_timelines(a, b)
    assert d.matched_by == "label"
    pairs = zip(d.rows_a.tolist(), d.rows_b.tolist(), strict=True)
    assert all(a.labels[i] == b.labels[j] for i, j in pairs)
    assert len(d.rows_a) == len(a) == len(b)


def test_an_op_only_one_side_has_is_listed() -> None:
    pipeline = load_pipeline(example_path("two-streams"))
    more = copy.deepcopy(pipeline)
    more.program.insert(1, Op("kernel", stream=pipeline.streams[0].name, label="extra",
                              blocks=1, threads=32, duration_us=50.0))  # fmt: skip
    a, b = simulate(pipeline, get_preset("h200")), simulate(more, get_preset("h200"))
    d = diff_timelines(a, b)
    assert d.matched_by == "label"
    out = diff_json(d)
    assert out["only_in_b"] == [1] and out["only_in_a"] == []
    assert out["makespan_delta_us"] == pytest.approx(
        (b.makespan_ns - a.makespan_ns) / 1000, abs=1e-3
    )


def test_stream_matching_pairs_the_kth_op_of_a_kind_per_stream() -> None:
    a = _sim("two-streams")
    b = a.copy()
    b.labels = [""] * len(b)  # a profiler trace without useful names
    d = diff_timelines(a, b, "stream")
    assert np.array_equal(d.rows_a, d.rows_b)
    with pytest.raises(ValueError, match="match must be one of"):
        diff_timelines(a, b, "name")


def test_the_json_has_both_sides_and_every_matched_op() -> None:
    a, b = _sim("chunked-overlap", "h200"), _sim("chunked-overlap", "ideal")
    out = diff_json(diff_timelines(a, b))
    assert out["a"]["device"] == "h200" and out["b"]["device"] == "ideal"
    assert len(out["ops"]) == len(a)
    op = out["ops"][0]
    assert set(op) >= {"a_index", "b_index", "op", "start_delta_us", "duration_delta_us"}
    assert out["makespan_delta_pct"] < 0
