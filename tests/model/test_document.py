"""Defaults of streams and ops, and what the document derives from them."""

from __future__ import annotations

from swimlanes.model import DEFAULT_STREAM, Op, Pipeline, Stream, pipeline_from_dict


def _load(program: list[dict], streams: list[dict] | None = None) -> Pipeline:
    doc = {
        "format": "swimlanes-pipeline",
        "version": 1,
        "streams": streams or [],
        "program": program,
    }
    return pipeline_from_dict(doc)


def test_stream_defaults_are_a_blocking_stream_of_normal_priority() -> None:
    pipeline = _load([], [{"name": "s1"}])
    assert pipeline.streams == [Stream("s1", "blocking", 0)]
    assert pipeline.name == "untitled"


def test_legacy_default_stream_is_always_present_and_first() -> None:
    pipeline = _load([], [{"name": "s1"}])
    assert [(s.name, s.kind) for s in pipeline.all_streams] == [
        (DEFAULT_STREAM, "legacy_default"),
        ("s1", "blocking"),
    ]
    assert pipeline.stream(DEFAULT_STREAM) is not None
    assert pipeline.stream("nope") is None
    # Declaring it explicitly does not add a second one.
    declared = _load([], [{"name": "default", "kind": "legacy_default"}, {"name": "s1"}])
    assert [s.name for s in declared.all_streams] == ["default", "s1"]


def test_stream_ops_without_a_stream_go_to_the_legacy_default_stream() -> None:
    pipeline = _load(
        [
            {"op": "h2d", "bytes": 8},
            {"op": "memset", "bytes": 8},
            {"op": "kernel", "blocks": 1, "threads": 32, "block_us": 1},
            {"op": "event_record", "event": "e"},
            {"op": "device_sync"},
            {"op": "host", "duration_us": 3},
        ]
    )
    assert [op.stream_name for op in pipeline.program] == [
        "default",
        "default",
        "default",
        "default",
        None,
        None,
    ]


def test_copies_default_to_async_and_pinned() -> None:
    op = _load([{"op": "h2d", "bytes": 8}]).program[0]
    assert (op.is_async, op.host_memory) == (None, None)
    assert op.effective_async is True
    assert op.effective_host_memory == "pinned"
    sync = _load([{"op": "d2h", "bytes": 8, "async": False, "host_memory": "pageable"}])
    assert sync.program[0].effective_async is False
    assert sync.program[0].effective_host_memory == "pageable"


def test_display_label_prefers_the_label_then_names_the_kind() -> None:
    assert Op("h2d", bytes=8, label="H2D A").display_label == "H2D A"
    assert Op("d2h", bytes=8).display_label == "D2H"
    assert Op("event_wait", event="ready A").display_label == "event wait ready A"
    assert Op("device_sync").display_label == "device sync"


def test_op_copy_gets_a_fresh_identity_but_equal_content() -> None:
    op = Op("kernel", stream="s1", blocks=2, threads=64, duration_us=5.0, extra={"k": [1]})
    dup = op.copy()
    assert dup == op
    assert dup.uid != op.uid
    dup.extra["k2"] = 1
    assert "k2" not in op.extra


def test_events_are_listed_in_order_of_first_use() -> None:
    pipeline = _load(
        [
            {"op": "event_record", "event": "b"},
            {"op": "event_wait", "event": "a"},
            {"op": "event_sync", "event": "b"},
        ]
    )
    assert pipeline.events() == ["b", "a"]


def test_op_index_finds_ops_by_identity() -> None:
    pipeline = _load([{"op": "device_sync"}, {"op": "device_sync"}])
    second = pipeline.program[1]
    assert pipeline.op_index(second.uid) == 1
    assert pipeline.program[0] == second  # equal content, different identity


def test_async_key_is_saved_under_its_file_name() -> None:
    op = Op("h2d", bytes=8, is_async=False)
    assert op.to_dict() == {"op": "h2d", "bytes": 8, "async": False}
