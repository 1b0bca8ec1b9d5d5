"""The simulate() contract: result shape, textbook schedules, progress and cancel."""

from __future__ import annotations

import pytest

from swimlanes.engine import SimulationCancelled, get_preset, simulate
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.timeline.timeline import NO_TIME

MS = 1_000_000
FULL = 1024  # blocks of 256 threads that fill the ideal GPU in one wave


def chunked(chunks: int, streams: int) -> Pipeline:
    """Whole data: H2D 30 ms, kernel 20 ms, D2H 30 ms; chunks issued depth-first."""
    names = [f"s{k + 1}" for k in range(streams)]
    program = []
    for c in range(chunks):
        s = names[c % streams]
        program += [
            Op("h2d", stream=s, bytes=1 << 20, duration_us=30_000 / chunks),
            Op("kernel", stream=s, blocks=FULL, threads=256, duration_us=20_000 / chunks),
            Op("d2h", stream=s, bytes=1 << 20, duration_us=30_000 / chunks),
        ]
    return Pipeline(name="chunked", streams=[Stream(n) for n in names], program=program)


@pytest.mark.parametrize(
    ("chunks", "streams", "makespan_ms"),
    [(4, 1, 80), (2, 2, 55), (4, 2, 47.5), (4, 4, 42.5), (8, 4, 36.25)],
)
def test_chunked_overlap_textbook_figures(chunks: int, streams: int, makespan_ms: float) -> None:
    tl = simulate(chunked(chunks, streams), "ideal")
    assert tl.makespan_ns == round(makespan_ms * MS)
    assert tl.meta["serial_ns"] == 80 * MS


def test_two_streams_unit_exercise() -> None:
    tl = simulate(chunked(2, 2), "ideal")  # same shape, units of 15/10/15 ms
    unit = Pipeline(
        name="two streams",
        streams=[Stream("s1"), Stream("s2")],
        program=[
            Op(k, stream=s, bytes=1 << 20, duration_us=1000)
            if k != "kernel"
            else Op(k, stream=s, blocks=FULL, threads=256, duration_us=1000)
            for s in ("s1", "s2")
            for k in ("h2d", "kernel", "d2h")
        ],
    )
    tl = simulate(unit, "ideal")
    assert tl.makespan_ns == 4 * MS
    assert tl.meta["serial_ns"] == 6 * MS


def test_timeline_shape_and_metadata() -> None:
    program = [
        Op("h2d", stream="s1", bytes=1 << 20),
        Op("kernel", stream="s1", blocks=10, threads=128, duration_us=50, label="K"),
        Op("event_record", stream="s1", event="e"),
        Op("event_sync", event="e"),
        Op("host", duration_us=10),
    ]
    pipeline = Pipeline(name="shape", streams=[Stream("s1")], program=program)
    tl = simulate(pipeline, "h200")
    assert (tl.source, tl.device, tl.name) == ("simulated", "h200", "shape")
    assert list(tl.index) == [0, 1, 2, 3, 4]
    assert tl.labels[1] == "K"
    assert tl.stream_names[:2] == ["default", "s1"]
    assert tl.engine_names == ["H2D", "D2H", "Compute"]
    assert [tl.engine_name(r) for r in range(5)] == ["H2D", "Compute", None, None, None]
    assert tl.start[3] == tl.end[3] == NO_TIME and tl.solo_ns[3] == NO_TIME
    assert tl.start[2] == tl.end[2] == tl.end[1]  # zero-length record
    assert tl.meta == {
        "preset": "h200",
        "serial_ns": int(tl.solo_ns[0] + tl.solo_ns[1]),
        "connections": 8,
    }
    assert tl.sm_count == 132 and tl.occupancy_sms.max() == 10
    # The event sync returns when the driver has seen the record complete.
    assert tl.issue_end[3] == tl.end[2] + get_preset("h200").sync_return_ns("event_sync")


def test_accepts_a_preset_object() -> None:
    p = chunked(2, 2)
    assert simulate(p, get_preset("ideal")).to_dict() == simulate(p, "ideal").to_dict()


def test_empty_pipeline() -> None:
    tl = simulate(Pipeline(name="empty"), "ideal")
    assert len(tl) == 0 and tl.makespan_ns == 0


def test_unknown_stream_is_a_clear_error() -> None:
    pipeline = Pipeline(program=[Op("kernel", stream="ghost", blocks=1, threads=1, block_us=1)])
    with pytest.raises(ValueError, match=r"program\[0\].stream: .*'ghost'"):
        simulate(pipeline, "ideal")


def _big(n: int) -> Pipeline:
    program = [
        Op("kernel", stream=f"s{k % 4}", blocks=1, threads=32, duration_us=1.0) for k in range(n)
    ]
    return Pipeline(name="big", streams=[Stream(f"s{k}") for k in range(4)], program=program)


def test_progress_is_reported_sparingly_and_ends_at_one() -> None:
    seen: list[float] = []
    simulate(_big(50_000), "h200", progress=seen.append)
    assert 2 <= len(seen) <= 101
    assert seen == sorted(seen) and seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen)


def test_cancel_stops_the_simulation() -> None:
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(SimulationCancelled):
        simulate(_big(50_000), "h200", cancel=cancel)
