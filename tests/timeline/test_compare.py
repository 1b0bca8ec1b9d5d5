"""Simulated vs measured comparison: matching, alignment, errors, flags, JSON and accuracy."""

from __future__ import annotations

import json

import numpy as np
import pytest

from swimlanes.timeline.compare import accuracy_table, compare_timelines
from swimlanes.timeline.timeline import NO_TIME, Timeline, TimelineBuilder

US = 1000
# (index, kind, stream, engine, issue_start, issue_end, start, end) in microseconds
BASE = [
    (0, "h2d", "s1", "H2D", 0, 10, 10, 1010),
    (1, "kernel", "s1", "Compute", 10, 22, 1010, 2010),
    (2, "event_record", "s1", None, 22, 24, 2010, 2010),
    (3, "d2h", "s1", "D2H", 24, 34, 2010, 3010),
    (4, "stream_sync", "s1", None, 34, 3012, None, None),
]


def build(rows, *, origin_us: int = 0, source: str = "simulated") -> Timeline:
    b = TimelineBuilder(["s1"], ["H2D", "Compute", "D2H"])
    for index, kind, stream, engine, i0, i1, s, e in rows:
        b.add(
            index=index,
            kind=kind,
            stream=stream,
            engine=engine,
            issue_start=(i0 + origin_us) * US,
            issue_end=(i1 + origin_us) * US,
            start=NO_TIME if s is None else (s + origin_us) * US,
            end=NO_TIME if e is None else (e + origin_us) * US,
            label=f"{kind} {index}",
        )
    return b.build(source=source, device="test")


def with_row(rows, index, **changes):
    names = ("index", "kind", "stream", "engine", "i0", "i1", "s", "e")
    out = []
    for row in rows:
        if row[0] == index:
            d = dict(zip(names, row, strict=True))
            d.update(changes)
            row = tuple(d[n] for n in names)
        out.append(row)
    return out


def test_identical_runs_on_different_clocks_match_exactly():
    sim = build(BASE)
    meas = build(BASE, origin_us=5_000_000, source="measured")
    cmp = compare_timelines(sim, meas)
    assert list(cmp.index) == [0, 1, 2, 3, 4]
    assert not cmp.flagged.any()
    assert np.all(cmp.start_error_ns == 0) and np.all(cmp.end_error_ns == 0)
    assert cmp.makespan_error == 0.0
    assert cmp.meas_start[0] == 10 * US  # aligned to the first host issue, not the first copy


def test_longer_kernel_is_flagged_with_signed_errors():
    meas = build(with_row(BASE, 1, e=2310), source="measured")  # kernel 1.3 ms measured
    cmp = compare_timelines(build(BASE), meas)
    r = cmp.row_of_index(1)
    assert cmp.flagged[r]
    assert cmp.end_error_ns[r] == -300 * US  # model ends it 300 us early
    assert cmp.duration_error[r] == pytest.approx((1000 - 1300) / 1300)
    assert cmp.flagged_indexes == [1]


def test_small_absolute_differences_are_not_flagged():
    # +3 us on a 1 us op is +300% but under the 5 us floor: timer noise, not a model error
    rows = with_row(BASE, 2, s=2010, e=2011)
    sim = build(rows)
    meas = build(with_row(rows, 2, e=2014), source="measured")
    cmp = compare_timelines(sim, meas)
    assert not cmp.flagged[cmp.row_of_index(2)]
    tight = compare_timelines(sim, meas, min_abs_ns=1 * US)
    assert tight.flagged[tight.row_of_index(2)]


def test_start_error_is_judged_against_the_ops_position_in_the_run():
    # D2H starts 150 us late: 5% of its 3 ms position, so the model placed it well enough
    late = build(with_row(BASE, 3, s=2160, e=3160), source="measured")
    assert not compare_timelines(build(BASE), late).flagged[3]
    # 500 us late is 14% of its position: flagged even though its duration is right
    very_late = build(with_row(BASE, 3, s=2510, e=3510), source="measured")
    cmp = compare_timelines(build(BASE), very_late)
    assert cmp.flagged[3]
    assert cmp.duration_error[3] == 0.0
    assert cmp.start_error_ns[3] == -500 * US


def test_rows_match_by_program_index_and_unmatched_are_reported():
    meas_rows = [r for r in BASE if r[0] != 2][::-1]  # event not measured, file order reversed
    cmp = compare_timelines(build(BASE), build(meas_rows, source="measured"))
    assert list(cmp.index) == [0, 1, 3, 4]
    assert cmp.only_simulated == (2,)
    assert cmp.only_measured == ()
    assert not cmp.flagged.any()


def test_host_only_ops_compare_their_host_call_span():
    meas = build(with_row(BASE, 4, i1=3500), source="measured")  # sync returned 488 us later
    cmp = compare_timelines(build(BASE), meas)
    r = cmp.row_of_index(4)
    assert not cmp.on_device[r]
    assert cmp.end_error_ns[r] == -488 * US
    assert cmp.flagged[r]


