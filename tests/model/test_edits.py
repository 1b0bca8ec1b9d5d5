"""Undo-able edits: each applies, reverts to the exact document, and refuses invalid results."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swimlanes.model import Op, Pipeline, Stream, validate
from swimlanes.model.edits import (
    AddStream,
    Edit,
    EditError,
    InsertOps,
    MoveOps,
    RemoveOps,
    RemoveStream,
    RenameStream,
    ReorderStreams,
    SetOpFields,
    SetStreamFields,
    move_index_for_insertion,
    move_stream,
    new_op,
)
from swimlanes.model.validate import pipeline_from_dict

MIB = 1024 * 1024


def two_streams() -> Pipeline:
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": "two",
            "streams": [{"name": "s1"}, {"name": "s2", "kind": "non_blocking", "priority": -1}],
            "program": [
                {"op": "h2d", "stream": "s1", "bytes": 64 * MIB, "label": "A_in"},
                {"op": "kernel", "stream": "s1", "label": "K0", "blocks": 4096, "threads": 256,
                 "duration_us": 370},
                {"op": "event_record", "stream": "s1", "event": "e0"},
                {"op": "event_wait", "stream": "s2", "event": "e0"},
                {"op": "d2h", "stream": "s2", "bytes": 64 * MIB, "host_memory": "pageable"},
                {"op": "device_sync"},
            ],
        }
    )  # fmt: skip


def labels(p: Pipeline) -> list[str]:
    return [op.display_label for op in p.program]


def roundtrip(p: Pipeline, edit: Edit) -> dict:
    """Apply then revert; returns the applied document and checks revert restores exactly."""
    before = p.to_dict()
    edit.apply(p)
    after = p.to_dict()
    assert validate(p) == []
    edit.revert(p)
    assert p.to_dict() == before
    edit.apply(p)  # redo gives the same result again
    assert p.to_dict() == after
    return after


def test_insert_ops_at_index_and_revert() -> None:
    p = two_streams()
    k = Op("kernel", stream="s2", label="K1", blocks=8, threads=128, block_us=5.0)
    after = roundtrip(p, InsertOps(1, [k]))
    assert [o["op"] for o in after["program"]][:3] == ["h2d", "kernel", "kernel"]
    assert after["program"][1]["label"] == "K1"
    assert InsertOps(0, [Op("host", duration_us=1)]).text == "Insert host"


def test_insert_refuses_an_invalid_op_and_leaves_the_document() -> None:
    p = two_streams()
    before = p.to_dict()
    bad = Op("kernel", stream="s1", blocks=8, threads=4096, duration_us=1.0)
    with pytest.raises(EditError, match=r"#0\): threads must be at most 1024"):
        InsertOps(0, [bad]).apply(p)
    assert p.to_dict() == before
    with pytest.raises(EditError, match="names no declared stream"):
        InsertOps(0, [Op("h2d", stream="nope", bytes=1)]).apply(p)
    assert p.to_dict() == before


def test_remove_ops_restores_positions() -> None:
    p = two_streams()
    uids = [p.program[0].uid, p.program[3].uid, p.program[5].uid]
    edit = RemoveOps(uids)
    after = roundtrip(p, edit)
    assert [o["op"] for o in after["program"]] == ["kernel", "event_record", "d2h"]
    assert edit.text == "Delete 3 ops"


def test_move_ops_within_and_between_lanes() -> None:
    p = two_streams()
    k0 = p.program[1]
    after = roundtrip(p, MoveOps([k0.uid], 4, stream="s2"))
    assert [o.get("label", o["op"]) for o in after["program"]] == [
        "A_in", "event_record", "event_wait", "d2h", "K0", "device_sync",
    ]  # fmt: skip
    assert after["program"][4]["stream"] == "s2"


def test_move_keeps_host_ops_on_the_host() -> None:
    p = two_streams()
    sync, h2d = p.program[5], p.program[0]
    MoveOps([h2d.uid, sync.uid], 0, stream="s2").apply(p)
    assert sync.stream is None and h2d.stream == "s2"
    assert labels(p)[:2] == ["A_in", "device sync"]


def test_move_index_for_insertion_counts_only_ops_that_stay() -> None:
    p = two_streams()
    uids = [p.program[0].uid, p.program[1].uid]
    index = move_index_for_insertion(p, uids, 4)  # drop between rows 3 and 4
    MoveOps(uids, index).apply(p)
    assert labels(p) == ["event record e0", "event wait e0", "A_in", "K0", "D2H", "device sync"]


def test_merged_drag_is_one_step() -> None:
    p = two_streams()
    before = p.to_dict()
    uid = p.program[0].uid
    first = MoveOps([uid], 1, gesture=7)
    first.apply(p)
    second = MoveOps([uid], 3, stream="s2", gesture=7)
    second.apply(p)
    assert first.merge(second)
    assert not first.merge(MoveOps([uid], 2, gesture=8))  # another drag is another step
    final = p.to_dict()
    first.revert(p)
    assert p.to_dict() == before
    first.apply(p)
    assert p.to_dict() == final


def test_set_op_fields_and_merge_while_typing() -> None:
    p = two_streams()
    uid = p.program[1].uid
    e1 = SetOpFields(uid, {"duration_us": 10.0})
    e1.apply(p)
    assert e1.text == "Set K0 duration"
    e2 = SetOpFields(uid, {"duration_us": 100.0})
    e2.apply(p)
    assert e1.merge(e2)
    assert not e1.merge(SetOpFields(uid, {"blocks": 2}))
    assert p.program[1].duration_us == 100.0
    e1.revert(p)
    assert p.program[1].duration_us == 370


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"bytes": -5}, "bytes must be a positive integer"),
        ({"threads": 2048}, "threads must be at most 1024"),
        ({"block_us": 3.0}, "exactly one of block_us"),
        ({"stream": "ghost"}, "names no declared stream"),
        ({"host_memory": "pinned"}, "only h2d and d2h"),
    ],
)
def test_set_op_fields_refuses_bad_values(changes: dict, message: str) -> None:
    p = two_streams()
    before = p.to_dict()
    with pytest.raises(EditError, match=message):
        SetOpFields(p.program[1].uid, changes).apply(p)
    assert p.to_dict() == before


def test_retype_converts_fields_sanely() -> None:
    p = two_streams()
    k0 = p.program[1]
    after = roundtrip(p, SetOpFields(k0.uid, {"op": "d2h"}))
    assert after["program"][1] == {"op": "d2h", "stream": "s1", "label": "K0", "bytes": 64 * MIB}
    SetOpFields(k0.uid, {"op": "d2h"}).apply(p)
    SetOpFields(k0.uid, {"op": "kernel"}).apply(p)
    assert (k0.blocks, k0.threads, k0.duration_us, k0.bytes) == (1024, 256, 100.0, None)
    SetOpFields(k0.uid, {"op": "event_wait"}).apply(p)
    assert k0.event == "e0"  # the most recently recorded event
    SetOpFields(k0.uid, {"op": "device_sync"}).apply(p)
    assert k0.stream is None and k0.event is None and validate(p) == []
    h2d = p.program[0]
    SetOpFields(h2d.uid, {"op": "event_record"}).apply(p)
    assert h2d.event == "e1"


def test_streams_add_rename_retype_priority_reorder_remove() -> None:
    after = roundtrip(two_streams(), AddStream(Stream("s3", "non_blocking", 2)))
    assert after["streams"][-1] == {"name": "s3", "kind": "non_blocking", "priority": 2}
    after = roundtrip(two_streams(), RenameStream("s1", "copy"))
    assert after["streams"][0]["name"] == "copy"
    assert [o.get("stream") for o in after["program"]][:3] == ["copy"] * 3
    after = roundtrip(two_streams(), SetStreamFields("s2", kind="blocking", priority=3))
    assert after["streams"][1] == {"name": "s2", "kind": "blocking", "priority": 3}
    after = roundtrip(two_streams(), ReorderStreams(["s2", "s1"]))
    assert [s["name"] for s in after["streams"]] == ["s2", "s1"]
    p = two_streams()
    after = roundtrip(p, move_stream(p, "s2", -1))
    assert [s["name"] for s in after["streams"]] == ["s2", "s1"]
    after = roundtrip(two_streams(), RemoveStream("s1"))
    assert [s["name"] for s in after["streams"]] == ["s2"]
    assert [o["op"] for o in after["program"]] == ["event_wait", "d2h", "device_sync"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (AddStream(Stream("s1")), "already a stream named 's1'"),
        (AddStream(Stream("default")), "legacy default stream's name"),
        (AddStream(Stream(" ")), "needs a name"),
        (RenameStream("s1", "s2"), "already a stream named 's2'"),
        (RenameStream("default", "x"), "cannot be changed"),
        (RemoveStream("default"), "cannot be removed"),
        (SetStreamFields("s1", kind="legacy_default"), "only the stream named 'default'"),
        (SetStreamFields("s1", kind="fast"), "stream kind must be one of"),
        (ReorderStreams(["s1"]), "every declared stream once"),
    ],
)
def test_stream_edits_refuse_with_a_reason(edit: Edit, message: str) -> None:
    p = two_streams()
    before = p.to_dict()
    with pytest.raises(EditError, match=message):
        edit.apply(p)
    assert p.to_dict() == before


def test_stream_priority_edits_merge() -> None:
    p = two_streams()
    a = SetStreamFields("s1", priority=-1)
    a.apply(p)
    b = SetStreamFields("s1", priority=-2)
    b.apply(p)
    assert a.merge(b) and p.streams[0].priority == -2
    a.revert(p)
    assert p.streams[0].priority == 0


def test_new_op_defaults() -> None:
    p = two_streams()
    h2d = new_op("h2d", p, "s1")
    assert (h2d.bytes, h2d.host_memory, h2d.is_async, h2d.stream) == (
        64 * MIB,
        "pinned",
        True,
        "s1",
    )
    k = new_op("kernel", p, "default")
    assert (k.blocks, k.threads, k.duration_us, k.stream, k.label) == (1024, 256, 100.0, None, "K1")
    assert new_op("event_record", p).event == "e1"
    assert new_op("event_wait", p, "s2").event == "e0"
    assert new_op("event_wait", Pipeline()).event == "e0"
    for kind in ("d2h", "d2d", "memset", "event_sync", "stream_sync", "device_sync", "host",
                 "host_func", "malloc", "free"):  # fmt: skip
        q = two_streams()
        InsertOps(len(q.program), [new_op(kind, q, "s2")]).apply(q)


# -- random edit sequences then undo-all ----------------------------------------------------
KINDS = ["h2d", "d2h", "kernel", "event_record", "event_wait", "device_sync", "host", "memset"]


def _make_edit(p: Pipeline, draw: st.DataObject) -> Edit:
    choice = draw.draw(st.integers(0, 8))
    uids = [op.uid for op in p.program]
    streams = [s.name for s in p.all_streams]
    declared = [s.name for s in p.streams]
    some_uids = st.lists(st.sampled_from(uids), min_size=1, max_size=3, unique=True)
    if choice == 0 or not uids:
        stream = draw.draw(st.sampled_from(streams))
        index = draw.draw(st.integers(0, len(p.program)))
        return InsertOps(index, [new_op(draw.draw(st.sampled_from(KINDS)), p, stream, index)])
    if choice == 1:
        return RemoveOps(draw.draw(some_uids))
    if choice == 2:
        chosen = draw.draw(some_uids)
        index = draw.draw(st.integers(0, len(p.program) - len(chosen) + 1))  # may be refused
        return MoveOps(chosen, index, draw.draw(st.none() | st.sampled_from(streams)))
    if choice == 3:
        field = draw.draw(st.sampled_from(["bytes", "threads", "duration_us", "op", "stream"]))
        value = {
            "bytes": st.integers(-1, 10**9),
            "threads": st.integers(0, 2048),
            "duration_us": st.floats(-1, 1e4),
            "op": st.sampled_from(KINDS),
            "stream": st.sampled_from([*streams, "ghost"]),
        }[field]
        return SetOpFields(draw.draw(st.sampled_from(uids)), {field: draw.draw(value)})
    if choice == 4:
        return AddStream(Stream(draw.draw(st.sampled_from(["s1", "s2", "s3", "s4"]))))
    if choice == 5:
        return RemoveStream(draw.draw(st.sampled_from(streams)))
    if choice == 6:
        return RenameStream(
            draw.draw(st.sampled_from(streams)), draw.draw(st.sampled_from(["x", "y", "s2"]))
        )
    if choice == 7:
        kind = draw.draw(st.sampled_from(["blocking", "non_blocking", "legacy_default"]))
        return SetStreamFields(
            draw.draw(st.sampled_from(streams)), kind=kind, priority=draw.draw(st.integers(-3, 3))
        )
    return ReorderStreams(draw.draw(st.permutations(declared)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_edit_sequences_undo_to_the_original(data: st.DataObject) -> None:
    p = two_streams()
    original = p.to_dict()
    applied: list[tuple[Edit, dict]] = []
    for _ in range(data.draw(st.integers(1, 12))):
        before = p.to_dict()
        edit = _make_edit(p, data)
        try:
            edit.apply(p)
        except EditError:
            assert p.to_dict() == before  # a refused edit changes nothing
            continue
        assert validate(p) == []
        applied.append((edit, before))
    for edit, before in reversed(applied):
        edit.revert(p)
        assert p.to_dict() == before
    assert p.to_dict() == original