def test_json_shape_for_the_cli():
    meas = build(with_row(BASE, 1, e=2310), source="measured")
    out = compare_timelines(build(BASE), meas).to_json()
    json.dumps(out)  # plain JSON types only
    assert out["makespan_sim_us"] == 3012.0
    assert out["makespan_measured_us"] == 3012.0  # the sync ends the run in both
    assert out["makespan_error_pct"] == 0.0
    op = out["ops"][1]
    assert set(op) >= {
        "index",
        "op",
        "stream",
        "label",
        "sim_start_us",
        "sim_end_us",
        "meas_start_us",
        "meas_end_us",
        "start_error_us",
        "end_error_us",
        "duration_error_pct",
        "flagged",
    }
    assert (op["index"], op["op"], op["stream"], op["label"]) == (1, "kernel", "s1", "kernel 1")
    assert op["sim_end_us"] == 2010.0 and op["meas_end_us"] == 2310.0
    assert op["end_error_us"] == -300.0
    assert op["duration_error_pct"] == pytest.approx(-23.08)
    assert op["flagged"] is True
    assert out["engine_busy_pct"]["Compute"]["measured"] > out["engine_busy_pct"]["Compute"]["sim"]
    assert out["flagged"] == 1


def test_makespan_error_is_model_minus_measurement_over_measurement():
    meas = build(with_row(BASE, 4, i1=4012), source="measured")
    cmp = compare_timelines(build(BASE), meas)
    assert cmp.makespan_error == pytest.approx((3012 - 4012) / 4012)
    assert cmp.summary_json()["makespan_error_pct"] == pytest.approx(-24.93)


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(ValueError, match="threshold"):
        compare_timelines(build(BASE), build(BASE), threshold=0)
    with pytest.raises(ValueError, match="min_abs_ns"):
        compare_timelines(build(BASE), build(BASE), min_abs_ns=-1)


def test_accuracy_table_median_and_worst():
    table = accuracy_table([("a", 10.0, 10.0), ("b", 9.0, 10.0), ("c", 10.8, 10.0)])
    assert [round(r.error_pct, 6) for r in table.rows] == [0.0, -10.0, 8.0]
    assert table.median_abs_error_pct == pytest.approx(8.0)
    assert table.worst_abs_error_pct == pytest.approx(10.0)
    assert table.worst.example == "b"
    data = table.to_json()
    assert data["worst_example"] == "b" and data["median_abs_error_pct"] == 8.0
    md = table.to_markdown()
    assert "| b | 9.000 | 10.000 | -10.0% |" in md
    assert "Median |error| 8.0%" in md


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([], "at least one"),
        ([("x", 1.0, 0.0)], "x: measured makespan must be positive"),
        ([("y", float("nan"), 1.0)], "y: times must be finite"),
    ],
)
def test_accuracy_table_refuses_unusable_rows(rows, message):
    with pytest.raises(ValueError, match=message):
        accuracy_table(rows)


def test_errors_within_the_measured_spread_are_not_flagged():
    rows = with_row(BASE, 1, e=2310)  # kernel 300 us longer than the model
    b = TimelineBuilder(["s1"], ["H2D", "Compute", "D2H"])
    for index, kind, stream, engine, i0, i1, s, e in rows:
        noisy = 400 * US if index == 1 else 0  # but its end varied by 400 us between runs
        b.add(
            index=index,
            kind=kind,
            stream=stream,
            engine=engine,
            issue_start=i0 * US,
            issue_end=i1 * US,
            start=NO_TIME if s is None else s * US,
            end=NO_TIME if e is None else e * US,
            start_spread=0,
            end_spread=noisy,
        )
    meas = b.build(with_spread=True, source="measured")
    cmp = compare_timelines(build(BASE), meas)
    assert not cmp.flagged.any()
    assert cmp.end_error_ns[1] == -300 * US  # the error is still reported


def test_errors_of_gives_each_program_index_its_signed_errors():
    meas_rows = [r for r in BASE if r[0] != 2]  # the event record was not measured
    meas = build(with_row(meas_rows, 1, s=1110, e=2310), source="measured")
    cmp = compare_timelines(build(BASE), meas)
    start, end, dur_pct = cmp.errors_of(np.array([1, 2, 7, 4]))
    # kernel: model starts 100 us and ends 300 us early, runs 1000 us against 1200 measured
    assert (start[0], end[0]) == (-100.0, -300.0)
    assert dur_pct[0] == pytest.approx(100 * (1000 - 1200) / 1200)
    # not in both timelines, or never measured: no figure
    assert np.isnan([start[1], end[1], dur_pct[1], start[2], end[2], dur_pct[2]]).all()
    assert (start[3], end[3]) == (0.0, 0.0)  # the sync, on its host call span
    empty = compare_timelines(build(BASE), build([], source="measured"))
    assert all(np.isnan(col).all() and len(col) == 2 for col in empty.errors_of(np.array([0, 1])))
